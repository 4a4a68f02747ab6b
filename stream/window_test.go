package stream_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/dynastream/dynastream/stream"
)

// windowCalls is a windowed consumer that sums the items' i per window and
// records every final call's total.
type windowCalls struct {
	mu     sync.Mutex
	calls  int
	finals map[time.Time]int // window start: total at its final call
	count  map[time.Time]int // window start: its final calls
	early  int
}

func (w *windowCalls) handle(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	total, _ := strconv.Atoi(ev.State["total"])
	if ev.IsFinalInvokeForWindow {
		if w.finals == nil {
			w.finals, w.count = map[time.Time]int{}, map[time.Time]int{}
		}
		w.finals[ev.Window.Start.UTC()] = total
		w.count[ev.Window.Start.UTC()]++
		if ev.IsWindowTerminatedEarly {
			w.early++
		}
		return events.DynamoDBTimeWindowEventResponse{}, nil
	}
	for _, r := range ev.Records {
		i, _ := strconv.Atoi(r.Change.NewImage["i"].Number())
		total += i
	}
	return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
		State: map[string]string{"total": strconv.Itoa(total)}}}, nil
}

func (w *windowCalls) finalsNow() map[time.Time]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[time.Time]int{}
	for k, v := range w.finals {
		out[k] = v
	}
	return out
}

// A Runner runs a windowed consumer as the event source mapping does: the
// state goes from call to call of a window, survives a restart with the
// checkpoint, and the window's final call (made here when the clock passes
// the window's end) has the window's whole total.
func TestRunWindows(t *testing.T) {
	t.Parallel()
	c, table, arn := newTable(t)
	cps := &stream.MemoryCheckpoints{}
	var mu sync.Mutex
	skew := time.Duration(0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(skew)
	}
	wc := &windowCalls{}
	runner := func() *stream.Runner {
		r := newRunner(t, c.Streams, arn, "windows")
		r.Checkpoints, r.TumblingWindow, r.BatchSize, r.Now = cps, time.Minute, 2, clock
		return r
	}
	shard := shardID(t, c.Streams, arn)

	putItems(t, c.DB, table, 1, 4) // 1+2+3
	r1 := runner()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r1.RunWindows(ctx, wc.handle) }()
	recs := readStream(t, c.Streams, arn, 3)
	waitWindowCheckpoint(t, cps, shard, aws.ToString(recs[2].Dynamodb.SequenceNumber))
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cp, _ := cps.Get(context.Background(), "windows", shard); !strings.Contains(cp, "\n") || !strings.Contains(cp, `"total"`) {
		t.Fatalf("the checkpoint keeps no window state: %q", cp)
	}

	putItems(t, c.DB, table, 4, 6) // 4+5, after a restart
	r2 := runner()
	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	go func() { done <- r2.RunWindows(ctx, wc.handle) }()
	recs = readStream(t, c.Streams, arn, 5)
	waitWindowCheckpoint(t, cps, shard, aws.ToString(recs[4].Dynamodb.SequenceNumber))
	mu.Lock()
	skew = 3 * time.Minute // every window has ended: their final calls come
	mu.Unlock()
	want := map[time.Time]int{}
	for i, rec := range recs {
		start := stream.WindowOf(aws.ToTime(rec.Dynamodb.ApproximateCreationDateTime), time.Minute).Start.UTC()
		want[start] += i + 1
	}
	waitFor(t, "the final calls", func() bool { return len(wc.finalsNow()) == len(want) })
	got := wc.finalsNow()
	for start, total := range want {
		if got[start] != total {
			t.Errorf("window %s: final total %d, want %d (finals %v)", start.Format(time.TimeOnly), got[start], total, got)
		}
	}
	time.Sleep(300 * time.Millisecond) // more polls: no final call comes twice
	wc.mu.Lock()
	for start, n := range wc.count {
		if n != 1 {
			t.Errorf("window %s: %d final calls", start.Format(time.TimeOnly), n)
		}
	}
	wc.mu.Unlock()
	if wc.early != 0 {
		t.Errorf("%d windows terminated early; the shard is open", wc.early)
	}
}

