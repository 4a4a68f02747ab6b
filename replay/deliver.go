package replay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/idempotency"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

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
	// Repeated and Reordered count what a Kinesis schedule did (Repeat,
	// Reorder): the records it delivered again, and those it delivered
	// after a later record of their item.
	Repeated, Reordered int
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

// DeadLetteredItems are the items of the records given up on, sorted and
// without repeats ("PK=…, SK=…", the keys in name order): how a bootstrap
// schedule's dead letters compare with the baseline's, since a record the
// scan read (stream.SnapshotRecord) has an eventID of its own for the
// item the stream's records name.
func (s Stats) DeadLetteredItems() []string {
	var items []string
	for _, dl := range s.DeadLetters {
		for _, r := range dl.Event.Records {
			names := slices.Sorted(maps.Keys(r.Change.Keys))
			parts := make([]string, len(names))
			for i, n := range names {
				v, _ := json.Marshal(r.Change.Keys[n])
				parts[i] = n + "=" + string(v)
			}
			items = append(items, strings.Join(parts, ", "))
		}
	}
	slices.Sort(items)
	return slices.Compact(items)
}

func (s *Stats) add(o Stats) {
	s.Calls += o.Calls
	s.FilteredOut += o.FilteredOut
	s.RecordsDelivered += o.RecordsDelivered
	s.InjectedFailures += o.InjectedFailures
	s.Crashes += o.Crashes
	s.HandlerFailures += o.HandlerFailures
	s.Repeated += o.Repeated
	s.Reordered += o.Reordered
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
		attempts: attempts, filter: t.Filter, window: t.Window, wh: t.WindowHandler, retryDelay: t.OnFailure.RetryDelay, restart: t.Restart,
		stamped: new(stamp)}
	if d.retryDelay <= 0 {
		d.retryDelay = time.Second
	}
	if t.Source == nil {
		st, err := d.deliver(ctx, ev)
		if err == nil {
			err = d.follow(ctx, t.Follow, &st)
		}
		return st, err
	}
	if d.src, err = newHistory(*t.Source, ev); err != nil {
		return Stats{}, err
	}
	if err := d.src.rewind(ctx); err != nil {
		return Stats{}, err
	}
	st, err := d.deliver(ctx, ev)
	if err == nil {
		err = d.follow(ctx, t.Follow, &st)
	}
	// the table is left in its final state, however the delivery ended
	return st, errors.Join(err, d.src.finish(context.WithoutCancel(ctx)))
}

// MaxFollows bounds the rounds of a Target's Follow in one delivery: a
// handler whose writes keep asking for more writes never settles, and
// Deliver says so.
const MaxFollows = 100

// follow delivers the records next returns, round after round, until it
// returns none, adding their Stats to st.
func (d delivery) follow(ctx context.Context, next func(context.Context) ([]events.DynamoDBEventRecord, error), st *Stats) error {
	if next == nil {
		return nil
	}
	for round := range MaxFollows {
		d.round = round + 1
		recs, err := next(ctx)
		if err != nil {
			return fmt.Errorf("replay: follow: %w", err)
		}
		if len(recs) == 0 {
			return nil
		}
		more, err := d.deliver(ctx, events.DynamoDBEvent{Records: recs})
		st.add(more)
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("replay: follow: the handler's writes still made records after %d rounds", MaxFollows)
}

// deliver plays ev under d's schedule.
func (d delivery) deliver(ctx context.Context, ev events.DynamoDBEvent) (Stats, error) {
	s := d.s
	recs, counts := order(ev, s, int64(d.round)*followSeqs, d.stamped)
	st, err := d.deliverOrdered(ctx, ev, recs)
	st.Repeated, st.Reordered = counts.repeated, counts.reordered
	return st, err
}

// deliverOrdered delivers recs, ev's records in the order the schedule
// gives them.
func (d delivery) deliverOrdered(ctx context.Context, ev events.DynamoDBEvent, recs []events.DynamoDBEventRecord) (Stats, error) {
	s := d.s
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
		if d.wh != nil || d.src != nil || s.Duplicate || s.kinesis() {
			return Stats{}, fmt.Errorf("replay: %s: a bootstrap schedule takes no windows, Source, duplicates or Kinesis delivery", s.Name)
		}
		st, err := d.bootstrap(ctx, ev)
		st.FilteredOut = filteredOut
		return st, err
	}
	if d.wh != nil {
		if s.kinesis() {
			return Stats{}, fmt.Errorf("replay: %s: Kinesis delivery (Reorder, Repeat) with tumbling windows: the kit does not play it yet", s.Name)
		}
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

// followSeqs is how many sequence numbers a Kinesis schedule keeps for
// each round of Follow: a round's numbers follow the round's before it.
const followSeqs = 1_000_000_000

// delivery is one Deliver's settings.
type delivery struct {
	round      int    // the Follow round under way (0: the stream given)
	stamped    *stamp // a Kinesis schedule's latest time, across rounds
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
	// restart is Target.Restart (nil: none)
	restart func(context.Context) error
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
				if d.restart != nil { // the process that died starts again
					if err := d.restart(ctx); err != nil {
						return st, fmt.Errorf("replay: %s: restart after a crash: %w", d.s.Name, err)
					}
				}
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
		if err := d.src.advance(ctx, d.src.newest(batch, s.kinesis())); err != nil {
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
