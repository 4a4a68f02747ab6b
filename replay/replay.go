package replay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/idempotency"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// Capture reads every record now in a stream, shard by shard (parents
// before children, each shard in sequence order), and returns them as one
// event. It stops reading a shard at its end or, for an open shard, after
// an empty read (DynamoDB Local makes a write visible at once).
func Capture(ctx context.Context, api stream.API, streamARN string) (events.DynamoDBEvent, error) {
	shards, err := stream.Shards(ctx, api, streamARN)
	if err != nil {
		return events.DynamoDBEvent{}, fmt.Errorf("replay: %w", err)
	}
	var ev events.DynamoDBEvent
	for _, s := range shards {
		it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(streamARN), ShardId: s.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return ev, fmt.Errorf("replay: shard iterator: %w", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return ev, fmt.Errorf("replay: get records: %w", err)
			}
			for _, r := range out.Records {
				lr, err := attr.LambdaRecord(r, streamARN)
				if err != nil {
					return ev, fmt.Errorf("replay: %w", err)
				}
				ev.Records = append(ev.Records, lr)
			}
			if len(out.Records) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return ev, nil
}

// Save writes an event as indented JSON (a fixture for testdata/).
func Save(path string, ev events.DynamoDBEvent) error {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads an event written by Save (or any Lambda DynamoDB event JSON).
func Load(path string) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	b, err := os.ReadFile(path)
	if err == nil {
		err = attr.UnmarshalJSON(b, &ev)
	}
	if err != nil {
		return ev, fmt.Errorf("replay: load %s: %w", path, err)
	}
	return ev, nil
}

// Schedule is one way of delivering a captured stream.
type Schedule struct {
	// Name identifies the schedule in reports; Describe adds what it does.
	Name string
	Seed uint64
	// Duplicate delivers every record twice: the whole stream, then all of
	// it again (as after a lost checkpoint), each item's order kept.
	Duplicate bool
	// Shuffle interleaves different items' records at random; each item's
	// records keep their order.
	Shuffle bool
	// MaxBatch bounds batch sizes; with RandomBatches each batch gets a
	// random size from 1 to MaxBatch (default 100).
	MaxBatch      int
	RandomBatches bool
	// FailureRate is the chance that a handler call fails — before the
	// handler runs, after it ran (its effects stay), or by reporting one
	// random record of the batch as failed. Failed batches are retried from
	// the lowest failed record, as Lambda does. These injected failures
	// stand for faults a retry cures (a throttle, a timeout, a crash): they
	// never use up the Target's retries, so a record dead-lettered in a run
	// is dead-lettered for the handler's own failures.
	FailureRate float64
	// FailAfterEffects makes the first call of every batch fail after the
	// handler ran and its effects were written — a crash before the
	// checkpoint moved — so the whole batch is delivered again.
	FailAfterEffects bool
	// CrashBetweenRequests crashes a handler call between two of its
	// requests, at every point in turn: a batch's first call crashes after
	// its first request, the next call after its second, and so on, until a
	// call makes fewer requests than that and the batch goes on as usual.
	// The request a crash comes after is carried out and its answer lost;
	// the call's later requests fail with ErrCrashed unsent; the batch is
	// delivered again, as after a Lambda that died mid-invocation. This
	// finds effects ordered wrongly — a webhook called before the
	// transaction that records it, an effect skipped when a retry finds
	// its record already written — which failures around whole calls never
	// reach. Only requests made through Transport or APIOption count, so
	// give the handler's clients those. A batch whose calls make r requests
	// costs r+1 calls; keep batches small (Fixed uses batches of one).
	// Crashes are injected failures: they use up neither retries nor
	// OnFailure.MaxAttempts (at most MaxCrashes per batch), and are not
	// counted in a dead letter's Attempts. A handler that makes requests
	// concurrently (stream.Keyed) is crashed after the k-th request to
	// start, which differs from run to run: such runs do not repeat
	// exactly for a seed.
	CrashBetweenRequests bool
	// CrashSampled makes CrashBetweenRequests crash a batch at sampled
	// points instead of after every request in turn: after its first
	// request, then each time up to twice as far along as the last crash
	// (1, 2, 4, 7, …, drawn from the schedule's seed), so a batch whose
	// calls make r requests costs O(log r) calls instead of r. Schedules
	// sets it, over batches of up to 20 records; Fixed's crash schedule,
	// in batches of one, tries every point.
	CrashSampled bool
	// ParallelizationFactor (1–10; 0 is 1) spreads the records over that
	// many lanes by partition key, as Lambda does, and delivers the lanes
	// at the same time, each in order with its own batches and failures:
	// handler calls overlap.
	ParallelizationFactor int
	// PartitionKey is the attribute the lanes hash (default "PK"); a record
	// without it is placed by its item.
	PartitionKey string
	// SkipContractCheck turns off CheckResponse: each handler answer is then
	// read as Lambda reads it (a response that breaks the contract is a
	// complete failure or a success, as the rule says), instead of failing
	// the delivery with a *ContractError.
	SkipContractCheck bool
	// Bootstrap starts the consumer from a scan of the table, as
	// stream.Bootstrap does, instead of the stream's beginning: the
	// position is cut at a random record, each item is read by the "scan"
	// at a random point between the cut and a random end (the table
	// changes while it is scanned), the images read go to the handler as
	// INSERT records (stream.SnapshotRecord, in a random order), and the
	// records after the cut follow through the ordering rule (stream.Gate).
	// Its state must equal the baseline's: scan plus stream equals the
	// stream from the start. BootstrapSchedules makes such schedules.
	Bootstrap bool
}

// Describe says what the schedule does to the stream, transform by
// transform: "duplicates, shuffled across items, random batches of 1–7,
// failures 10%".
func (s Schedule) Describe() string {
	var parts []string
	if s.Duplicate {
		parts = append(parts, "duplicates")
	}
	if s.Shuffle {
		parts = append(parts, "shuffled across items")
	} else {
		parts = append(parts, "stream order")
	}
	maxBatch := s.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 100
	}
	if s.RandomBatches && maxBatch > 1 {
		parts = append(parts, fmt.Sprintf("random batches of 1–%d", maxBatch))
	} else {
		parts = append(parts, fmt.Sprintf("batches of %d", maxBatch))
	}
	if s.FailureRate > 0 {
		parts = append(parts, fmt.Sprintf("failures %.0f%%", s.FailureRate*100))
	}
	if s.FailAfterEffects {
		parts = append(parts, "each batch's first call fails after its effects")
	}
	if s.CrashBetweenRequests && s.CrashSampled {
		parts = append(parts, "crashes between requests, sampled")
	} else if s.CrashBetweenRequests {
		parts = append(parts, "crashes between requests")
	}
	if s.ParallelizationFactor > 1 {
		parts = append(parts, fmt.Sprintf("parallelization %d", s.ParallelizationFactor))
	}
	if s.SkipContractCheck {
		parts = append(parts, "no contract check")
	}
	if s.Bootstrap {
		parts = append(parts, "bootstrapped from a scan")
	}
	return strings.Join(parts, ", ")
}