// waitWindowCheckpoint waits for a windowed consumer's checkpoint (the
// sequence number, then the window state) to reach seq.
func waitWindowCheckpoint(t *testing.T, cps stream.Checkpoints, shard, seq string) {
	t.Helper()
	waitFor(t, "checkpoint "+seq, func() bool {
		cp, _ := cps.Get(context.Background(), "windows", shard)
		got, _, _ := strings.Cut(cp, "\n")
		return got == seq
	})
}

// Windows take ParallelizationFactor 1 only, and a windowed Runner runs a
// WindowHandler.
func TestWindowsRefusals(t *testing.T) {
	if _, err := (stream.Config{TumblingWindow: time.Minute, ParallelizationFactor: 2}).Settings(); err == nil || !strings.Contains(err.Error(), "ParallelizationFactor 1 only") {
		t.Errorf("ParallelizationFactor 2 with windows: %v", err)
	}
	for _, d := range []time.Duration{-time.Second, 1500 * time.Millisecond, 901 * time.Second} {
		if _, err := (stream.Config{TumblingWindow: d}).Settings(); err == nil {
			t.Errorf("TumblingWindow %s taken", d)
		}
	}
	c, _, arn := newTable(t)
	r := newRunner(t, c.Streams, arn, "refusals")
	r.TumblingWindow = time.Minute
	if err := r.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "RunWindows") {
		t.Errorf("Run with TumblingWindow: %v", err)
	}
}

// WindowOf aligns windows to the Unix epoch.
func TestWindowOf(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 7, 42, 0, time.UTC)
	if w := stream.WindowOf(at, 7*time.Second); w.Start.Unix()%7 != 0 || at.Before(w.Start.Time) || !at.Before(w.End.Time) {
		t.Errorf("7s: %v", w)
	}
	for size, want := range map[time.Duration]string{time.Minute: "10:07:00", 5 * time.Minute: "10:05:00", 900 * time.Second: "10:00:00"} {
		w := stream.WindowOf(at, size)
		if got := w.Start.UTC().Format(time.TimeOnly); got != want || !w.End.Equal(w.Start.Add(size)) {
			t.Errorf("%s: %s..%s, want start %s", size, got, w.End.UTC().Format(time.TimeOnly), want)
		}
	}
}

// windowRecord is a record of item i, created at t.
func windowRecord(i int, t time.Time) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		SequenceNumber: fmt.Sprintf("%021d", i), ApproximateCreationDateTime: events.SecondsEpochTime{Time: t},
		Keys:     map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("K")},
		NewImage: map[string]events.DynamoDBAttributeValue{"i": events.NewNumberAttribute(strconv.Itoa(i))}}}
}

// A record that comes after its window's final call (late on the stream)
// reopens the window with its state, and the window's next final call has
// the whole; a batch delivered again from an earlier position starts from
// the state that position had, not from marks of a delivery since undone.
func TestWindowsLateRecordAndRedelivery(t *testing.T) {
	wc := &windowCalls{}
	w := &stream.Windows{Size: time.Minute, Handler: wc.handle}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	handle := func(recs ...events.DynamoDBEventRecord) {
		t.Helper()
		if resp, err := w.Handle(ctx, events.DynamoDBEvent{Records: recs}); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("Handle: %v %v", resp, err)
		}
	}
	handle(windowRecord(1, t0), windowRecord(2, t0.Add(10*time.Second)))
	handle(windowRecord(1, t0), windowRecord(2, t0.Add(10*time.Second))) // delivered again: the same state
	if made, err := w.Due(ctx, t0.Add(2*time.Minute)); !made || err != nil {
		t.Fatalf("Due: %v %v", made, err)
	}
	if got := wc.finalsNow()[t0]; got != 3 {
		t.Fatalf("first final total %d, want 3", got)
	}
	handle(windowRecord(3, t0.Add(59*time.Second))) // late
	if made, _ := w.Due(ctx, t0.Add(2*time.Minute)); !made {
		t.Fatal("no second final call for the reopened window")
	}
	if got := wc.finalsNow()[t0]; got != 6 {
		t.Errorf("final total after the late record %d, want 6 (the whole window)", got)
	}
}
