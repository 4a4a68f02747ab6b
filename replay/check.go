package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

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
	// Restart, when set, is called after each crashed call (schedules with
	// CrashBetweenRequests), before the next: a handler that keeps state
	// in memory from call to call (a stream.Fanout's record of what each
	// branch finished and how often it failed, a cache) starts it afresh,
	// as the process that died would. The derived state stays. With
	// ParallelizationFactor above 1 a lane's crash restarts the handler
	// while other lanes' calls run on: they finish with the old state.
	Restart func(ctx context.Context) error
	// Source, for a handler that reads the table the stream came from,
	// moves that table through the stream's history so the handler sees
	// it as it was at each point, not in its final state (see
	// SourceTable).
	Source *SourceTable
	// Follow, when set, returns the records the handler's own writes added
	// to the stream since its last call, which the handler also consumes
	// (a derivation made in two steps through the table, as a combiner's
	// pending items that its drains move on). After a schedule's records,
	// Deliver delivers what it returns under the same schedule, again and
	// again until it returns none (at most MaxFollows rounds). Follower
	// makes one from the stream.
	Follow func(ctx context.Context) ([]events.DynamoDBEventRecord, error)
	// State reads the derived state; runs are compared with go-cmp.
	// Check calls it once after each delivery: the baseline's, every
	// schedule's, and the extra ones a Kinesis schedule brings (the
	// baseline with Kinesis's times, a differing run again in order).
	// Delivered(ctx) says which delivery it is called after.
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
	// -baseline +this run). A Kinesis schedule's run is compared with the
	// baseline delivered with Kinesis's microsecond times (and nothing
	// else changed), so that a state that keeps a record's time does not
	// differ by its precision alone.
	Diff string
	// DeadLetterDiff is empty when the run dead-lettered the same records
	// (by eventID) as the baseline — for a bootstrap schedule, records of
	// the same items (Stats.DeadLetteredItems) — otherwise it says which
	// differ.
	DeadLetterDiff string
	// CrashedNothing is true for a schedule with CrashBetweenRequests
	// under which no call was crashed: no call made a request through
	// APIOption or Transport, so the schedule did not test what it is for
	// (never set for a Target with NoRequests).
	CrashedNothing bool
	// AssumesOrder is true for a Kinesis schedule's run that differs from
	// the baseline while the same schedule with Reorder 0 (each item's
	// records in order, repeats kept) agrees: the handler assumes one
	// item's records come in order, which a Kinesis data stream for
	// DynamoDB does not promise.
	AssumesOrder bool
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
		if run.AssumesOrder {
			fmt.Fprintf(&b, "schedule %s: with each item's records in order (Reorder 0, the rest the same) the run agrees: the handler assumes one item's records come in order, which a Kinesis data stream does not promise; derive from the item's version or ApproximateCreationDateTime and refuse to go back\n", run.Schedule)
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
		state, err := t.State(context.WithValue(ctx, deliveredKey{}, Delivery{s, st}))
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
	var kinesisBase any // the baseline with Kinesis's times, run at the first Kinesis schedule
	kinesisRan := false
	for _, s := range append(Fixed(), schedules...) {
		against := base
		if s.kinesis() {
			if !kinesisRan {
				micros := AsCaptured
				micros.Name, micros.micros = "as captured, with Kinesis's times", true
				if kinesisBase, _, err = runOnce(micros); err != nil {
					return rep, err
				}
				kinesisRan = true
			}
			against = kinesisBase
		}
		state, st, err := runOnce(s)
		if err != nil {
			return rep, err
		}
		run := Run{Schedule: s, Stats: st, Diff: cmp.Diff(against, state, opts...), CrashedNothing: s.CrashBetweenRequests && st.Crashes == 0 && !t.NoRequests}
		if s.Bootstrap { // the scan's records name items, not the stream's records
			if dead, baseItems := st.DeadLetteredItems(), baseStats.DeadLetteredItems(); !slices.Equal(dead, baseItems) {
				run.DeadLetterDiff = fmt.Sprintf("dead-lettered records of %s; the baseline of %s", listOrNone(dead), listOrNone(baseItems))
			}
		} else if dead := st.DeadLettered(); !slices.Equal(dead, baseDead) {
			run.DeadLetterDiff = fmt.Sprintf("dead-lettered %s; the baseline dead-lettered %s", listOrNone(dead), listOrNone(baseDead))
		}
		if run.Differs() && s.Reorder > 0 {
			inOrder := s
			inOrder.Reorder = 0
			state, st, err := runOnce(inOrder)
			if err != nil {
				return rep, err
			}
			run.AssumesOrder = cmp.Diff(against, state, opts...) == "" && slices.Equal(st.DeadLettered(), baseDead)
		}
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

type deliveredKey struct{}

// Delivery is one delivery Check made: its schedule and what it did.
type Delivery struct {
	Schedule Schedule
	Stats    Stats
}

// Delivered returns, in a Target's State, the delivery whose state it
// reads (the zero Delivery elsewhere), whichever run Check is at: what a
// State needs that checks an effect against the run's own faults (e-mails
// sent again only after as many crashes), or that reads an order the
// source gives (Schedule.Kinesis).
func Delivered(ctx context.Context) Delivery {
	d, _ := ctx.Value(deliveredKey{}).(Delivery)
	return d
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}
