package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// ScanAPI is the part of the DynamoDB client a Bootstrap scans with.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Bootstrap starts a new consumer on a table that already has data, which
// neither of the event source mapping's starting positions does: from
// TRIM_HORIZON it sees only the last 24 hours, from LATEST nothing before
// it started. Run takes the stream's position (every shard read to its
// end), then scans the table (a parallel Scan, with progress) and hands
// every item to the handler as an INSERT record of its image, then follows
// the stream from the position taken through a Gate — the ordering rule
// per item that makes an item changed during the scan end in its latest
// state with no change applied twice — until it has passed where the
// stream was when the scan ended, and leaves the Runner's checkpoints
// there. Run the Runner as usual afterwards: it goes on from them.
//
// The table's stream must have NEW_AND_OLD_IMAGES (the Gate compares old
// images). While Run runs, the Gate sees every record first, then the
// consumer's Filter and Skip; shards without a checkpoint are read from
// TRIM_HORIZON, and no record expires (MaxRecordAge): Run changes the
// Runner's own copy of its Config for that, never the Config you gave it.
// Run the Runner of the consumer nowhere
// else meanwhile (Run writes its checkpoints before it takes its lease).
//
// Every item the table holds reaches the handler as an INSERT record of
// its image, whatever happened to it before: a consumer with effects per
// change (a domain event, a webhook, an e-mail) would make one for every
// existing item. Derive state from the scan's records, and keep effects
// off them with IsSnapshot (see its example).
//
// If Run fails or stops before it returns (a crash, ctx), do not start the
// consumer from the checkpoints it left: run it again. It takes a new
// position and scans again, handing every item over anew (its eventID is
// "bootstrap:" and a hash of its key and image, the same for the same
// image): a consumer that sets values from images takes that in its
// stride; one that adds differences (a total) must start its state over
// first. A scan longer than 20 hours fails (the stream keeps 24).
//
// What the rule gives: every item ends in its latest state, and the
// differences a consumer adds sum right. An item whose changes the scan
// already held may still have some of them handed over again when they
// lead back to the image the scan saw (A→B→A; deleted and created again
// before the scan read it): their sum is nothing, but a consumer with
// effects per change (a notification) makes them again. The Gate keeps one
// key and hash per item scanned, in memory.
type Bootstrap struct {
	// Runner is the consumer: its Config (StreamARN, Consumer, Filter,
	// Skip, BatchSize, MaxRetries), API, Checkpoints (where the position
	// is left) and DeadLetters. It must not be running.
	Runner *Runner
	DB     ScanAPI
	Table  string
	// Segments is the number of parallel Scan segments (default 4).
	Segments int
	// PageSize bounds the items per Scan page (0: DynamoDB's 1 MB pages).
	PageSize int32
	// Progress, if set, is told the items scanned so far after every
	// page; Run also logs them every 5 seconds.
	Progress func(scanned int64)
}

// BootstrapStats say what Run did.
type BootstrapStats struct {
	// Scanned counts the items read, Handed those handed to the handler
	// (the rest the consumer's Filter and Skip kept from it).
	Scanned, Handed int64
	// Held counts stream records the Gate held back: changes the scan's
	// images already held.
	Held int64
	// Shards is the position taken, by shard (a sequence number, "" for an
	// empty shard, or SHARD_END for a closed one).
	Shards map[string]string
}

