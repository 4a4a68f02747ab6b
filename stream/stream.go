package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Handler is a stream consumer: the signature Lambda calls for a DynamoDB
// stream with ReportBatchItemFailures on.
type Handler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// API is the part of the dynamodbstreams client a Runner uses.
type API interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// behindKey is the key MarkBehind sets in a GetRecords answer's metadata.
type behindKey struct{}

// MarkBehind notes in an empty GetRecords answer of an API over another
// service that its shard holds records past it: a Kinesis data stream may
// answer an empty page far from its tip ("It might take multiple calls to
// get to a portion of the shard that contains records", GetRecords, the
// Kinesis Data Streams API Reference), and says so with MillisBehindLatest
// above 0. A Runner reads such a shard again at once (within
// ReadsPerSecond) rather than after PollInterval, as it does after a full
// page. DynamoDB Streams has no such field: its pages are taken as they
// are.
func MarkBehind(out *dynamodbstreams.GetRecordsOutput) {
	out.ResultMetadata.Set(behindKey{}, true)
}

// Behind reports whether MarkBehind marked out.
func Behind(out *dynamodbstreams.GetRecordsOutput) bool {
	v, _ := out.ResultMetadata.Get(behindKey{}).(bool)
	return v
}

// adjacentKey is the key MarkAdjacentParent sets in a DescribeStream
// answer's metadata.
type adjacentKey struct{}

// MarkAdjacentParent notes in a DescribeStream answer of an API over
// another service that shard has a second parent: a Kinesis shard made by
// merging two has a ParentShardId and an AdjacentParentShardId, and "the
// parent shards … must be processed before the child" (the Kinesis Data
// Streams Developer Guide's resharding pages, paraphrased). A Runner then
// reads the child only once both parents it lists are read to their end,
// and Shards lists both before it. DynamoDB Streams' shards have one
// parent.
func MarkAdjacentParent(out *dynamodbstreams.DescribeStreamOutput, shard, parent string) {
	m, _ := out.ResultMetadata.Get(adjacentKey{}).(map[string]string)
	if m == nil {
		m = map[string]string{}
		out.ResultMetadata.Set(adjacentKey{}, m)
	}
	m[shard] = parent
}

// BatchStats describes one handler call, for metrics.
type BatchStats struct {
	Consumer string
	ShardID  string
	Records  int
	Attempt  int
	Failed   bool
	// IteratorAge is the newest record's age when the handler was called.
	IteratorAge time.Duration
	// Duration is how long the handler took.
	Duration time.Duration
}

// Runner polls a table's stream and calls a Handler, as Lambda's event
// source mapping does. Run one Runner per Consumer. Each run goes by its
// own copy of the Config (with its defaults, Config.Settings shows them),
// Logger and Now, taken when it starts: the Runner never writes to them,
// and changing them while it runs has no effect until the next run.
type Runner struct {
	Config
	// API reads the stream (a DynamoDB Streams client). Required.
	API API
	// Checkpoints keeps each shard's position. Required.
	Checkpoints Checkpoints
	// DeadLetters takes the records the Runner gives up on: its on-failure
	// destination. Required: Run returns an error at once without it (a
	// record leaves its shard only through the handler or this sink).
	DeadLetters DeadLetters
	Logger      *slog.Logger
	// OnBatch, if set, is called after every handler call; with a
	// ParallelizationFactor above 1 it is called from several goroutines.
	OnBatch func(BatchStats)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// InvocationID names each handler call, as Lambda's request id does
	// (default a random UUID); a dead letter keeps the last one's.
	InvocationID func() string

	// cfg, logger and clock are what a run goes by: the Config with its
	// defaults (and, under Bootstrap, its changes), Logger and Now or
	// their defaults. setUp makes them from the caller's fields, which the
	// Runner never writes to.
	cfg    Config
	logger *slog.Logger
	clock  func() time.Time

	counters counters
	sink     sinkHealth
	// fineTimes: a record read had a creation time that is not a whole
	// minute (DynamoDB's, to the second; DynamoDB Local's are to the
	// minute). See shardReader.bestCreation.
	fineTimes atomic.Bool
	// windows is the running RunWindows' handler (nil: Run's); run sets
	// it for each run.
	windows WindowHandler
	// partitionKey is the table's partition key attribute, from
	// DescribeStream ("" until known: records are then keyed by item).
	partitionKey atomic.Value

	pause pauseGate
	// shardMu guards the shard runs under way (for Health and Pause) and
	// the stream's description failures. It is taken alone (the lock
	// order: shardRun.mu).
	shardMu              sync.Mutex
	active               map[string]*shardRun
	describeFailingSince time.Time
	describeErr          string
	// owner identifies this Runner in its consumer's lease; standby is
	// set while another holds it (holder).
	owner   Owner
	standby bool
	holder  Lease
}

