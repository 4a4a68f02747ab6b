package stream

// The reader of one shard: runShard's loop, one GetRecords call at a
// time (renew the iterator, space the call within ReadsPerSecond, read,
// take the records in, advance the position, hand the gathered records to
// the lanes when the batch window is due, pace the next read); and the
// retryer that hands a call refused for its rate back to it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
)

// fullRead is GetRecords' largest page: a read that fills it means more
// records are waiting.
const fullRead = 1000

// runShard reads one shard until it ends (true) or ctx is done (false).
func (r *Runner) runShard(ctx context.Context, log *slog.Logger, h Handler, shardID string, from position) bool {
	sr := r.newShardRun(ctx, log, h, shardID, from)
	rd := &shardReader{r: r, sr: sr, log: log, shardID: shardID,
		lastRead: sr.done, from: types.ShardIteratorType(r.cfg.StartingPosition), backoff: r.cfg.RetryBackoff}
	for ctx.Err() == nil && !rd.ended {
		if !r.pause.wait(ctx) { // paused: read nothing
			break
		}
		if rd.iter == nil {
			if step := rd.renewIterator(ctx); step == readAgain {
				continue
			} else if step == readStop {
				break
			}
		}
		if !rd.spaceRead(ctx) {
			break
		}
		readStart := r.clock()
		out, step := rd.getRecords(ctx)
		if step == readAgain {
			continue
		} else if step == readStop {
			break
		}
		if r.pause.isPaused() {
			// Paused while the read was under way: take nothing in. The
			// same iterator reads these records again on resume (or, if it
			// has expired by then, one renewed after lastRead).
			continue
		}
		took := rd.take(ctx, out.Records)
		rd.advance(out, readStart) // past the read, even when take stopped
		if !took {
			break
		}
		if !rd.flushIfDue() {
			break
		}
		rd.pace(ctx, len(out.Records))
	}
	if rd.ended && len(rd.buf) > 0 { // records read before the iterator was renewed
		rd.flush()
	}
	allDone := sr.close()
	if ctx.Err() != nil || !rd.ended || !allDone {
		return false
	}
	if sr.win != nil && !sr.closeWindow() {
		return false
	}
	if err := r.Checkpoints.Put(context.WithoutCancel(ctx), r.cfg.Consumer, shardID, position{end: true}.String()); err != nil {
		log.Error("checkpoint shard end failed", "err", err)
	}
	log.Info("shard drained")
	return true
}

// shardReader is runShard's reading of one shard: where it is, and the
// records gathered for the batch window. Its steps are runShard's loop,
// one read at a time: renewIterator, getRecords, take, advance,
// flushIfDue, pace.
type shardReader struct {
	r       *Runner
	sr      *shardRun
	log     *slog.Logger
	shardID string
	// lastRead is the position of the newest record read; from is where
	// to start while it is "".
	lastRead string
	from     types.ShardIteratorType
	iter     *string
	backoff  time.Duration
	ended    bool // the shard is closed and read to its end
	// behind: the last read was empty short of the shard's tip
	// (MarkBehind).
	behind bool
	// buf is gathered for the batch window; kept counts the records of it
	// the filter keeps, and firstBuffered is when the first of them came.
	buf           []gathered
	kept          int
	firstBuffered time.Time
	// tipReadAt is the start of the last read that reached the shard's end.
	tipReadAt time.Time
	// lastCall is when the last GetRecords call was made (wall clock: it
	// paces real calls).
	lastCall time.Time
}

// spaceRead waits until a GetRecords call keeps the shard's reads within
// ReadsPerSecond: its calls start a tenth more than 1/ReadsPerSecond
// apart, so that calls that reach DynamoDB a little unevenly still keep
// to the rate. False: ctx ended.
func (rd *shardReader) spaceRead(ctx context.Context) bool {
	if n := rd.r.cfg.ReadsPerSecond; n > 0 && !rd.lastCall.IsZero() {
		gap := time.Second / time.Duration(n)
		if wait := gap + gap/10 - time.Since(rd.lastCall); wait > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
			}
		}
	}
	rd.lastCall = time.Now()
	return true
}

// readStep is what runShard's loop does after one of its steps.
type readStep int

const (
	readOn    readStep = iota // go on with the step after
	readAgain                 // read again from the top of the loop
	readStop                  // leave the loop
)