// Run bootstraps the consumer h: see Bootstrap.
func (b *Bootstrap) Run(ctx context.Context, h Handler) (BootstrapStats, error) {
	var st BootstrapStats
	r := b.Runner
	if r == nil || b.DB == nil || b.Table == "" || h == nil {
		return st, errors.New("stream: Bootstrap needs a Runner, DB, Table and a handler")
	}
	if err := r.setUp(nil); err != nil {
		return st, err
	}
	if r.cfg.TumblingWindow > 0 {
		return st, errors.New("stream: Bootstrap does not start windowed consumers")
	}
	log := r.logger.With("consumer", r.cfg.Consumer, "bootstrap", b.Table)
	keys, view, err := keyNames(ctx, r.API, r.cfg.StreamARN)
	if err != nil {
		return st, err
	}
	if view != types.StreamViewTypeNewAndOldImages {
		return st, fmt.Errorf("stream: Bootstrap needs the stream's old images (NEW_AND_OLD_IMAGES), the table's stream has %s", view)
	}
	// 1. the position: every shard to its end, before the scan
	taken := time.Now()
	if st.Shards, err = positions(ctx, r.API, r.cfg.StreamARN, nil); err != nil {
		return st, err
	}
	log.Info("bootstrap: stream position taken; scanning the table", "shards", len(st.Shards))
	// 2. the scan
	gate := NewGate()
	if err := b.scan(ctx, log, h, keys, gate, &st); err != nil {
		return st, err
	}
	if took := time.Since(taken); took > maxBootstrapScan {
		return st, fmt.Errorf("stream: bootstrap: the scan took %s, and the stream keeps records 24 hours: the position may be gone; run it again with more Segments", took.Round(time.Minute))
	}
	// 3. where the stream is now: the Gate's work ends there (after a
	// moment, for the writes made during the scan to reach the stream)
	select {
	case <-ctx.Done():
		return st, ctx.Err()
	case <-time.After(streamSettle):
	}
	until, err := positions(ctx, r.API, r.cfg.StreamARN, st.Shards)
	if err != nil {
		return st, err
	}
	for shard, seq := range st.Shards {
		if seq == "" {
			continue // an empty shard: its records (all after the position) from TRIM_HORIZON
		}
		if err := r.Checkpoints.Put(ctx, r.cfg.Consumer, shard, seq); err != nil {
			return st, fmt.Errorf("stream: bootstrap: checkpoint %s: %w", shard, err)
		}
	}
	log.Info("bootstrap: scan done; following the stream from the position taken", "scanned", st.Scanned, "handed", st.Handed)
	// 4. the stream from the position, through the Gate, up to there: the
	// Gate sees every record (the consumer's filter and loop guard come
	// after it, so a record they drop still tells the Gate where its item
	// is), every shard without a checkpoint is read from its start, and no
	// record expires meanwhile
	cfg := r.cfg
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- r.run(rctx, gate.Handler(Filter(cfg.Filter, Skip(cfg.Skip, h))), nil, func(c *Config) {
			c.Filter, c.Skip, c.StartingPosition, c.MaxRecordAge = nil, SkipNone, TrimHorizon, 0
		})
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		caught, err := b.reached(ctx, cfg.Consumer, until)
		if err == nil && caught {
			break
		}
		select {
		case err := <-done:
			stop()
			if err == nil {
				err = errors.New("it returned")
			}
			return st, fmt.Errorf("stream: bootstrap: the runner stopped before the stream reached the scan's end: %w", err)
		case <-ctx.Done():
			stop()
			<-done
			return st, ctx.Err()
		case <-tick.C:
		}
	}
	stop()
	if err := <-done; err != nil {
		return st, err
	}
	st.Held = gate.Held()
	log.Info("bootstrap done: the consumer follows the stream from here", "scanned", st.Scanned, "handed", st.Handed, "held", st.Held)
	return st, nil
}

// reached reports whether consumer's checkpoints have passed until.
func (b *Bootstrap) reached(ctx context.Context, consumer string, until map[string]string) (bool, error) {
	for shard, seq := range until {
		if seq == "" {
			continue
		}
		cp, err := b.Runner.Checkpoints.Get(ctx, consumer, shard)
		if err != nil {
			return false, err
		}
		if p := parsePosition(cp); !p.end && (p.seq == "" || CompareSequenceNumbers(p.seq, seq) < 0) {
			return false, nil
		}
	}
	return true, nil
}

// scan reads the table in parallel segments and hands its items to h as
// INSERT records, in batches, with the Runner's retries and dead letters.
func (b *Bootstrap) scan(ctx context.Context, log *slog.Logger, h Handler, keys []string, gate *Gate, st *BootstrapStats) error {
	r := b.Runner
	segments := max(b.Segments, 1)
	if b.Segments == 0 {
		segments = 4
	}
	var scanned, handed atomic.Int64
	stopLog := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopLog:
				return
			case <-t.C:
				log.Info("bootstrap: scanning", "scanned", scanned.Load())
			}
		}
	}()
	defer close(stopLog)
	ctx, cancel := context.WithCancelCause(ctx) // one segment's failure stops the others
	defer cancel(nil)
	var wg sync.WaitGroup
	errs := make([]error, segments)
	for seg := range segments {
		wg.Go(func() {
			in := &dynamodb.ScanInput{TableName: aws.String(b.Table), ConsistentRead: aws.Bool(true),
				Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(int32(segments))}
			if b.PageSize > 0 {
				in.Limit = aws.Int32(b.PageSize)
			}
			p := dynamodb.NewScanPaginator(b.DB, in)
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					errs[seg] = fmt.Errorf("stream: bootstrap: scan %s: %w", b.Table, err)
					cancel(errs[seg])
					return
				}
				var batch []events.DynamoDBEventRecord
				for _, item := range out.Items {
					rec, err := snapshotRecord(item, keys, r.cfg.StreamARN)
					if err != nil {
						errs[seg] = err
						cancel(err)
						return
					}
					gate.Saw(rec.Change.Keys, rec.Change.NewImage)
					if r.cfg.Filter.Match(rec) && !r.cfg.Skip(rec) {
						batch = append(batch, rec)
					}
				}
				n := scanned.Add(int64(len(out.Items)))
				for len(batch) > 0 {
					k := min(len(batch), r.cfg.BatchSize)
					if err := b.handOver(ctx, h, batch[:k]); err != nil {
						errs[seg] = err
						cancel(err)
						return
					}
					handed.Add(int64(k))
					batch = batch[k:]
				}
				if b.Progress != nil {
					b.Progress(n)
				}
			}
		})
	}
	wg.Wait()
	st.Scanned, st.Handed = scanned.Load(), handed.Load()
	return errors.Join(errs...)
}