// String is the name and the description.
func (s Schedule) String() string {
	if s.Name == "" {
		return s.Describe()
	}
	return s.Name + " [" + s.Describe() + "]"
}

// Parallel returns copies of schedules with a ParallelizationFactor of pf,
// their names saying so.
func Parallel(ss []Schedule, pf int) []Schedule {
	out := make([]Schedule, len(ss))
	for i, s := range ss {
		s.ParallelizationFactor = pf
		s.Name = fmt.Sprintf("%s, parallelization %d", s.Name, pf)
		out[i] = s
	}
	return out
}

// AsCaptured delivers the stream in order, once, in batches of 100: the
// baseline Check compares every other schedule with.
var AsCaptured = Schedule{Name: "as captured", MaxBatch: 100}

// Fixed returns the schedules Check always runs, before the ones it is
// given, because each finds one common bug on its own: every record twice
// in stream order (a counter that is not guarded), batches of one record (a
// handler that relies on seeing related records together), and every batch
// failing once after its effects were written (an effect repeated on
// retry), and, in batches of one, every call crashing in turn after each of
// its requests (effects in the wrong order; see CrashBetweenRequests).
func Fixed() []Schedule {
	return []Schedule{
		{Name: "duplicates only", Duplicate: true, MaxBatch: 100},
		{Name: "batch size 1", MaxBatch: 1},
		{Name: "failure after effects", MaxBatch: 100, FailAfterEffects: true},
		{Name: "crash between requests", MaxBatch: 1, CrashBetweenRequests: true},
	}
}

// MaxCrashes bounds the crashes CrashBetweenRequests injects into one
// batch: a batch whose calls make more requests than that is crashed after
// each of its first MaxCrashes requests only.
const MaxCrashes = 200

// Schedules returns n random schedules derived from seed (the same seed
// gives the same schedules). Every one shuffles the interleaving of
// different items' records (each item's order kept) and cuts random
// batches of 1 to a maximum drawn from 1–20; each delivers the whole
// stream twice with probability ½, injects failures at a rate of 0,
// 10% or 30%, one drawn per schedule, and crashes between requests with
// probability ¼ (at sampled points: CrashSampled).
func Schedules(seed uint64, n int) []Schedule {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	crashes := rand.New(rand.NewPCG(seed, 0xc4a5)) // its own source: the other draws stay as they were
	out := make([]Schedule, n)
	for i := range out {
		s := Schedule{
			Seed:          rng.Uint64(),
			Duplicate:     rng.IntN(2) == 0,
			Shuffle:       true,
			RandomBatches: true,
			MaxBatch:      1 + rng.IntN(20),
			FailureRate:   []float64{0, 0.1, 0.3}[rng.IntN(3)],
		}
		s.CrashBetweenRequests = crashes.IntN(4) == 0
		s.CrashSampled = s.CrashBetweenRequests
		s.Name = fmt.Sprintf("random #%d (seed %d)", i+1, s.Seed)
		out[i] = s
	}
	return out
}