// renewIterator takes a shard iterator at the reader's position. A
// checkpoint older than the stream's retention restarts at TRIM_HORIZON
// (said, as records were lost); a failure is retried after a pause; a
// closed shard with nothing after the position has ended.
func (rd *shardReader) renewIterator(ctx context.Context) readStep {
	r := rd.r
	iter, err := r.iterator(ctx, rd.shardID, rd.lastRead, rd.from)
	if err != nil {
		var trimmed *types.TrimmedDataAccessException
		if errors.As(err, &trimmed) && rd.lastRead != "" {
			rd.log.Error("checkpoint is older than the stream's 24 h retention; records were lost before this consumer read them; resuming at TRIM_HORIZON", "checkpoint", rd.lastRead)
			rd.lastRead, rd.from = "", types.ShardIteratorTypeTrimHorizon
			return readAgain
		}
		rd.log.Error("get shard iterator failed; retrying", "err", err)
		rd.sr.noteReadError(err, r.now())
		r.sleep(ctx, &rd.backoff)
		return readAgain
	}
	if iter == nil { // a closed shard with nothing after the position
		rd.ended = true
		return readStop
	}
	rd.iter = iter
	return readOn
}

// getRecords reads the shard once. An expired iterator is renewed; one
// that points before the oldest record is renewed after lastRead (or at
// TRIM_HORIZON when nothing was read); any other failure is retried after
// a pause. A success resets the pause.
func (rd *shardReader) getRecords(ctx context.Context) (*dynamodbstreams.GetRecordsOutput, readStep) {
	r := rd.r
	out, err := r.API.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: rd.iter, Limit: aws.Int32(fullRead)}, noRetryOfLimits)
	if err == nil {
		rd.backoff = r.cfg.RetryBackoff
		r.counters.polls.Add(1)
		return out, readOn
	}
	var limited *types.LimitExceededException
	if errors.As(err, &limited) {
		// The shard's reads are over their rate: another call within the
		// second would be refused too (the SDK's quick retries were), so
		// the reader waits it out. Not an error: said at Info.
		rd.log.Info("get records refused for its rate; reading again in a second", "err", err)
		select {
		case <-ctx.Done():
			return nil, readStop
		case <-time.After(time.Second):
		}
		return nil, readAgain
	}
	var expired *types.ExpiredIteratorException
	if errors.As(err, &expired) {
		rd.log.Info("shard iterator expired; renewing", "after", rd.lastRead)
		rd.iter = nil
		return nil, readAgain
	}
	var trimmed *types.TrimmedDataAccessException
	if errors.As(err, &trimmed) {
		// The iterator points before the oldest record the shard still
		// has; retrying it can never succeed. Renew it: after lastRead
		// (GetShardIterator reports a loss if that is trimmed too), or,
		// when nothing was read yet, at TRIM_HORIZON, which is not older
		// than where a TRIM_HORIZON or LATEST iterator pointed. DynamoDB
		// Local does this to an iterator taken on an empty shard once
		// another table's write has used the sequence number it points at.
		if rd.lastRead == "" {
			// nothing read, nothing lost: a fresh DynamoDB Local's first
			// write does this, on every run
			rd.log.Info("shard iterator taken on an empty shard is behind its first record (harmless: nothing was read yet); renewing at TRIM_HORIZON", "err", err)
			rd.from = types.ShardIteratorTypeTrimHorizon
		} else {
			rd.log.Warn("shard iterator points before the oldest record; renewing", "after", rd.lastRead, "err", err)
		}
		rd.iter = nil
		r.sleep(ctx, &rd.backoff)
		return nil, readAgain
	}
	if ctx.Err() != nil {
		return nil, readStop
	}
	rd.log.Error("get records failed; retrying", "err", err)
	rd.sr.noteReadError(err, r.now())
	r.sleep(ctx, &rd.backoff)
	return nil, readAgain
}

// take converts a read's records and gathers them for the batch window. A
// record that cannot be converted cannot be handled: it is dead-lettered
// (as it came) rather than dropped, after the records before it went to
// their lanes, so the shard's order holds. False: the shard run is
// closing.
func (rd *shardReader) take(ctx context.Context, recs []types.Record) bool {
	r := rd.r
	r.counters.recordsRead.Add(int64(len(recs)))
	if !r.fineTimes.Load() {
		for _, rec := range recs {
			if t := aws.ToTime(rec.Dynamodb.ApproximateCreationDateTime); !t.IsZero() && !t.Equal(t.Truncate(time.Minute)) {
				r.fineTimes.Store(true) // DynamoDB's creation times, to the second
				break
			}
		}
	}
	for _, rec := range recs {
		lr, err := attr.LambdaRecord(rec, r.cfg.StreamARN)
		if err != nil {
			if !rd.flush() {
				return false
			}
			seq := aws.ToString(rec.Dynamodb.SequenceNumber)
			if !r.deadLetter(ctx, rd.log, rd.shardID, nil, 0, fmt.Errorf("convert record %s: %w", seq, err), attr.RawRecord(rec)) {
				return false
			}
			rd.sr.noteDeadLettered(1)
			rd.sr.addFinished(seq)
			continue
		}
		// Lambda filters as it builds a batch: BatchSize and the batching
		// window count the records the filter keeps.
		keep := r.cfg.Filter.Match(lr)
		if keep {
			if rd.kept == 0 {
				rd.firstBuffered = r.clock()
			}
			rd.kept++
		}
		rd.buf = append(rd.buf, gathered{rec: lr, created: rd.bestCreation(lr.Change.ApproximateCreationDateTime.Time), kept: keep})
	}
	return true
}