// handOver hands a batch of the scan's records to h as the Runner would:
// retries, bisection and dead letters by the Runner's Policy.
func (b *Bootstrap) handOver(ctx context.Context, h Handler, recs []events.DynamoDBEventRecord) error {
	r := b.Runner
	queue := []pendingBatch{{Pending: Pending{Records: recs}}}
	for len(queue) > 0 {
		p := &queue[0]
		if p.attempts > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(retryWait(r.cfg.RetryBackoff, p.attempts)):
			}
		}
		p.attempts++
		failedAt, err := bootstrapCall(ctx, h, p.Records)
		if failedAt >= 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		_, dead, next := r.cfg.Policy().After(p.Pending, failedAt, true)
		if dead != nil {
			if !r.putDeadLetter(ctx, r.logger, r.newDeadLetter(BootstrapShard, dead, p.attempts, err)) {
				return ctx.Err()
			}
		}
		rest := make([]pendingBatch, len(next))
		for i, n := range next {
			rest[i] = pendingBatch{Pending: n}
		}
		if len(next) == 1 {
			rest[0].attempts = p.attempts
		}
		queue = append(rest, queue[1:]...)
	}
	return nil
}

// bootstrapCall calls h once: -1 on success, else the lowest failed
// record (0 for a failed call) and why.
func bootstrapCall(ctx context.Context, h Handler, recs []events.DynamoDBEventRecord) (int, error) {
	resp, err := safeCall(ctx, h, events.DynamoDBEvent{Records: recs})
	if err != nil {
		return 0, err
	}
	if len(resp.BatchItemFailures) == 0 {
		return -1, nil
	}
	failedAt, err := lowestFailure(recs, resp)
	if err != nil {
		return 0, err
	}
	return failedAt, fmt.Errorf("handler reported %d failed item(s)", len(resp.BatchItemFailures))
}

// keyNames are the table's key attributes and the stream's view type,
// from the stream's description.
func keyNames(ctx context.Context, api API, streamARN string) ([]string, types.StreamViewType, error) {
	out, err := api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
	if err != nil {
		return nil, "", fmt.Errorf("stream: describe %s: %w", streamARN, err)
	}
	var names []string
	for _, k := range out.StreamDescription.KeySchema {
		names = append(names, aws.ToString(k.AttributeName))
	}
	if len(names) == 0 {
		return nil, "", fmt.Errorf("stream: %s has no key schema", streamARN)
	}
	return names, out.StreamDescription.StreamViewType, nil
}

// maxBootstrapScan is the longest scan after which the position taken
// before it is still in the stream (which keeps 24 hours), with a margin.
const maxBootstrapScan = 20 * time.Hour

// streamSettle is how long Bootstrap waits after the scan before it reads
// where the stream is: a write made during the scan reaches the stream a
// moment after it is made.
const streamSettle = 2 * time.Second

// emptyReads is how many empty pages in a row tip takes for a shard's end:
// DynamoDB Streams may answer a page empty, or short, in the middle of one.
const emptyReads = 2

// positions reads every shard of the stream to its end: the last sequence
// number of each ("" for an empty one, SHARD_END for a closed one whose
// records all precede from's position). from, when set, is a position
// taken before: shards are read on from it.
func positions(ctx context.Context, api API, streamARN string, from map[string]string) (map[string]string, error) {
	shards, err := Shards(ctx, api, streamARN)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range shards {
		id := aws.ToString(s.ShardId)
		after, known := from[id]
		if known && after == shardEnd {
			out[id] = shardEnd
			continue
		}
		if from == nil && s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
			out[id] = shardEnd // closed before the position: the scan holds what it had
			continue
		}
		last, err := tip(ctx, api, streamARN, id, after)
		if err != nil {
			return nil, err
		}
		out[id] = last
	}
	return out, nil
}

// tip reads a shard from after (TRIM_HORIZON when "") to its end and
// returns the last sequence number read (after itself when none came).
func tip(ctx context.Context, api API, streamARN, shardID, after string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(streamARN), ShardId: aws.String(shardID), ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	if after != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(after)
	}
	it, err := api.GetShardIterator(ctx, in)
	if err != nil {
		return "", fmt.Errorf("stream: bootstrap: shard iterator for %s: %w", shardID, err)
	}
	last, iter, empty := after, it.ShardIterator, 0
	for iter != nil && empty < emptyReads {
		out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(fullRead)})
		if err != nil {
			return "", fmt.Errorf("stream: bootstrap: read %s: %w", shardID, err)
		}
		if n := len(out.Records); n > 0 {
			last, empty = aws.ToString(out.Records[n-1].Dynamodb.SequenceNumber), 0
		} else {
			empty++ // the end, once it stays empty
		}
		iter = out.NextShardIterator
	}
	return last, nil
}
