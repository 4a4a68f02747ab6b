package stream

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/stream/filter"
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

// Starting positions for a shard without a checkpoint.
const (
	TrimHorizon = "TRIM_HORIZON"
	Latest      = "LATEST"
)

// Forever is a retry limit without a limit (MaxRetries), as Lambda's
// MaximumRetryAttempts -1: a poison record blocks its shard.
const Forever = -1

// Defaults of the settings that the event source mapping has too (the
// infra template's parameters take the same defaults; a test checks).
const (
	DefaultBatchSize             = 100
	DefaultParallelizationFactor = 1
	DefaultBatchWindow           = 0
	// DefaultMaxRetries is what an unset MaxRetries (nil) selects, and the
	// programs' STREAM_MAX_RETRIES and the template's MaximumRetryAttempts
	// default. Lambda's own default is Forever; this project's is finite so
	// that a poison record is dead-lettered instead of stopping its shard.
	DefaultMaxRetries = 3
	// MaxRetriesLimit is the largest retry limit, as Lambda's.
	MaxRetriesLimit = 10000
)

// DefaultPollInterval is PollInterval's default (and the programs'
// STREAM_POLL_INTERVAL's): ten reads a second per idle shard. Lambda polls
// a DynamoDB stream four times a second (250 ms); the Runner polls faster
// because the wait after an empty read is the floor of its lag, and each
// consumer in a chain adds it (the notifier reads what the projector
// wrote; docs/performance.md shows what 250 ms costs). Against
// DynamoDB, raise it if GetRecords is throttled.
const DefaultPollInterval = 100 * time.Millisecond

// DefaultReadsPerSecond is ReadsPerSecond's default: five GetRecords calls
// a second per shard. AWS documents no rate for DynamoDB Streams' GetRecords,
// only that it may answer LimitExceededException (API_streams_GetRecords;
// earlier editions of the page: "Your request rate is too high"); five a
// second is
// Kinesis Data Streams' GetRecords limit per shard, Lambda polls a
// DynamoDB stream's shard four times a second, and the ddblocal Limiter
// refuses a reader's sixth call in a second. A read returns up to 1,000
// records, so five a second outruns any shard (a shard takes about 1,000
// writes a second).
const DefaultReadsPerSecond = 5

// DefaultCheckpointInterval is CheckpointInterval's default: a shard's
// checkpoint is written at most once a second while it is read.
const DefaultCheckpointInterval = time.Second

// Retries is a retry limit for Config.MaxRetries and
// replay.OnFailure.MaxRetries, spelled as the event source mapping's
// MaximumRetryAttempts (and the programs' STREAM_MAX_RETRIES): Forever
// (-1), 0 for none, or n up to 10000.
func Retries(n int) *int { return &n }

// RetryLimit is the retry limit a MaxRetries setting stands for: nil
// DefaultMaxRetries, otherwise the setting, Forever (-1), 0 or up to
// MaxRetriesLimit. The Runner and the replay kit read the setting with it.
func RetryLimit(maxRetries *int) (int, error) {
	switch {
	case maxRetries == nil:
		return DefaultMaxRetries, nil
	case *maxRetries < Forever || *maxRetries > MaxRetriesLimit:
		return 0, fmt.Errorf("stream: MaxRetries %d: want -1 (Forever), 0 (none) or up to %d, as Lambda's MaximumRetryAttempts", *maxRetries, MaxRetriesLimit)
	}
	return *maxRetries, nil
}

