package stream

import (
	"errors"
	"fmt"
	"time"

	"github.com/dynastream/dynastream/stream/filter"
)

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
// them (on a copy: Settings', or a run's in Runner.setUp).
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