// OnFailure is what a delivery does with a batch the handler keeps
// failing, as the event source mapping's MaximumRetryAttempts and
// BisectBatchOnFunctionError (and stream.Config's MaxRetries and NoBisect)
// say, decided by stream.Policy. The zero value is the Runner's default: bisection, three retries,
// then the records are dead-lettered.
type OnFailure struct {
	// MaxRetries is how often a failing batch is retried before its records
	// are dead-lettered, with stream.Config.MaxRetries' meaning (Lambda's
	// MaximumRetryAttempts): nil is stream.DefaultMaxRetries (3),
	// stream.Retries(0) none, stream.Retries(stream.Forever) until the
	// handler succeeds — in a replay, up to MaxAttempts calls, after which
	// the delivery fails with a *StuckError: Lambda would retry forever and
	// the shard would stop there.
	MaxRetries *int
	// NoBisect stops a failing batch from being split in two and its
	// halves retried down to single records (so that only the failing
	// record is dead-lettered): the records after the failing one in its
	// batch are then dead-lettered with it, as Lambda does without
	// BisectBatchOnFunctionError.
	NoBisect bool
	// MaxAttempts bounds the handler calls on one batch (default 50), so a
	// handler that never succeeds ends the delivery with a *StuckError
	// instead of looping.
	MaxAttempts int
	// MaxRecordAge is stream.Config.MaxRecordAge (Lambda's
	// MaximumRecordAgeInSeconds): before each call, records older than it
	// are dead-lettered with condition RecordAgeExceeded instead of handed
	// over. The kit's time for it moves to the creation time of each
	// record handed over (a consumer that keeps up) and on by RetryDelay
	// for every failed call (default 1 s: the wait before a retry).
	MaxRecordAge time.Duration
	RetryDelay   time.Duration
}

// DefaultMaxAttempts is OnFailure.MaxAttempts' default.
const DefaultMaxAttempts = 50

func (o OnFailure) resolved() (retries, attempts int, err error) {
	if retries, err = stream.RetryLimit(o.MaxRetries); err != nil {
		return 0, 0, fmt.Errorf("replay: %w", err)
	}
	attempts = o.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	return retries, attempts, nil
}

// Stats count what a delivery did.
type Stats struct {
	Calls            int
	RecordsDelivered int
	// FilteredOut counts records Target.Filter kept from the handler.
	FilteredOut      int
	InjectedFailures int
	// Crashes counts the calls crashed between two requests
	// (CrashBetweenRequests; they are among InjectedFailures). A crash
	// schedule whose run has none crashed nothing: the handler made no
	// request through APIOption or Transport.
	Crashes int
	// HandlerFailures counts calls the handler itself failed (an error, a
	// panic, or records it reported failed).
	HandlerFailures int
	// DeadLetters are the batches given up on, in stream order, each with
	// the handler's last error and the records, ready for
	// stream.Resubmit.
	DeadLetters []stream.DeadLetter
}