// Config holds a Runner's settings; zero values take the defaults named.
type Config struct {
	StreamARN string
	// Consumer namespaces the checkpoints (e.g. "projector"). Required.
	Consumer string
	// BatchSize is the most records per handler call (default 100). As
	// Lambda filters while it builds a batch, it counts the records Filter
	// keeps: filtered-out records neither fill a batch nor end the window.
	BatchSize int
	// BatchWindow is how long to gather records before calling the handler
	// (default 0: call as soon as records are read), from the first record
	// Filter keeps.
	BatchWindow time.Duration
	// PollInterval is the pause after an empty read of an open shard
	// (default DefaultPollInterval, 100 ms; Lambda waits 250 ms).
	PollInterval time.Duration
	// ReadsPerSecond is the most GetRecords calls a second the Runner
	// makes on one shard, whatever it read (default DefaultReadsPerSecond,
	// 5; negative: no limit). With PollInterval below its spacing, an idle
	// shard is read at this rate.
	ReadsPerSecond int
	// MaxRetries is how often a failing batch is retried before its records
	// are dead-lettered, spelled as the event source mapping's
	// MaximumRetryAttempts: Retries(0) dead-letters on the first failure
	// (of the failing record alone, once bisection has split the batch down
	// to it), Retries(n) after n retries, Retries(Forever) never gives up
	// (Lambda's default: a poison record blocks its shard). nil:
	// DefaultMaxRetries.
	MaxRetries *int
	// MaxRecordAge is the event source mapping's
	// MaximumRecordAgeInSeconds: a record older than that when its batch is
	// about to be handed over (by its creation time, as IteratorAge counts
	// it) is not handed to the handler but dead-lettered, with Condition
	// RecordAgeExceeded, as the mapping sends it to its on-failure
	// destination; counted in Stats.Expired. 0 (the default, Lambda's -1):
	// never; otherwise 60 s to 7 days, as Lambda takes.
	MaxRecordAge time.Duration
	// TumblingWindow is the event source mapping's TumblingWindowInSeconds
	// (whole seconds, up to 900; 0: none): run the consumer with
	// RunWindows. ParallelizationFactor must then be 1, as Lambda requires.
	TumblingWindow time.Duration
	// NoBisect stops a failing batch from being split in two and its
	// halves retried, down to the failing record. Bisection is on by
	// default, as this project's template and programs set
	// BisectBatchOnFunctionError (Lambda's own default is off): without it
	// the records after a poison record in its batch are dead-lettered
	// with it.
	NoBisect bool
	// NoReportBatchItemFailures is the mapping's FunctionResponseTypes
	// without ReportBatchItemFailures: the handler's BatchItemFailures are
	// not processed, as Lambda does not process them then — a call that
	// returns without an error succeeded whole, and the records it reported
	// failed are not retried (the Runner logs a warning saying so).
	// ReportBatchItemFailures is on by default, as this project's template
	// sets it. Handlers that report their own failures this way (Keyed,
	// Fanout, Each) need it on; RunWindows' failed window calls retry the
	// whole batch when it is off, as Lambda retries a failed function.
	NoReportBatchItemFailures bool
	// RetryBackoff is the first pause before a retry; it doubles up to 30 s
	// (default 100 ms).
	RetryBackoff time.Duration
	// StartingPosition for shards without a checkpoint: TrimHorizon (default) or Latest.
	StartingPosition string
	// ShardRefresh is how often the shard list is read again (default 5 s).
	ShardRefresh time.Duration
	// ParallelizationFactor is how many batches of one shard are handled at
	// the same time (1–10, default 1), as the event source mapping's setting
	// of that name. Records are spread over that many lanes by a hash of
	// their partition key, so records of one key always share a lane and
	// are handled in stream order, never at the same time; the checkpoint
	// moves only over records that are all finished, so a crash never skips
	// one. With 1, batches are handled one after another.
	ParallelizationFactor int
	// StuckAfter is how long records may wait with no progress (the
	// checkpoint not moving), or a shard go unread, before Health reports
	// the Runner Stuck (default DefaultStuckAfter, a minute). It only
	// judges; the Runner keeps trying.
	StuckAfter time.Duration
	// CheckpointInterval is the least time between two checkpoint writes
	// of a shard while it is being read (default DefaultCheckpointInterval):
	// the position moves with every finished batch, but is written at most
	// this often, as the Kinesis Client Library does. A consumer that
	// crashes gets again what it finished within the last interval (at
	// least once, as always). Stopping, pausing and the moment before a
	// retry write it at once.
	CheckpointInterval time.Duration
	// Filter is the event source mapping's FilterCriteria: records that
	// match none of its patterns never reach the handler; they are finished
	// at once — the checkpoint moves past them — and counted
	// (Stats.FilteredOut, Lambda's FilteredOutEventCount). Empty: every
	// record passes. Give it the value the template's FilterCriteria is
	// written from (LoopGuard, for one), so the two cannot drift.
	Filter filter.Criteria
	// Skip says which records the handler never gets: the loop guard (nil:
	// SkipDerived, records of items with derived = true, which is how a
	// consumer marks its own writes; SkipNone hands it every record).
	// Skipped records are finished at once — the checkpoint moves past
	// them — and counted (Stats.Skipped).
	Skip SkipFunc
	// Lease is how long the consumer's lease lasts unless renewed (renewed
	// every third of it; default DefaultLease, 15 s; negative: no lease).
	// With Checkpoints that are also Leases, one Runner per consumer
	// handles the stream: a second one waits as a standby (Health says
	// Standby) and takes over when the first stops, or when its lease
	// expires after a crash (at once for a crashed process on the same
	// host).
	Lease time.Duration
}

