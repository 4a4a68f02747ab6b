package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// branchLog records what one branch was handed, by eventID.
type branchLog struct {
	mu     sync.Mutex
	handed map[string]int
	order  []string // PKs in the order first handed
}

func (l *branchLog) note(recs []events.DynamoDBEventRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handed == nil {
		l.handed = map[string]int{}
	}
	for _, r := range recs {
		if l.handed[r.EventID] == 0 {
			l.order = append(l.order, r.Change.Keys["PK"].String())
		}
		l.handed[r.EventID]++
	}
}

func (l *branchLog) snapshot() (map[string]int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.handed {
		out[k] = v
	}
	return out, append([]string(nil), l.order...)
}

// Three consumers on one reader, on a real stream: "effects" succeeds on
// everything, "flaky" fails one record twice and then succeeds, "poison"
// fails one record always. The first is handed each record exactly once
// although the others fail; flaky handles its record on the third call;
// poison gives up on its record into its own dead letters after 3 calls
// and goes on; the others' failures never reach the reader (no batch comes
// back, none is dead-lettered whole), and its checkpoint reaches the
// stream's end. A branch's filter
// keeps it to its records.
func TestFanoutBranchesOnOneReader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 30
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))

	var effects, flaky, poison, evens branchLog
	var flakyFails int
	var mu sync.Mutex
	failOn := func(pk string, log *branchLog, fail func() bool) stream.Handler {
		return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			log.note(ev.Records)
			for _, r := range ev.Records {
				if r.Change.Keys["PK"].String() == pk && fail() {
					return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
				}
			}
			return events.DynamoDBEventResponse{}, nil
		}
	}
	evenOnly, err := filter.ParseCriteria(`{"dynamodb":{"NewImage":{"flag":{"BOOL":[true]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	poisonDL := &stream.MemoryDeadLetters{}
	fan := &stream.Fanout{Logger: testLogger(t), Branches: []stream.Branch{
		{Name: "effects", Handler: failOn("", &effects, nil), DeadLetters: &stream.MemoryDeadLetters{}},
		{Name: "flaky", Handler: failOn(itemPK(7), &flaky, func() bool {
			mu.Lock()
			defer mu.Unlock()
			flakyFails++
			return flakyFails <= 2
		}), DeadLetters: &stream.MemoryDeadLetters{}},
		{Name: "poison", Handler: failOn(itemPK(12), &poison, func() bool { return true }), DeadLetters: poisonDL},
		{Name: "evens", Handler: failOn("", &evens, nil), Filter: evenOnly, DeadLetters: &stream.MemoryDeadLetters{}},
	}}
	h, err := fan.Handler()
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, f.c.Streams, f.arn, "fanout")
	r.BatchSize = 10
	run := start(t, r, h)
	waitCheckpoint(t, r.Checkpoints, "fanout", f.shard, oracle[len(oracle)-1])
	run.stop()

	handed, order := effects.snapshot()
	if len(handed) != items {
		t.Errorf("effects was handed %d records, want %d", len(handed), items)
	}
	for id, n := range handed {
		if n != 1 {
			t.Errorf("effects was handed record %s %d times, want once (another branch's failure repeated it)", id, n)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Fatalf("effects was handed records out of order: %v", order)
		}
	}
	if handed, _ := flaky.snapshot(); len(handed) != items {
		t.Errorf("flaky was handed %d records, want %d", len(handed), items)
	}
	if flakyFails != 3 {
		t.Errorf("flaky was called %d times on its record, want 3 (two failures, then done)", flakyFails)
	}
	handedPoison, _ := poison.snapshot()
	if len(handedPoison) != items {
		t.Errorf("poison was handed %d records, want %d: it went on after giving up", len(handedPoison), items)
	}
	dls := poisonDL.All()
	if len(dls) != 1 || dls[0].Consumer != "poison" || dls[0].Attempts != 3 || len(dls[0].Event.Records) != 1 ||
		dls[0].Event.Records[0].Change.Keys["PK"].String() != itemPK(12) || !strings.Contains(dls[0].Error, "failed item") {
		t.Errorf("poison's dead letters %+v, want its one record after 3 attempts", dls)
	}
	if n := len(r.DeadLetters.(*stream.MemoryDeadLetters).All()); n != 0 {
		t.Errorf("the reader dead-lettered %d batch(es): a branch's failure reached it", n)
	}
	if handed, _ := evens.snapshot(); len(handed) != items/2 {
		t.Errorf("evens was handed %d records, want the %d its filter keeps", len(handed), items/2)
	}
	st := fan.Stats()
	if st[0].Handled != items || st[0].NotRepeated != 0 || st[2].DeadLettered != 1 || st[3].FilteredOut != items/2 || st[1].FailedCalls != 2 {
		t.Errorf("stats %+v", st)
	}
}

// A Fanout's branches are checked before it runs.
func TestFanoutRefusesBadBranches(t *testing.T) {
	ok := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	dl := &stream.MemoryDeadLetters{}
	for name, fan := range map[string]*stream.Fanout{
		"no branch":       {},
		"no name":         {Branches: []stream.Branch{{Handler: ok, DeadLetters: dl}}},
		"two of a name":   {Branches: []stream.Branch{{Name: "a", Handler: ok, DeadLetters: dl}, {Name: "a", Handler: ok, DeadLetters: dl}}},
		"no handler":      {Branches: []stream.Branch{{Name: "a", DeadLetters: dl}}},
		"no dead letters": {Branches: []stream.Branch{{Name: "a", Handler: ok}}},
	} {
		if _, err := fan.Handler(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// a handler's error fails the branch's whole call; a panic is an error
	var calls int
	fan := &stream.Fanout{Branches: []stream.Branch{{Name: "a", DeadLetters: dl, MaxAttempts: 2,
		Handler: func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			calls++
			if calls == 1 {
				return events.DynamoDBEventResponse{}, errors.New("down")
			}
			panic("poison")
		}}}}
	h, err := fan.Handler()
	if err != nil {
		t.Fatal(err)
	}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventID: "1", Change: events.DynamoDBStreamRecord{SequenceNumber: "100"}}}}
	if resp, err := h(context.Background(), ev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Errorf("call: %+v, %v; want the record given up on within it", resp, err)
	}
	if got := dl.All(); calls != 2 || len(got) != 1 || !strings.Contains(got[0].Error, "poison") {
		t.Errorf("%d calls, dead letters %+v; want the record after its panic, the second call", calls, got)
	}
}

// A branch that fails a record is handed it again within the same call of
// the Fanout, after RetryDelay doubled at each failure; when it gives up,
// it is handed the records after it at once. The reader sees no failure:
// the branch's give-up uses up none of its retries, so a new Fanout (a
// crash, a cold start) cannot turn the branch's failures into the
// reader's dead letter for every branch.
func TestFanoutRetriesWithinACall(t *testing.T) {
	dl := &stream.MemoryDeadLetters{}
	var handed [][]string
	var waits []time.Duration
	newFanout := func() stream.Handler {
		fan := &stream.Fanout{RetryDelay: 50 * time.Millisecond,
			Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
			Branches: []stream.Branch{{Name: "a", DeadLetters: dl,
				Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
					var seqs []string
					for _, r := range ev.Records {
						seqs = append(seqs, r.Change.SequenceNumber)
					}
					handed = append(handed, seqs)
					if ev.Records[0].Change.SequenceNumber == "100" {
						return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "100"}}}, nil
					}
					return events.DynamoDBEventResponse{}, nil
				}}}}
		h, err := fan.Handler()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	rec := func(seq string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: "id" + seq, Change: events.DynamoDBStreamRecord{SequenceNumber: seq}}
	}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("100"), rec("101"), rec("102")}}
	if resp, err := newFanout()(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("call: %+v, %v; want none failed: 100 given up on, 101 and 102 handled", resp, err)
	}
	if got := fmt.Sprint(handed); got != "[[100 101 102] [100 101 102] [100 101 102] [101 102]]" {
		t.Errorf("the branch was handed %s", got)
	}
	if got := fmt.Sprint(waits); got != "[50ms 100ms]" {
		t.Errorf("waits %s, want 50ms then 100ms", got)
	}
	if got := dl.All(); len(got) != 1 || got[0].Attempts != 3 || got[0].FirstSequenceNumber != "100" {
		t.Errorf("dead letters %+v, want record 100 after 3 attempts", got)
	}

	// a new Fanout, as after a crash: the same, so a reader retrying the
	// batch under any MaximumRetryAttempts never gives up on it
	handed, waits = nil, nil
	pol := stream.Policy{MaxRetries: 0, Bisect: false}
	resp, _ := newFanout()(context.Background(), ev)
	failedAt := -1
	if len(resp.BatchItemFailures) > 0 {
		failedAt = 0
	}
	if _, dead, next := pol.After(stream.Pending{Records: ev.Records}, failedAt, true); dead != nil || next != nil {
		t.Errorf("the reader (MaxRetries 0) dead-lettered %d records, has %d pending: a branch's failure reached it", len(dead), len(next))
	}
	if n := len(dl.All()); n != 2 {
		t.Errorf("%d dead letters, want the branch's second, from the new Fanout", n)
	}

	// the call's context ends during a wait: the record is the reader's
	// again, not given up on
	handed = nil
	ctx, cancel := context.WithCancel(context.Background())
	fan := &stream.Fanout{Sleep: func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() },
		Branches: []stream.Branch{{Name: "a", DeadLetters: dl, Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, errors.New("down")
		}}}}
	h, err := fan.Handler()
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := h(ctx, ev); len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100" {
		t.Errorf("a call whose context ended: %+v, want record 100 failed", resp)
	}
	if n := len(dl.All()); n != 2 {
		t.Errorf("%d dead letters after the context ended, want still 2", n)
	}
}

// A call that fails as a whole blames no record: the branch is handed
// halves of it until the failure is pinned on one record, as Lambda
// bisects a batch ("If the function returns an error, split the batch in
// two and retry": Lambda API Reference, CreateEventSourceMapping,
// BisectBatchOnFunctionError). Records 100–109, a handler that
// errors (or panics) whenever 105 is in its batch: only 105 is
// dead-lettered, every other record finishes once, and 105's attempts are
// only the calls of it alone.
func TestFanoutSplitsAWholeFailure(t *testing.T) {
	for _, how := range []string{"error", "panic"} {
		t.Run(how, func(t *testing.T) {
			dl := &stream.MemoryDeadLetters{}
			var handed []string
			finished := map[string]int{}
			fan := &stream.Fanout{RetryDelay: -1, Branches: []stream.Branch{{Name: "a", DeadLetters: dl,
				Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
					var seqs []string
					for _, r := range ev.Records {
						seqs = append(seqs, r.Change.SequenceNumber)
					}
					handed = append(handed, strings.Join(seqs, ","))
					for _, r := range ev.Records {
						if r.Change.SequenceNumber == "105" {
							if how == "panic" {
								panic("poison")
							}
							return events.DynamoDBEventResponse{}, errors.New("poison")
						}
					}
					for _, s := range seqs {
						finished[s]++
					}
					return events.DynamoDBEventResponse{}, nil
				}}}}
			h, err := fan.Handler()
			if err != nil {
				t.Fatal(err)
			}
			var ev events.DynamoDBEvent
			for i := 100; i < 110; i++ {
				seq := fmt.Sprint(i)
				ev.Records = append(ev.Records, events.DynamoDBEventRecord{EventID: "id" + seq, Change: events.DynamoDBStreamRecord{SequenceNumber: seq}})
			}
			if resp, err := h(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("call: %+v, %v; want none failed", resp, err)
			}
			got := dl.All()
			if len(got) != 1 || got[0].FirstSequenceNumber != "105" || got[0].Attempts != 3 {
				t.Fatalf("dead letters %+v, want 105 alone after 3 attempts", got)
			}
			for i := 100; i < 110; i++ {
				if seq := fmt.Sprint(i); seq != "105" && finished[seq] != 1 {
					t.Errorf("record %s finished %d times, want once", seq, finished[seq])
				}
			}
			want := "100,101,102,103,104,105,106,107,108,109 | 100,101,102,103,104 | 105,106,107,108,109 | 105,106 | 105 | 105 | 105 | 106,107,108,109"
			if g := strings.Join(handed, " | "); g != want {
				t.Errorf("calls\n%s\nwant\n%s", g, want)
			}
			if st := fan.Stats()[0]; st.DeadLettered != 1 || st.Handled != 10 {
				t.Errorf("stats %+v, want 10 handled, 1 of them dead-lettered", st)
			}
		})
	}
}

// A record's waits double up to 30 s, no further; a wait that would
// outlast the call's deadline is not started: the record goes back to the
// reader, not given up on. Attempts are counted within one call: a record
// a call handed back is given its MaxAttempts again in the next call.
func TestFanoutWaitsAreBounded(t *testing.T) {
	dl := &stream.MemoryDeadLetters{}
	var waits []time.Duration
	calls := 0
	var sleep func(context.Context, time.Duration) error
	fan := &stream.Fanout{RetryDelay: 10 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return sleep(ctx, d) },
		Branches: []stream.Branch{{Name: "a", DeadLetters: dl, MaxAttempts: 5,
			Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				calls++
				return events.DynamoDBEventResponse{}, errors.New("down")
			}}}}
	h, err := fan.Handler()
	if err != nil {
		t.Fatal(err)
	}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventID: "id100", Change: events.DynamoDBStreamRecord{SequenceNumber: "100"}}}}

	// the context ends in the second wait: handed back after 2 calls
	ctx, cancel := context.WithCancel(context.Background())
	sleep = func(ctx context.Context, _ time.Duration) error {
		if len(waits) == 2 {
			cancel()
			return ctx.Err()
		}
		return nil
	}
	if resp, _ := h(ctx, ev); len(resp.BatchItemFailures) != 1 || calls != 2 || len(dl.All()) != 0 {
		t.Fatalf("a call whose context ended: %+v after %d calls, %d dead letters; want 100 handed back after 2, none", resp, calls, len(dl.All()))
	}

	// the next call counts from 0: 5 calls, waits 10, 20, 30, 30 s
	calls, waits = 0, nil
	sleep = func(context.Context, time.Duration) error { return nil }
	if resp, _ := h(context.Background(), ev); len(resp.BatchItemFailures) != 0 || calls != 5 {
		t.Fatalf("the next call: %+v after %d calls, want 100 given up on after 5", resp, calls)
	}
	if got := fmt.Sprint(waits); got != "[10s 20s 30s 30s]" {
		t.Errorf("waits %s, want [10s 20s 30s 30s]", got)
	}
	if got := dl.All(); len(got) != 1 || got[0].Attempts != 5 {
		t.Errorf("dead letters %+v, want one after 5 attempts", got)
	}

	// a deadline nearer than the wait: handed back at once, no wait begun
	calls, waits = 0, nil
	dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
	defer dcancel()
	if resp, _ := h(dctx, ev); len(resp.BatchItemFailures) != 1 || calls != 1 || len(waits) != 0 {
		t.Errorf("a wait past the deadline: %+v after %d calls and waits %v; want 100 handed back after 1 call, no wait", resp, calls, waits)
	}
}

// A call that fails as a whole because its context ended (a Lambda
// timeout, a shutdown: handlers return ctx.Err()) hands its first record
// back to the reader, counted as nobody's attempt, on one record and on
// several. And an unknown item identifier fails the call as a whole, as
// Lambda treats it ("Lambda treats a batch as a complete failure if you
// return any of the following: … itemIdentifier with a bad key name":
// Configuring partial batch response with DynamoDB and Lambda): its first
// record is not blamed.
func TestFanoutContextEndsInAWholeFailure(t *testing.T) {
	rec := func(seq string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: "id" + seq, Change: events.DynamoDBStreamRecord{SequenceNumber: seq}}
	}
	for _, n := range []int{1, 3} {
		dl := &stream.MemoryDeadLetters{}
		ctx, cancel := context.WithCancel(context.Background())
		fan := &stream.Fanout{Branches: []stream.Branch{{Name: "a", DeadLetters: dl,
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				cancel()
				return events.DynamoDBEventResponse{}, ctx.Err()
			}}}}
		h, err := fan.Handler()
		if err != nil {
			t.Fatal(err)
		}
		var ev events.DynamoDBEvent
		for i := range n {
			ev.Records = append(ev.Records, rec(fmt.Sprint(100+i)))
		}
		resp, err := h(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100" || len(dl.All()) != 0 {
			t.Errorf("%d records: %+v, %v, %d dead letters; want 100 handed back, none dead-lettered", n, resp, err, len(dl.All()))
		}
	}

	dl := &stream.MemoryDeadLetters{}
	var calls []int
	fan := &stream.Fanout{RetryDelay: -1, Branches: []stream.Branch{{Name: "a", DeadLetters: dl,
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			calls = append(calls, len(ev.Records))
			if len(ev.Records) > 1 {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "nonsense"}}}, nil
			}
			return events.DynamoDBEventResponse{}, nil
		}}}}
	h, err := fan.Handler()
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := h(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("100"), rec("101")}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("call: %+v, %v", resp, err)
	}
	if len(dl.All()) != 0 || fmt.Sprint(calls) != "[2 1 1]" {
		t.Errorf("calls %v, %d dead letters; want the batch split ([2 1 1]), none dead-lettered", calls, len(dl.All()))
	}
}