func (r *Runner) setStandby(on bool, l Lease) {
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	r.standby, r.holder = on, l
}

// Run delivers the stream to h until ctx is done; it returns nil then. A
// handler call under way when ctx ends is let finish, and its checkpoint is
// written. With Checkpoints that are Leases, it first takes the consumer's
// lease, waiting as a standby while another Runner holds it, and returns
// ErrLeaseLost if it loses the lease while running.
func (r *Runner) Run(ctx context.Context, h Handler) error {
	return r.run(ctx, h, nil, nil)
}

// run is Run with h, or RunWindows with windows: the window handler is
// this run's (r.windows, which the shards read), never left for the next.
// adjust, if set, changes this run's copy of the Config (Bootstrap's).
func (r *Runner) run(ctx context.Context, h Handler, windows WindowHandler, adjust func(*Config)) (err error) {
	r.windows = windows
	if err := r.setUp(adjust); err != nil {
		return err
	}
	if r.cfg.TumblingWindow > 0 && r.windows == nil {
		return errors.New("stream: a Runner with TumblingWindow runs a WindowHandler: use RunWindows")
	}
	log := r.logger.With("consumer", r.cfg.Consumer)
	if leases, ok := r.Checkpoints.(Leases); ok && r.cfg.Lease > 0 {
		lctx, release, ok := r.holdLease(ctx, log, leases)
		if !ok {
			return nil // ctx ended while waiting as a standby
		}
		defer release()
		defer func() {
			if err == nil && errors.Is(context.Cause(lctx), ErrLeaseLost) {
				err = ErrLeaseLost
			}
		}()
		ctx = lctx
	}
	var (
		mu      sync.Mutex
		running = map[string]bool{}
		done    = map[string]bool{}
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	for {
		shards, err := r.shards(ctx)
		r.shardMu.Lock()
		if err == nil {
			r.describeFailingSince, r.describeErr = time.Time{}, ""
		} else if r.describeFailingSince.IsZero() {
			r.describeFailingSince = r.clock()
		}
		if err != nil {
			r.describeErr = errText(err)
		}
		r.shardMu.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error("describe stream failed; retrying", "err", err)
		}
		present := make(map[string]bool, len(shards.list))
		for _, s := range shards.list {
			present[aws.ToString(s.ShardId)] = true
		}
		for _, s := range shards.list {
			id := aws.ToString(s.ShardId)
			mu.Lock()
			skip := running[id] || done[id]
			mu.Unlock()
			if skip {
				continue
			}
			cp, err := r.Checkpoints.Get(ctx, r.cfg.Consumer, id)
			if err != nil {
				log.Error("read checkpoint failed", "shard", id, "err", err)
				continue
			}
			pos := parsePosition(cp)
			if pos.end {
				mu.Lock()
				done[id] = true
				mu.Unlock()
				continue
			}
			waiting := false
			for _, parent := range shards.parents(s) {
				if present[parent] {
					mu.Lock()
					waiting = waiting || !done[parent]
					mu.Unlock()
				}
			}
			if waiting {
				continue // the parents' records come first
			}
			mu.Lock()
			running[id] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				finished := r.runShard(ctx, log.With("shard", id), h, id, pos)
				mu.Lock()
				running[id] = false
				done[id] = finished
				mu.Unlock()
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.cfg.ShardRefresh):
		}
	}
}