// bestCreation is when a record whose ApproximateCreationDateTime is approx
// was created, as well as the reader knows it (tracked.created). DynamoDB
// rounds approx down to the second, and that is what Lambda counts a
// record's age from: the Runner takes it as it is. DynamoDB Local rounds
// it down to the minute, which alone would make a record read at once up
// to 60 s old; while every creation time read is a whole minute, the
// Runner takes the later of approx and the start of the last read that
// reached the shard's end without the record, but never more than the
// minute approx stands for: a read cut short by GetRecords' 1 MB looks
// like the shard's end, and must not make a backlog look new.
func (rd *shardReader) bestCreation(approx time.Time) time.Time {
	if rd.r.fineTimes.Load() || approx.IsZero() {
		return approx
	}
	limit := approx.Add(time.Minute - time.Nanosecond)
	if rd.tipReadAt.Before(limit) {
		limit = rd.tipReadAt
	}
	return later(approx, limit)
}

// advance moves the reader past a read: its position, the next iterator,
// whether the shard has ended, and when the shard's end was last reached.
func (rd *shardReader) advance(out *dynamodbstreams.GetRecordsOutput, readStart time.Time) {
	rd.behind = len(out.Records) == 0 && Behind(out)
	if len(out.Records) < fullRead && !rd.behind {
		// A read that returned fewer records than asked for reached the
		// shard's end (always so on DynamoDB Local; as a rule on
		// DynamoDB): what comes next was created after it started.
		rd.tipReadAt = readStart
	}
	if len(out.Records) > 0 {
		rd.lastRead = aws.ToString(out.Records[len(out.Records)-1].Dynamodb.SequenceNumber)
	}
	rd.sr.noteRead(rd.lastRead, len(out.Records))
	rd.iter = out.NextShardIterator
	rd.ended = rd.iter == nil
}

// flushIfDue hands what was gathered to the lanes when the shard ended,
// the batch is full or the batch window has passed (counting the records
// the filter keeps), or when none gathered is kept, or the shard's limit
// is gathered. False: the shard run is closing.
func (rd *shardReader) flushIfDue() bool {
	r := rd.r
	if len(rd.buf) > 0 && (rd.ended || rd.kept == 0 || rd.kept >= r.cfg.BatchSize || len(rd.buf) >= rd.sr.limit ||
		r.clock().Sub(rd.firstBuffered) >= r.cfg.BatchWindow) {
		return rd.flush()
	}
	return true
}

// flush hands what was gathered to the lanes. False: the shard run is
// closing.
func (rd *shardReader) flush() bool {
	if len(rd.buf) == 0 {
		return true
	}
	ok := rd.sr.add(rd.buf)
	rd.buf, rd.kept = nil, 0
	return ok
}

// pace waits before the next read. Read again at once after a full read
// (a backlog) or an empty one short of the tip (MarkBehind: a backlog
// too); after an empty one, wait for the poll interval; after one
// in between, wait until what was read is finished, a poll interval at
// most: reading ahead must not turn into reading the shard in a loop while
// the handler works, and a consumer that keeps up reads again as soon as
// it is done, as it did one batch at a time.
func (rd *shardReader) pace(ctx context.Context, read int) {
	r := rd.r
	switch {
	case rd.ended || read >= fullRead || rd.behind:
	case len(rd.buf) > 0 || read == 0:
		if len(rd.buf) == 0 {
			rd.sr.windowDue()
		}
		wait := r.cfg.PollInterval
		if len(rd.buf) > 0 {
			wait = min(wait, r.cfg.BatchWindow-r.clock().Sub(rd.firstBuffered))
		}
		select {
		case <-ctx.Done():
		case <-time.After(max(wait, time.Millisecond)):
		}
	default:
		rd.sr.waitFinished(r.cfg.PollInterval)
	}
}

// noRetryOfLimits has the SDK hand a GetRecords call refused for its rate
// (LimitExceededException) back at once rather than retry it within the
// same second, where it is refused again; the reader waits instead.
func noRetryOfLimits(o *dynamodbstreams.Options) {
	if o.Retryer != nil {
		o.Retryer = limitsNotRetried{o.Retryer}
	}
}

// limitsNotRetried is a retryer that does not retry LimitExceededException.
type limitsNotRetried struct{ aws.Retryer }

// GetAttemptToken passes the wrapped retryer's own on (aws.RetryerV2:
// the adaptive mode's client-side rate limit is kept).
func (r limitsNotRetried) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.Retryer.GetInitialToken(), nil
}

func (r limitsNotRetried) IsErrorRetryable(err error) bool {
	var limited *types.LimitExceededException
	return !errors.As(err, &limited) && r.Retryer.IsErrorRetryable(err)
}
