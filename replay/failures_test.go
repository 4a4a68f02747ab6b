package replay_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// latestTarget keeps the highest version per item (idempotent, convergent)
// and fails every record whose eventID is in poison: it reports it failed,
// and the records after it in its batch are not handled, as a correct
// handler does.
func latestTarget(poison map[string]bool) (replay.Target, func() map[string]int) {
	var mu sync.Mutex
	latest := map[string]int{}
	h := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range e.Records {
			if poison[r.EventID] {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
			v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
			pk := r.Change.Keys["PK"].String()
			latest[pk] = max(latest[pk], v)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	get := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range latest {
			out[k] = v
		}
		return out
	}
	return replay.Target{
		Handler:    h,
		NoRequests: true,
		Reset:      func(context.Context) error { mu.Lock(); clear(latest); mu.Unlock(); return nil },
		State:      func(context.Context) (any, error) { return get(), nil },
	}, get
}

// A poison record no longer aborts the replay: bisected (the default), it is isolated,
// dead-lettered alone under every schedule (twice delivered, once
// reported), the handler's reason quoted, and the rest is handled.
func TestCheckDeadLettersAPoisonRecord(t *testing.T) {
	ev := stream3x4() // ev-1 … ev-12; ev-11 is B version 4
	target, _ := latestTarget(map[string]bool{"ev-11": true})
	target.OnFailure = replay.OnFailure{MaxRetries: stream.Retries(2)}
	target.Expect = replay.Want(map[string]int{"A": 4, "B": 3, "C": 4})
	rep, err := replay.Check(context.Background(), ev, target, replay.Parallel(replay.Schedules(7, 10), 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if got := rep.BaselineStats.DeadLettered(); len(got) != 1 || got[0] != "ev-11" {
		t.Fatalf("baseline dead-lettered %v", got)
	}
	dl := rep.BaselineStats.DeadLetters[0]
	if !strings.Contains(dl.Error, `the handler reported record "ev-11" (PK="B", SK="META"`) || dl.Attempts != 3 || len(dl.Event.Records) != 1 {
		t.Errorf("dead letter: %+v", dl)
	}
	for _, run := range rep.Runs {
		if got := run.Stats.DeadLettered(); len(got) != 1 || got[0] != "ev-11" {
			t.Errorf("%s dead-lettered %v", run.Schedule, got)
		}
	}
	if got := rep.Summary(); got != "0 of 14 schedules differ from the baseline; the baseline dead-lettered 1 record(s): ev-11" {
		t.Errorf("summary %q", got)
	}
}

// Without bisection (NoBisect), Lambda dead-letters the records after the poison in its
// batch too: which ones depends on the batches, and Check says so.
func TestCheckShowsRecordsLostWithAPoisonRecordWithoutBisect(t *testing.T) {
	target, _ := latestTarget(map[string]bool{"ev-5": true})
	target.OnFailure = replay.OnFailure{MaxRetries: stream.Retries(0), NoBisect: true}
	rep, err := replay.Check(context.Background(), stream3x4(), target, replay.Schedules(1, 10))
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.BaselineStats.DeadLettered(); len(got) != 8 { // ev-5 … ev-12: the rest of the one batch
		t.Fatalf("baseline dead-lettered %v", got)
	}
	err = rep.Err()
	if err == nil || !strings.Contains(err.Error(), "; the baseline dead-lettered ev-10, ev-11, ev-12, ev-5, ev-6") ||
		!strings.HasPrefix(err.Error(), "replay: ") || !strings.Contains(err.Error(), " schedules differ from the baseline") {
		t.Fatalf("%v", err)
	}
}

// A panic is a failed invocation, as Lambda's runtime makes it.
func TestDeliverTreatsAPanicAsAFailure(t *testing.T) {
	calls := 0
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		calls++
		if calls == 1 {
			panic("nil map")
		}
		return events.DynamoDBEventResponse{}, nil
	}
	st, err := replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: h, OnFailure: replay.OnFailure{NoBisect: true}}, replay.AsCaptured)
	if err != nil || calls != 2 || st.HandlerFailures != 1 || len(st.DeadLetters) != 0 {
		t.Fatalf("%d calls, %+v, %v", calls, st, err)
	}
	calls = -100
	_, err = replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		panic("always")
	}, OnFailure: replay.OnFailure{MaxRetries: stream.Retries(stream.Forever), MaxAttempts: 2}}, replay.AsCaptured)
	if err == nil || !strings.Contains(err.Error(), "panic: always") {
		t.Fatal(err)
	}
}