// RunWindows is Run for a consumer of tumbling windows (Config.
// TumblingWindow), as the event source mapping runs one: each shard's
// records in calls of one window each, the state the window's previous call
// answered with handed to the next, and each window's final call
// (IsFinalInvokeForWindow), with the window's whole state, once the stream
// has passed the window's end by WindowGrace (or the clock has, with
// nothing later coming), and when the shard ends (IsWindowTerminatedEarly
// if before the window's end). Records of two windows interleaved near a
// boundary each go into their own window. State over 1 MB (the shard's
// open windows together) ends a window early, as Lambda's does. The state
// is kept with the checkpoint, so a restart goes on with the state it had
// (TableCheckpoints keeps state over one item's size in items of its
// own); a call that fails is retried with the state it had (Windows says
// how). A final call can come again, after a crash, so write the aggregate
// idempotently, keyed by shard and window. A record that reaches the
// stream after its window's final call starts the window again with fresh
// state, as on Lambda, and its final call has that part only: a warning
// is logged. A final call that fails holds the records after it and is
// made again first; after MaxRetries it is given up on as the window's: a
// DeadLetter with the window, its state and its records' range.
func (r *Runner) RunWindows(ctx context.Context, h WindowHandler) error {
	if h == nil {
		return errors.New("stream: RunWindows needs a WindowHandler")
	}
	if r.Config.TumblingWindow <= 0 {
		return errors.New("stream: RunWindows needs Config.TumblingWindow (TumblingWindowInSeconds)")
	}
	return r.run(ctx, nil, h, nil)
}

// setUp makes the run's settings (r.cfg, r.logger, r.clock) from the
// caller's Config, changed by adjust if set, with the defaults filled in
// and checked, under shardMu: Health, Pause and Resume may read them
// meanwhile. The caller's fields are read, never written.
func (r *Runner) setUp(adjust func(*Config)) error {
	c := r.Config
	if adjust != nil {
		adjust(&c)
	}
	if err := c.withDefaults(); err != nil {
		return err
	}
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	r.cfg = c
	if r.API == nil || r.Checkpoints == nil || r.DeadLetters == nil {
		var missing []string
		if r.API == nil {
			missing = append(missing, "API")
		}
		if r.Checkpoints == nil {
			missing = append(missing, "Checkpoints")
		}
		if r.DeadLetters == nil {
			missing = append(missing, "DeadLetters (its on-failure destination)")
		}
		return fmt.Errorf("stream: Runner needs API, Checkpoints and DeadLetters; %s not set: Run does not start", strings.Join(missing, ", "))
	}
	r.logger, r.clock = r.Logger, r.Now
	if r.logger == nil {
		r.logger = slog.Default()
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.owner.ID == "" {
		r.owner = newOwner()
	}
	return nil
}

// keyFunc keys records by the table's partition key once it is known.
func (r *Runner) keyFunc() KeyFunc {
	if pk, _ := r.partitionKey.Load().(string); pk != "" {
		return PartitionKey(pk)
	}
	return ItemKey
}

// iterator returns an iterator after the sequence number after or, when
// after is "", at from (TRIM_HORIZON or LATEST).
func (r *Runner) iterator(ctx context.Context, shardID, after string, from types.ShardIteratorType) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.cfg.StreamARN), ShardId: aws.String(shardID)}
	if after != "" {
		in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = aws.String(after)
	} else {
		in.ShardIteratorType = from
	}
	out, err := r.API.GetShardIterator(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("stream: shard iterator for %s: %w", shardID, err)
	}
	return out.ShardIterator, nil
}

func (r *Runner) sleep(ctx context.Context, backoff *time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(*backoff):
	}
	*backoff = min(*backoff*2, maxRetryWait)
}