func (c *Config) withDefaults() error {
	if c.StreamARN == "" {
		return errors.New("stream: StreamARN is required")
	}
	if c.Consumer == "" {
		return errors.New("stream: Consumer is required (it namespaces the checkpoints)")
	}
	return c.applySettings()
}

// Settings returns c with the defaults applied, or the first setting out
// of range, named by its field ("stream: BatchSize 0 out of range
// 1..10000"). A Runner checks its Config with it; a program that reads the
// settings from its environment calls it to check them once, the same way.
// StreamARN and Consumer are not checked here.
func (c Config) Settings() (Config, error) {
	err := c.applySettings()
	return c, err
}

// applySettings sets the defaults of the settings not set, and checks
// them. It writes only what it changes (a running Runner's settings are
// read concurrently).
func (c *Config) applySettings() error {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		return fmt.Errorf("stream: BatchSize %d out of range 1..10000", c.BatchSize)
	}
	if c.BatchWindow < 0 || c.BatchWindow > 300*time.Second {
		return fmt.Errorf("stream: BatchWindow %s out of range 0..300s", c.BatchWindow)
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.PollInterval < 0 {
		return fmt.Errorf("stream: PollInterval %s is negative", c.PollInterval)
	}
	if c.ReadsPerSecond == 0 {
		c.ReadsPerSecond = DefaultReadsPerSecond
	}
	if _, err := RetryLimit(c.MaxRetries); err != nil {
		return err
	}
	if c.MaxRetries == nil {
		c.MaxRetries = Retries(DefaultMaxRetries)
	}
	if c.MaxRecordAge != 0 && (c.MaxRecordAge < time.Minute || c.MaxRecordAge > 7*24*time.Hour) {
		return fmt.Errorf("stream: MaxRecordAge %s out of range 60s..168h (0: never), as Lambda's MaximumRecordAgeInSeconds", c.MaxRecordAge)
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	switch c.StartingPosition {
	case "":
		c.StartingPosition = TrimHorizon
	case TrimHorizon, Latest:
	default:
		return fmt.Errorf("stream: StartingPosition %q: want %s or %s", c.StartingPosition, TrimHorizon, Latest)
	}
	if c.Skip == nil {
		c.Skip = SkipDerived
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.ShardRefresh == 0 {
		c.ShardRefresh = 5 * time.Second
	}
	if c.ParallelizationFactor == 0 {
		c.ParallelizationFactor = DefaultParallelizationFactor
	}
	if c.ParallelizationFactor < 1 || c.ParallelizationFactor > 10 {
		return fmt.Errorf("stream: ParallelizationFactor %d out of range 1..10", c.ParallelizationFactor)
	}
	if c.TumblingWindow < 0 || c.TumblingWindow > MaxTumblingWindow || c.TumblingWindow%time.Second != 0 {
		return fmt.Errorf("stream: TumblingWindow %s: want whole seconds up to 900s (TumblingWindowInSeconds)", c.TumblingWindow)
	}
	if c.TumblingWindow > 0 && c.ParallelizationFactor != 1 {
		return fmt.Errorf("stream: TumblingWindow with ParallelizationFactor %d: Lambda takes tumbling windows with ParallelizationFactor 1 only", c.ParallelizationFactor)
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = DefaultStuckAfter
	}
	if c.StuckAfter < 0 {
		return fmt.Errorf("stream: StuckAfter %s is negative", c.StuckAfter)
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.CheckpointInterval < 0 {
		return fmt.Errorf("stream: CheckpointInterval %s is negative", c.CheckpointInterval)
	}
	return nil
}

// IteratorAge is Lambda's IteratorAge metric of a batch handed to the
// handler at at: the age of its newest record (by created), how far
// behind the stream's head the consumer reads; never negative, 0 when no
// record has a time. The Runner's created is the best it knows (see
// Stats); ApproximateCreation is the records' own, which DynamoDB rounds
// down to the second (DynamoDB Local to the minute).
func IteratorAge(recs []events.DynamoDBEventRecord, at time.Time, created func(events.DynamoDBEventRecord) time.Time) time.Duration {
	var newest time.Time
	for _, r := range recs {
		if t := created(r); t.After(newest) {
			newest = t
		}
	}
	if newest.IsZero() {
		return 0
	}
	return max(at.Sub(newest), 0)
}

// ApproximateCreation is a record's ApproximateCreationDateTime.
func ApproximateCreation(r events.DynamoDBEventRecord) time.Time {
	return r.Change.ApproximateCreationDateTime.Time
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
// source mapping does. Run one Runner per Consumer.
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

	counters counters
	sink     sinkHealth
	// fineTimes: a record read had a creation time that is not a whole
	// minute (DynamoDB's, to the second; DynamoDB Local's are to the
	// minute). See shardReader.created.
	fineTimes atomic.Bool
	// windows is RunWindows' handler (nil: Run's).
	windows WindowHandler
	// partitionKey is the table's partition key attribute, from
	// DescribeStream ("" until known: records are then keyed by item).
	partitionKey atomic.Value

	gate gate
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

// shardEnd marks a shard whose records have all been delivered.
const shardEnd = "SHARD_END"

// Run delivers the stream to h until ctx is done; it returns nil then. A
// handler call under way when ctx ends is let finish, and its checkpoint is
// written. With Checkpoints that are Leases, it first takes the consumer's
// lease, waiting as a standby while another Runner holds it, and returns
// ErrLeaseLost if it loses the lease while running.
func (r *Runner) Run(ctx context.Context, h Handler) (err error) {
	if err := r.setUp(); err != nil {
		return err
	}
	if r.TumblingWindow > 0 && r.windows == nil {
		return errors.New("stream: a Runner with TumblingWindow runs a WindowHandler: use RunWindows")
	}
	log := r.Logger.With("consumer", r.Consumer)
	if leases, ok := r.Checkpoints.(Leases); ok && r.Lease > 0 {
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
			r.describeFailingSince = r.Now()
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
		present := make(map[string]bool, len(shards))
		for _, s := range shards {
			present[aws.ToString(s.ShardId)] = true
		}
		for _, s := range shards {
			id := aws.ToString(s.ShardId)
			parent := aws.ToString(s.ParentShardId)
			mu.Lock()
			skip := running[id] || done[id]
			mu.Unlock()
			if skip {
				continue
			}
			cp, err := r.Checkpoints.Get(ctx, r.Consumer, id) // with RunWindows, "<seq>\n<window state>"
			if err != nil {
				log.Error("read checkpoint failed", "shard", id, "err", err)
				continue
			}
			if cp == shardEnd {
				mu.Lock()
				done[id] = true
				mu.Unlock()
				continue
			}
			if parent != "" && present[parent] {
				mu.Lock()
				parentDone := done[parent]
				mu.Unlock()
				if !parentDone {
					continue // the parent's records come first
				}
			}
			mu.Lock()
			running[id] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				finished := r.runShard(ctx, log.With("shard", id), h, id, cp)
				mu.Lock()
				running[id] = false
				done[id] = finished
				mu.Unlock()
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.ShardRefresh):
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
	if r.TumblingWindow <= 0 {
		return errors.New("stream: RunWindows needs Config.TumblingWindow (TumblingWindowInSeconds)")
	}
	r.windows = h
	return r.Run(ctx, nil)
}

// setUp validates the configuration and fills in defaults, under shardMu:
// Health, Pause and Resume may read them meanwhile.
func (r *Runner) setUp() error {
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	if err := r.Config.withDefaults(); err != nil {
		return err
	}
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
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.owner.ID == "" {
		r.owner = newOwner()
	}
	return nil
}

func (r *Runner) shards(ctx context.Context) ([]types.Shard, error) {
	shards, hashKey, err := describe(ctx, r.API, r.StreamARN)
	if hashKey != "" {
		r.partitionKey.Store(hashKey)
	}
	return shards, err
}

// keyFunc keys records by the table's partition key once it is known.
func (r *Runner) keyFunc() KeyFunc {
	if pk, _ := r.partitionKey.Load().(string); pk != "" {
		return PartitionKey(pk)
	}
	return ItemKey
}

// Shards lists a stream's shards (every DescribeStream page), parents
// before their children.
func Shards(ctx context.Context, api API, streamARN string) ([]types.Shard, error) {
	shards, _, err := describe(ctx, api, streamARN)
	return shards, err
}

// describe reads every DescribeStream page: the shards, parents first, and
// the table's partition key attribute.
func describe(ctx context.Context, api API, streamARN string) (shards []types.Shard, hashKey string, err error) {
	var start *string
	for {
		res, err := api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN), ExclusiveStartShardId: start})
		if err != nil {
			return nil, hashKey, fmt.Errorf("stream: describe %s: %w", streamARN, err)
		}
		for _, k := range res.StreamDescription.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				hashKey = aws.ToString(k.AttributeName)
			}
		}
		shards = append(shards, res.StreamDescription.Shards...)
		if start = res.StreamDescription.LastEvaluatedShardId; start == nil {
			return parentsFirst(shards), hashKey, nil
		}
	}
}