// Injected failures stand for faults a retry cures: they never use up the
// retries, so a handler that always succeeds dead-letters nothing.
func TestInjectedFailuresDoNotUseUpRetries(t *testing.T) {
	target, _ := latestTarget(nil)
	target.OnFailure = replay.OnFailure{MaxRetries: stream.Retries(0), NoBisect: true}
	st, err := replay.Deliver(context.Background(), stream3x4(), target, replay.Schedule{Name: "faulty", MaxBatch: 2, FailureRate: 0.9, Seed: 3})
	if err != nil || st.InjectedFailures == 0 || len(st.DeadLetters) != 0 || st.HandlerFailures != 0 {
		t.Fatalf("%+v, %v", st, err)
	}
}

// A handler that converges on the wrong state passes every schedule; only
// an expected state catches it.
func TestExpectChecksTheBaseline(t *testing.T) {
	sum := map[string]int{}
	target := replay.Target{
		NoRequests: true,
		Handler: func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range e.Records { // keeps the first version seen, not the latest: wrong, but the same every time
				pk := r.Change.Keys["PK"].String()
				if _, ok := sum[pk]; !ok {
					sum[pk], _ = strconv.Atoi(r.Change.NewImage["version"].Number())
				}
			}
			return events.DynamoDBEventResponse{}, nil
		},
		Reset: func(context.Context) error { clear(sum); return nil },
		State: func(context.Context) (any, error) {
			return map[string]int{"A": sum["A"], "B": sum["B"], "C": sum["C"]}, nil
		},
	}
	rep, err := replay.Check(context.Background(), stream3x4(), target, replay.Schedules(5, 5))
	if err != nil || rep.Err() != nil {
		t.Fatalf("without Expect: %v %v", err, rep.Err())
	}
	target.Expect = replay.Want(map[string]int{"A": 4, "B": 4, "C": 4})
	rep, err = replay.Check(context.Background(), stream3x4(), target, replay.Schedules(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	if rep.BaselineErr == nil || !strings.Contains(rep.Err().Error(), "not the expected state") ||
		!strings.Contains(rep.Summary(), "the baseline's state is not the expected one") {
		t.Fatalf("%v", rep.Err())
	}
	target.Expect = func(any) error { return errors.New("custom verdict") }
	rep, _ = replay.Check(context.Background(), stream3x4(), target, nil)
	if !strings.Contains(rep.Err().Error(), "custom verdict") {
		t.Fatalf("%v", rep.Err())
	}
}

// Check always runs the fixed schedules; each catches a common bug alone.
func TestFixedSchedulesAlwaysRun(t *testing.T) {
	calls := map[string]int{}
	target := replay.Target{
		NoRequests: true,
		Handler: func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range e.Records {
				calls[r.Change.Keys["PK"].String()]++ // not idempotent
			}
			return events.DynamoDBEventResponse{}, nil
		},
		Reset: func(context.Context) error { clear(calls); return nil },
		State: func(context.Context) (any, error) { return map[string]int{"A": calls["A"]}, nil },
	}
	rep, err := replay.Check(context.Background(), stream3x4(), target, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, run := range rep.Runs {
		names = append(names, run.Schedule.String())
		// a counter in memory makes no requests: nothing to crash between
		if run.Schedule.MaxBatch != 1 && !run.Differs() {
			t.Errorf("%s did not catch a counter", run.Schedule)
		}
	}
	want := "duplicates only [duplicates, stream order, batches of 100]|batch size 1 [stream order, batches of 1]|" +
		"failure after effects [stream order, batches of 100, each batch's first call fails after its effects]|" +
		"crash between requests [stream order, batches of 1, crashes between requests]"
	if got := strings.Join(names, "|"); got != want {
		t.Errorf("fixed schedules:\n%s\nwant\n%s", got, want)
	}
	if got := rep.Summary(); got != "2 of 4 schedules differ from the baseline" {
		t.Errorf("summary %q", got)
	}
	s := replay.Schedules(9, 1)[0]
	if !strings.HasPrefix(s.String(), "random #1 (seed ") || !strings.Contains(s.String(), "shuffled across items, random batches of 1–") {
		t.Errorf("random schedule %q", s)
	}
}