// DeadLettered returns the eventIDs of the dead-lettered records, sorted,
// each once.
func (s Stats) DeadLettered() []string {
	var ids []string
	for _, dl := range s.DeadLetters {
		for _, r := range dl.Event.Records {
			ids = append(ids, r.EventID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func (s *Stats) add(o Stats) {
	s.Calls += o.Calls
	s.FilteredOut += o.FilteredOut
	s.RecordsDelivered += o.RecordsDelivered
	s.InjectedFailures += o.InjectedFailures
	s.Crashes += o.Crashes
	s.HandlerFailures += o.HandlerFailures
	s.DeadLetters = append(s.DeadLetters, o.DeadLetters...)
}

// StuckError is a batch the handler kept failing until OnFailure's
// MaxAttempts: where Lambda (with MaxRetries Forever) would stop the shard.
type StuckError struct {
	Schedule string
	Attempts int
	// Record is the record the handler failed on (the batch's first when
	// it failed the whole batch).
	Record events.DynamoDBEventRecord
	// Records counts the records still failing with it.
	Records int
	// Err is the handler's last error.
	Err error
}

// Error names the schedule, the record, the attempts and the handler's
// last error.
func (e *StuckError) Error() string {
	return fmt.Sprintf("replay: %s: %d record(s) from %s still failing after %d attempts (where Lambda would stop the shard): %v",
		e.Schedule, e.Records, describeRecord(e.Record), e.Attempts, e.Err)
}

// Unwrap returns the handler's last error.
func (e *StuckError) Unwrap() error { return e.Err }

// describeRecord names a record as a person looks for it: eventID, keys,
// sequence number.
func describeRecord(r events.DynamoDBEventRecord) string {
	names := make([]string, 0, len(r.Change.Keys))
	for n := range r.Change.Keys {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "record %q (", r.EventID)
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(keyText(r.Change.Keys[n]))
	}
	fmt.Fprintf(&b, "; sequence number %s)", r.Change.SequenceNumber)
	return b.String()
}

// Order returns the records of ev in the order a schedule delivers them.
func Order(ev events.DynamoDBEvent, s Schedule) []events.DynamoDBEventRecord {
	recs := append([]events.DynamoDBEventRecord(nil), ev.Records...)
	if s.Duplicate {
		recs = append(recs, ev.Records...)
	}
	if !s.Shuffle {
		return recs
	}
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	queues := map[string][]events.DynamoDBEventRecord{}
	var keys []string
	for _, r := range recs {
		k := itemKey(r)
		if _, ok := queues[k]; !ok {
			keys = append(keys, k)
		}
		queues[k] = append(queues[k], r)
	}
	out := make([]events.DynamoDBEventRecord, 0, len(recs))
	for len(keys) > 0 {
		i := rng.IntN(len(keys))
		k := keys[i]
		out = append(out, queues[k][0])
		if queues[k] = queues[k][1:]; len(queues[k]) == 0 {
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
		}
	}
	return out
}

func itemKey(r events.DynamoDBEventRecord) string {
	var b strings.Builder
	b.WriteString(r.EventSourceArn)
	b.WriteByte(0)
	for _, name := range []string{"PK", "SK"} {
		if v, ok := r.Change.Keys[name]; ok {
			b.WriteString(v.String())
		}
		b.WriteByte(0)
	}
	if b.Len() == len(r.EventSourceArn)+2 { // not PK/SK keys: use them all
		j, _ := json.Marshal(r.Change.Keys)
		b.Write(j)
	}
	return b.String()
}

// Deliver plays ev into t's Handler under schedule s, as Lambda's event
// source mapping would: batches in order; a batch that fails (an error, a
// panic, or BatchItemFailures) is retried from its lowest failed record,
// bisected and dead-lettered as t.OnFailure says (the dead letters are in
// the Stats). With a ParallelizationFactor above 1, the lanes are
// delivered concurrently. It fails with a *ContractError for a response
// Lambda would misread, and with a *StuckError for a batch still failing
// after OnFailure.MaxAttempts calls.
func Deliver(ctx context.Context, ev events.DynamoDBEvent, t Target, s Schedule) (Stats, error) {
	switch {
	case t.WindowHandler != nil && t.Handler != nil:
		return Stats{}, errors.New("replay: the Target has a Handler and a WindowHandler: give one")
	case t.WindowHandler != nil && (t.Window < time.Second || t.Window > stream.MaxTumblingWindow || t.Window%time.Second != 0):
		return Stats{}, fmt.Errorf("replay: Target.Window %s: want whole seconds, 1s to 900s (TumblingWindowInSeconds)", t.Window)
	case t.WindowHandler != nil && s.ParallelizationFactor > 1:
		return Stats{}, fmt.Errorf("replay: %s: ParallelizationFactor %d with tumbling windows: Lambda takes windows with 1 only", s.Name, s.ParallelizationFactor)
	case t.Handler == nil && t.WindowHandler == nil:
		return Stats{}, errors.New("replay: the Target has no Handler")
	}
	retries, attempts, err := t.OnFailure.resolved()
	if err != nil {
		return Stats{}, err
	}
	d := delivery{h: t.Handler, s: s, policy: stream.Policy{MaxRetries: retries, Bisect: !t.OnFailure.NoBisect, MaxRecordAge: t.OnFailure.MaxRecordAge},
		attempts: attempts, filter: t.Filter, window: t.Window, wh: t.WindowHandler, retryDelay: t.OnFailure.RetryDelay}
	if d.retryDelay <= 0 {
		d.retryDelay = time.Second
	}
	if t.Source == nil {
		return d.deliver(ctx, ev)
	}
	if d.src, err = newHistory(*t.Source, ev); err != nil {
		return Stats{}, err
	}
	if err := d.src.rewind(ctx); err != nil {
		return Stats{}, err
	}
	st, err := d.deliver(ctx, ev)
	// the table is left in its final state, however the delivery ended
	return st, errors.Join(err, d.src.finish(context.WithoutCancel(ctx)))
}

// deliver plays ev under d's schedule.
func (d delivery) deliver(ctx context.Context, ev events.DynamoDBEvent) (Stats, error) {
	s := d.s
	recs := Order(ev, s)
	filteredOut := 0
	if len(d.filter) > 0 {
		kept := recs[:0]
		for _, r := range recs {
			if d.filter.Match(r) {
				kept = append(kept, r)
			}
		}
		filteredOut, recs = len(recs)-len(kept), kept
	}
	if s.Bootstrap {
		if d.wh != nil || d.src != nil || s.Duplicate {
			return Stats{}, fmt.Errorf("replay: %s: a bootstrap schedule takes no windows, Source or duplicates", s.Name)
		}
		st, err := d.bootstrap(ctx, ev)
		st.FilteredOut = filteredOut
		return st, err
	}
	if d.wh != nil {
		st, err := d.windows(ctx, ev)
		st.FilteredOut = filteredOut
		return st, err
	}
	pf := max(s.ParallelizationFactor, 1)
	if pf > 10 {
		return Stats{}, fmt.Errorf("replay: %s: ParallelizationFactor %d out of range 1..10", s.Name, pf)
	}
	if pf == 1 {
		st, err := d.lane(ctx, recs, 0, rand.New(rand.NewPCG(s.Seed, 2)))
		st.FilteredOut = filteredOut
		return st, err
	}
	pk := s.PartitionKey
	if pk == "" {
		pk = "PK"
	}
	key := stream.PartitionKey(pk)
	lanes := make([][]events.DynamoDBEventRecord, pf)
	for _, r := range recs {
		i := stream.Lane(key(r), pf)
		lanes[i] = append(lanes[i], r)
	}
	var (
		mu    sync.Mutex
		total Stats
		errs  []error
		wg    sync.WaitGroup
	)
	for i, lane := range lanes {
		wg.Go(func() {
			st, err := d.lane(ctx, lane, i, rand.New(rand.NewPCG(s.Seed, uint64(100+i))))
			mu.Lock()
			defer mu.Unlock()
			total.add(st)
			errs = append(errs, err)
		})
	}
	wg.Wait()
	total.FilteredOut = filteredOut
	slices.SortFunc(total.DeadLetters, func(a, b stream.DeadLetter) int {
		return strings.Compare(a.FirstSequenceNumber, b.FirstSequenceNumber)
	})
	return total, errors.Join(errs...)
}

// delivery is one Deliver's settings.
type delivery struct {
	h          stream.Handler
	s          Schedule
	policy     stream.Policy
	attempts   int
	src        *history // the source table moved through the stream, or nil
	filter     filter.Criteria
	retryDelay time.Duration // OnFailure.RetryDelay, for record age
	// window and wh: a windowed target's (wh nil: none)
	window time.Duration
	wh     stream.WindowHandler
}

// pending is records of a batch still to hand over, with the handler's own
// failures on them so far and its last error.
type pending struct {
	stream.Pending     // the records and the handler's failures on them
	crashAfter     int // the request the next call crashes after; 0: none
	crashes        int
	calls          int
	last           error
	at             events.DynamoDBEventRecord
}

// lane delivers records in order, in batches, with retries, bisection and
// dead letters.
func (d delivery) lane(ctx context.Context, recs []events.DynamoDBEventRecord, lane int, rng *rand.Rand) (Stats, error) {
	var st Stats
	// The lane's calls see the lane's own time (a Guard's wait moves it)
	// and no deadline of the test's: each Lambda invocation has its own,
	// and one shared by every call would hold a crashed call's claim until
	// the very deadline the next call must finish by.
	ctx = idempotency.WithClock(noDeadline{ctx}, &runClock{})
	maxBatch := d.s.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 100
	}
	// the kit's time, for record age: the newest record handed over, and
	// RetryDelay on for every failed call
	var clock time.Time
	for len(recs) > 0 {
		n := maxBatch
		if d.s.RandomBatches {
			n = 1 + rng.IntN(maxBatch)
		}
		n = min(n, len(recs))
		for _, r := range recs[:n] {
			clock = later(clock, stream.ApproximateCreation(r))
		}
		queue := []pending{{Pending: stream.Pending{Records: recs[:n]}}}
		if d.s.CrashBetweenRequests {
			queue[0].crashAfter = 1
		}
		for len(queue) > 0 {
			p := &queue[0]
			if expired, rest := d.policy.Expired(p.Records, stream.ApproximateCreation, clock); expired != nil {
				st.DeadLetters = append(st.DeadLetters, stream.DeadLetter{
					Consumer: "replay", ShardID: fmt.Sprintf("lane %d", lane), Condition: stream.RecordAgeExceeded,
					FirstSequenceNumber: expired[0].Change.SequenceNumber, LastSequenceNumber: expired[len(expired)-1].Change.SequenceNumber,
					Attempts: p.calls - p.crashes, Error: fmt.Sprintf("%d record(s) older than MaxRecordAge %s", len(expired), d.policy.MaxRecordAge),
					Event: events.DynamoDBEvent{Records: expired},
				})
				if p.Records = rest; len(rest) == 0 {
					queue = queue[1:]
					continue
				}
			}
			if p.calls-p.crashes >= d.attempts {
				return st, &StuckError{Schedule: d.s.Name, Attempts: p.calls - p.crashes, Record: p.at, Records: len(p.Records), Err: p.last}
			}
			p.calls++
			// the first call, not counting the crashed ones before it
			o, err := d.call(ctx, p.Records, p.calls-p.crashes == 1, p.crashAfter, rng, &st)
			if err != nil {
				return st, err
			}
			if o.crashed || o.failedAt >= 0 {
				clock = clock.Add(d.retryDelay)
			}
			switch {
			case o.crashed:
				st.Crashes++
				p.crashes++
				if d.s.CrashSampled {
					p.crashAfter += 1 + rng.IntN(p.crashAfter)
				} else {
					p.crashAfter++
				}
				if p.crashes >= MaxCrashes {
					p.crashAfter = 0
				}
				continue // the whole batch again
			case p.crashAfter > 0:
				p.crashAfter = 0 // it made fewer requests: every point was tried
			}
			if o.err != nil { // the handler's own failure: it counts
				st.HandlerFailures++
				p.last, p.at = o.err, p.Records[o.failedAt]
			}
			// what follows is the event source mapping's (and the Runner's) policy
			_, dead, next := d.policy.After(p.Pending, o.failedAt, o.err != nil)
			if dead != nil {
				st.DeadLetters = append(st.DeadLetters, stream.DeadLetter{
					Consumer: "replay", ShardID: fmt.Sprintf("lane %d", lane),
					FirstSequenceNumber: dead[0].Change.SequenceNumber, LastSequenceNumber: dead[len(dead)-1].Change.SequenceNumber,
					Attempts: p.calls - p.crashes, Error: p.last.Error(),
					Event: events.DynamoDBEvent{Records: append([]events.DynamoDBEventRecord(nil), dead...)},
				})
			}
			rest := make([]pending, len(next))
			for i, n := range next {
				rest[i] = pending{Pending: n}
			}
			if len(next) == 1 { // the same records again: their calls go on counting
				rest[0] = pending{Pending: next[0], crashAfter: p.crashAfter, crashes: p.crashes, calls: p.calls, last: p.last, at: p.at}
			}
			queue = append(rest, queue[1:]...)
		}
		recs = recs[n:]
	}
	return st, nil
}

// outcome is one handler call's result: the index to retry from (-1:
// done), and the handler's own error when the failure was the handler's
// (nil when only an injected failure made it fail).
type outcome struct {
	failedAt int
	err      error
	crashed  bool // an injected crash between two requests
}

// call makes one handler call, maybe with an injected failure, and
// crashes it after request crashAfter when that is above 0.
func (d delivery) call(ctx context.Context, batch []events.DynamoDBEventRecord, first bool, crashAfter int, rng *rand.Rand, st *Stats) (outcome, error) {
	s := d.s
	inject := s.FailureRate > 0 && rng.Float64() < s.FailureRate
	mode := rng.IntN(3)
	if s.FailAfterEffects && first {
		inject, mode = true, 1
	}
	if crashAfter > 0 && mode == 0 { // a failure before the call would skip this crash point
		inject = false
	}
	st.Calls++
	if d.src != nil { // the table is at least as new as the records handed over
		if err := d.src.advance(ctx, newest(batch)); err != nil {
			return outcome{}, err
		}
	}
	if inject && mode == 0 { // fails before the handler runs
		st.InjectedFailures++
		return outcome{failedAt: 0}, nil
	}
	st.RecordsDelivered += len(batch)
	hctx, reason := stream.WithFailureReasons(ctx)
	if crashAfter > 0 {
		hctx = context.WithValue(hctx, crashKey{}, &crashPoint{after: crashAfter})
	}
	resp, err := safeCall(hctx, d.h, events.DynamoDBEvent{Records: batch})
	if c := crashAt(hctx); c != nil {
		if _, crashed := c.result(); crashed { // the process died: its answer never came
			st.InjectedFailures++
			return outcome{failedAt: 0, crashed: true}, nil
		}
	}
	if !s.SkipContractCheck {
		body, merr := json.Marshal(resp)
		if merr != nil {
			return outcome{}, fmt.Errorf("replay: %s: the handler's response: %w", s.Name, merr)
		}
		if cerr := CheckResponse(batch, body, err); cerr != nil {
			return outcome{}, fmt.Errorf("replay: %s: batch of %d from sequence number %s: %w", s.Name, len(batch), batch[0].Change.SequenceNumber, cerr)
		}
	}
	o := outcome{failedAt: -1}
	switch {
	case err != nil: // a failed invocation: the whole batch again
		o = outcome{failedAt: 0, err: fmt.Errorf("the handler failed a batch of %d from %s: %w", len(batch), describeRecord(batch[0]), err)}
	default:
		for _, f := range resp.BatchItemFailures {
			i := indexOf(batch, f.ItemIdentifier)
			if i < 0 { // Lambda: a complete failure
				o = outcome{failedAt: 0, err: fmt.Errorf("the handler reported item %q, which is not in the batch: the whole batch failed", f.ItemIdentifier)}
				break
			}
			if o.failedAt < 0 || i < o.failedAt {
				o = outcome{failedAt: i, err: fmt.Errorf("the handler reported %s failed", describeRecord(batch[i]))}
				if why := reason(f.ItemIdentifier); why != nil {
					o.err = fmt.Errorf("the handler reported %s failed: %w", describeRecord(batch[i]), why)
				}
			}
		}
	}
	if inject {
		st.InjectedFailures++
		if mode == 1 { // crashed after its effects: the whole batch comes again
			return outcome{failedAt: 0, err: o.err}, nil
		}
		i := rng.IntN(len(batch)) // reports one record failed
		if d.wh != nil {          // a windowed call fails whole
			i = 0
		}
		if o.failedAt < 0 || i < o.failedAt {
			o = outcome{failedAt: i}
		}
	}
	return o, nil
}

// safeCall calls h, turning a panic into an error, as Lambda's runtime
// turns it into a failed invocation.
func safeCall(ctx context.Context, h stream.Handler, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, ev)
}

func indexOf(batch []events.DynamoDBEventRecord, seq string) int {
	for i := range batch {
		if batch[i].Change.SequenceNumber == seq {
			return i
		}
	}
	return -1
}

// Target is the consumer under test, how it is deployed, and its derived
// state.
type Target struct {
	Handler stream.Handler
	// Filter is the event source mapping's FilterCriteria: records that
	// match none of its patterns are never delivered (Stats.FilteredOut
	// counts them), as the mapping drops them. Give it the value the
	// template is written from, so the kit tests what is deployed.
	Filter filter.Criteria
	// WindowHandler, in place of Handler, is a consumer of tumbling windows
	// of Window (whole seconds, up to 900: TumblingWindowInSeconds): the kit
	// delivers each schedule's records in windows as the event source
	// mapping does (stream.Windows: a shard's records in window order,
	// calls of one window each, the state handed from call to call, the
	// final call at the window's end and at the end of the stream), with
	// ParallelizationFactor 1 only, as Lambda. A schedule that duplicates
	// the stream delivers it twice from the start, each time with fresh
	// windows (a consumer that read the stream again); injected failures
	// fail a call whole.
	WindowHandler stream.WindowHandler
	Window        time.Duration
	// OnFailure is what happens to a batch the handler keeps failing (the
	// zero value: three retries, then its records are dead-lettered).
	OnFailure OnFailure
	// Reset empties the derived state before each run.
	Reset func(ctx context.Context) error
	// Source, for a handler that reads the table the stream came from,
	// moves that table through the stream's history so the handler sees
	// it as it was at each point, not in its final state (see
	// SourceTable).
	Source *SourceTable
	// State reads the derived state; runs are compared with go-cmp.
	State func(ctx context.Context) (any, error)
	// NoRequests says the handler makes no requests the kit could crash
	// between (it computes in memory, say): its crash schedules then
	// crash nothing, and Report.Err does not fail for it. Leave it false
	// for a handler with effects: a crash schedule that crashed nothing
	// means its clients are not built with APIOption and Transport, and
	// the schedule tested nothing.
	NoRequests bool
	// Expect, when set, checks the baseline's state: Check reports its
	// error (Report.BaselineErr) and Report.Err fails. Without it, Check
	// proves only that every schedule gives the same state as the stream
	// delivered once in order — not that this state is right. Want makes
	// one from the expected state.
	Expect func(state any) error
}

// Want returns an Expect that requires the state to equal want (go-cmp,
// with opts), and otherwise says how it differs.
func Want(want any, opts ...cmp.Option) func(state any) error {
	return func(state any) error {
		if d := cmp.Diff(want, state, opts...); d != "" {
			return fmt.Errorf("not the expected state (-want +got):\n%s", d)
		}
		return nil
	}
}

// Run is one schedule's outcome.
type Run struct {
	Schedule Schedule
	Stats    Stats
	// Diff is empty when the state equals the baseline's (go-cmp format:
	// -baseline +this run).
	Diff string
	// DeadLetterDiff is empty when the run dead-lettered the same records
	// (by eventID) as the baseline; otherwise it says which differ.
	DeadLetterDiff string
	// CrashedNothing is true for a schedule with CrashBetweenRequests
	// under which no call was crashed: no call made a request through
	// APIOption or Transport, so the schedule did not test what it is for
	// (never set for a Target with NoRequests).
	CrashedNothing bool
}

// Differs reports whether the run's outcome differs from the baseline's.
func (r Run) Differs() bool { return r.Diff != "" || r.DeadLetterDiff != "" }

// Report is the outcome of Check.
type Report struct {
	Baseline      any
	BaselineStats Stats
	// BaselineErr is the Target's Expect's verdict on the baseline's state.
	BaselineErr error
	Runs        []Run
}

// CrashedNothing returns the crash schedules' runs that crashed nothing.
func (r Report) CrashedNothing() []Run {
	var out []Run
	for _, run := range r.Runs {
		if run.CrashedNothing {
			out = append(out, run)
		}
	}
	return out
}

// uncrashed is why crash schedules that crashed nothing fail.
const uncrashed = "the kit saw no request of the handler's (they are counted through replay.APIOption and replay.Transport), so no call could be crashed between two requests: build the handler's AWS clients with APIOption and its HTTP clients with Transport; a handler that makes no requests (it computes in memory, or every record is skipped) sets Target.NoRequests"

// Differing returns the runs whose outcome differs from the baseline's.
func (r Report) Differing() []Run {
	var out []Run
	for _, run := range r.Runs {
		if run.Differs() {
			out = append(out, run)
		}
	}
	return out
}

// Summary is one line: how many schedules ran, how many differ, whether the
// baseline was as expected, and what was dead-lettered.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d schedules differ from the baseline", len(r.Differing()), len(r.Runs))
	if n := len(r.CrashedNothing()); n > 0 {
		fmt.Fprintf(&b, "; %d crash schedule(s) crashed nothing", n)
	}
	if r.BaselineErr != nil {
		b.WriteString("; the baseline's state is not the expected one")
	}
	if ids := r.BaselineStats.DeadLettered(); len(ids) > 0 {
		fmt.Fprintf(&b, "; the baseline dead-lettered %d record(s): %s", len(ids), strings.Join(ids, ", "))
	}
	return b.String()
}