// parentsFirst orders shards so that a parent present in the list comes
// before its children.
func parentsFirst(shards []types.Shard) []types.Shard {
	present := map[string]bool{}
	for _, s := range shards {
		present[aws.ToString(s.ShardId)] = true
	}
	done := map[string]bool{}
	out := make([]types.Shard, 0, len(shards))
	for len(out) < len(shards) {
		progressed := false
		for _, s := range shards {
			id, parent := aws.ToString(s.ShardId), aws.ToString(s.ParentShardId)
			if done[id] || (parent != "" && present[parent] && !done[parent]) {
				continue
			}
			done[id] = true
			out = append(out, s)
			progressed = true
		}
		if !progressed { // a cycle cannot happen; keep the rest as listed
			for _, s := range shards {
				if !done[aws.ToString(s.ShardId)] {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// iterator returns an iterator after the sequence number after or, when
// after is "", at from (TRIM_HORIZON or LATEST).
func (r *Runner) iterator(ctx context.Context, shardID, after string, from types.ShardIteratorType) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.StreamARN), ShardId: aws.String(shardID)}
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
	*backoff = min(*backoff*2, 30*time.Second)
}

// callOutcome is what a dead letter keeps of the last call that failed on
// its records: the invocation's id and Lambda's FunctionError for it.
type callOutcome struct {
	requestID     string
	functionError string // "Unhandled" for an error; "" for batch item failures
}

// call runs the handler once. It returns -1 on success, else the index of
// the lowest failed record (0 for a whole-batch failure) and the reason;
// out is the call's id and, when it failed, how.
func (r *Runner) call(ctx context.Context, sr *shardRun, recs []events.DynamoDBEventRecord, attempt int, out *callOutcome) (failedAt int, err error) {
	h, shardID := sr.h, sr.shardID
	start := r.Now()
	*out = callOutcome{requestID: r.invocationID()}
	// As Lambda's IteratorAge: the newest record's age when the batch is
	// handed to the function, not counting the handler. Its creation time
	// is the best the runner knows (sr.created): ApproximateCreationDateTime
	// alone is rounded down to the second, and to the minute on DynamoDB
	// Local, which made local ages off by up to a minute.
	// the batch's last record is its newest: a lane's records are in
	// stream order (one lookup, not one per record)
	age := IteratorAge(recs[len(recs)-1:], start, sr.created)
	r.counters.calls.Add(1)
	r.counters.invoked.Add(int64(len(recs)))
	r.counters.iteratorAge.Store(int64(age))
	defer func() {
		end := r.Now()
		sr.noteCall(age, err, end)
		if failedAt >= 0 {
			r.counters.failedCalls.Add(1)
			r.counters.failedInvoke.Add(int64(len(recs) - failedAt))
			r.counters.handled.Add(int64(failedAt))
		} else {
			r.counters.handled.Add(int64(len(recs)))
		}
		if r.OnBatch != nil {
			r.OnBatch(BatchStats{Consumer: r.Consumer, ShardID: shardID, Records: len(recs), Attempt: attempt,
				Failed: failedAt >= 0, IteratorAge: age, Duration: end.Sub(start)})
		}
	}()
	hctx, reason := WithFailureReasons(ctx)
	resp, err := safeCall(hctx, h, events.DynamoDBEvent{Records: recs})
	if err != nil {
		out.functionError = "Unhandled"
		return 0, err
	}
	if len(resp.BatchItemFailures) == 0 {
		return -1, nil
	}
	if r.NoReportBatchItemFailures && r.windows != nil {
		// Windows says a window call failed this way: without
		// ReportBatchItemFailures, Lambda retries a failed window
		// function's whole batch (its state comes back by position)
		out.functionError = "Unhandled"
		return 0, fmt.Errorf("a window call failed (ReportBatchItemFailures is off: the whole batch is retried): %s", resp.BatchItemFailures[0].ItemIdentifier)
	}
	if r.NoReportBatchItemFailures {
		sr.log.Warn("the handler reported failed items, but ReportBatchItemFailures is off: as Lambda, the call succeeded whole and they are not retried",
			"items", len(resp.BatchItemFailures), "first", resp.BatchItemFailures[0].ItemIdentifier)
		return -1, nil
	}
	if failedAt, err = lowestFailure(recs, resp); err != nil {
		return 0, err
	}
	err = fmt.Errorf("handler reported %d failed item(s), lowest %s (eventID %s)", len(resp.BatchItemFailures), recs[failedAt].Change.SequenceNumber, recs[failedAt].EventID)
	if why := reason(recs[failedAt].Change.SequenceNumber); why != nil {
		err = fmt.Errorf("%w: %w", err, why)
	}
	return failedAt, err
}

// lowestFailure is the index of the lowest record a response reports
// failed (it has some); an item that is not in the batch fails it whole.
func lowestFailure(recs []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse) (int, error) {
	failedAt := len(recs)
	for _, f := range resp.BatchItemFailures {
		i := indexOf(recs, f.ItemIdentifier)
		if i < 0 {
			return 0, fmt.Errorf("handler reported unknown item %q: whole batch fails", f.ItemIdentifier)
		}
		failedAt = min(failedAt, i)
	}
	return failedAt, nil
}

func indexOf(recs []events.DynamoDBEventRecord, seq string) int {
	for i := range recs {
		if recs[i].Change.SequenceNumber == seq {
			return i
		}
	}
	return -1
}

// safeCall turns a handler panic into an error, so one poison record cannot
// crash the runner.
func safeCall(ctx context.Context, h Handler, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, ev)
}

// deadLetter hands records to the sink, retrying until it takes them: a
// record leaves the shard only through the handler or the sink.
func (r *Runner) deadLetter(ctx context.Context, log *slog.Logger, shardID string, recs []events.DynamoDBEventRecord, attempts int, cause error, raw ...json.RawMessage) bool {
	return r.putDeadLetter(ctx, log, r.newDeadLetter(shardID, recs, attempts, cause, raw...))
}

func (r *Runner) newDeadLetter(shardID string, recs []events.DynamoDBEventRecord, attempts int, cause error, raw ...json.RawMessage) DeadLetter {
	dl := DeadLetter{
		Consumer: r.Consumer, StreamARN: r.StreamARN, ShardID: shardID,
		Error: cause.Error(), Attempts: attempts, FailedAt: r.Now().UTC(),
		Event: events.DynamoDBEvent{Records: recs}, Unconverted: raw,
	}
	if len(recs) > 0 {
		dl.FirstSequenceNumber = recs[0].Change.SequenceNumber
		dl.LastSequenceNumber = recs[len(recs)-1].Change.SequenceNumber
	}
	return dl
}

func (r *Runner) putDeadLetter(ctx context.Context, log *slog.Logger, dl DeadLetter) bool {
	backoff := r.RetryBackoff
	waiting := 0 // its id in r.sink once the sink refused it
	defer func() {
		if waiting != 0 { // taken, or the run ended first: its records are read again after a restart
			r.sink.done(waiting)
		}
	}()
	for {
		err := r.DeadLetters.Put(context.WithoutCancel(ctx), dl)
		if err == nil {
			n := int64(max(len(dl.Event.Records), 1))
			r.counters.deadLettered.Add(n)
			if dl.Condition == RecordAgeExceeded {
				r.counters.expired.Add(n)
			}
			log.Error("records dead-lettered", "records", len(dl.Event.Records), "first", dl.FirstSequenceNumber, "last", dl.LastSequenceNumber,
				"attempts", dl.Attempts, "condition", dl.condition(), "err", dl.Error)
			return true
		}
		r.counters.destinationFailures.Add(1)
		waiting = r.sink.refused(waiting, r.Now(), err)
		log.Error("dead-letter sink failed; retrying (the shard waits)", "err", err)
		if ctx.Err() != nil {
			return false
		}
		r.sleep(ctx, &backoff)
	}
}

// invocationID is a new handler call's id.
func (r *Runner) invocationID() string {
	if r.InvocationID != nil {
		return r.InvocationID()
	}
	return NewUUID()
}

// NewUUID is a random (version 4) UUID, as Lambda's request ids are.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return formatUUID(b, 4)
}

// formatUUID writes b as a UUID of the given version (RFC 9562's layout).
func formatUUID(b [16]byte, version byte) string {
	b[6] = b[6]&0x0f | version<<4
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