// Err is nil when every run's outcome equals the baseline's, the
// baseline passed Expect, and every crash schedule crashed a call (unless
// the Target has NoRequests); otherwise it starts with the Summary and
// shows each difference.
func (r Report) Err() error {
	diffs, idle := r.Differing(), r.CrashedNothing()
	if len(diffs) == 0 && r.BaselineErr == nil && len(idle) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("replay: ")
	b.WriteString(r.Summary())
	b.WriteString("\n")
	if r.BaselineErr != nil {
		fmt.Fprintf(&b, "baseline (%s): %v\n", AsCaptured, r.BaselineErr)
	}
	for _, run := range idle {
		fmt.Fprintf(&b, "schedule %s: crashed nothing\n", run.Schedule)
	}
	if len(idle) > 0 {
		fmt.Fprintf(&b, "(%s)\n", uncrashed)
	}
	for _, run := range diffs {
		if run.Diff != "" {
			fmt.Fprintf(&b, "schedule %s: derived state differs (-baseline +this run):\n%s\n", run.Schedule, run.Diff)
		}
		if run.DeadLetterDiff != "" {
			fmt.Fprintf(&b, "schedule %s: %s\n", run.Schedule, run.DeadLetterDiff)
		}
	}
	return errors.New(strings.TrimSuffix(b.String(), "\n"))
}

// Check delivers ev into the target as captured (the baseline), checks the
// baseline's state with the Target's Expect if set, and then delivers it
// under the Fixed schedules and every schedule given, resetting the derived
// state before each, and compares each run's state and dead-lettered
// records with the baseline's. opts go to cmp.Diff. An error means a run
// could not be completed (a *ContractError, a *StuckError, a failed Reset
// or State); differences are in the Report.
func Check(ctx context.Context, ev events.DynamoDBEvent, t Target, schedules []Schedule, opts ...cmp.Option) (Report, error) {
	var rep Report
	runOnce := func(s Schedule) (any, Stats, error) {
		if err := t.Reset(ctx); err != nil {
			return nil, Stats{}, fmt.Errorf("replay: reset: %w", err)
		}
		st, err := Deliver(ctx, ev, t, s)
		if err != nil {
			return nil, st, err
		}
		state, err := t.State(ctx)
		if err != nil {
			return nil, st, fmt.Errorf("replay: read state: %w", err)
		}
		return state, st, nil
	}
	base, baseStats, err := runOnce(AsCaptured)
	if err != nil {
		return rep, err
	}
	rep.Baseline, rep.BaselineStats = base, baseStats
	if t.Expect != nil {
		rep.BaselineErr = t.Expect(base)
	}
	baseDead := baseStats.DeadLettered()
	for _, s := range append(Fixed(), schedules...) {
		state, st, err := runOnce(s)
		if err != nil {
			return rep, err
		}
		run := Run{Schedule: s, Stats: st, Diff: cmp.Diff(base, state, opts...), CrashedNothing: s.CrashBetweenRequests && st.Crashes == 0 && !t.NoRequests}
		if dead := st.DeadLettered(); !slices.Equal(dead, baseDead) {
			run.DeadLetterDiff = fmt.Sprintf("dead-lettered %s; the baseline dead-lettered %s", listOrNone(dead), listOrNone(baseDead))
		}
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}

// keyText is a key attribute's value as text (keys are S, N or B).
func keyText(v events.DynamoDBAttributeValue) string {
	switch v.DataType() {
	case events.DataTypeString:
		return strconv.Quote(v.String())
	case events.DataTypeNumber:
		return v.Number()
	case events.DataTypeBinary:
		return base64.StdEncoding.EncodeToString(v.Binary())
	}
	return "?"
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
