package stream_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

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

// handleAll hands w a batch and fails the test on any failure.
func handleAll(t *testing.T, w *stream.Windows, recs ...events.DynamoDBEventRecord) {
	t.Helper()
	if resp, err := w.Handle(context.Background(), events.DynamoDBEvent{Records: recs}); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("Handle: %v %v", resp, err)
	}
}

// A record that comes after its window's final call (late on the stream,
// beyond WindowGrace) starts the window again with fresh state, as on
// Lambda, whose state for a window is gone after its final call ("Lambda
// ... passes the state ... until the window's final invocation": Lambda,
// "Using tumbling windows", https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html);
// its second final call has that part only, and LateRecords counts it. A
// batch delivered again from an earlier position starts from the state
// that position had, not from marks of a delivery since undone.
func TestWindowsLateRecordAndRedelivery(t *testing.T) {
	wc := &windowCalls{}
	w := &stream.Windows{Size: time.Minute, Handler: wc.handle}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	handleAll(t, w, windowRecord(1, t0), windowRecord(2, t0.Add(10*time.Second)))
	handleAll(t, w, windowRecord(1, t0), windowRecord(2, t0.Add(10*time.Second))) // delivered again: the same state
	if made, err := w.Due(ctx, t0.Add(2*time.Minute)); !made || err != nil {
		t.Fatalf("Due: %v %v", made, err)
	}
	if got := wc.finalsNow()[t0]; got != 3 {
		t.Fatalf("first final total %d, want 3", got)
	}
	handleAll(t, w, windowRecord(3, t0.Add(59*time.Second))) // late
	if made, _ := w.Due(ctx, t0.Add(2*time.Minute)); !made {
		t.Fatal("no final call for the window started again")
	}
	if got := wc.finalsNow()[t0]; got != 3 {
		t.Errorf("final total after the late record %d, want 3 (its part only, as on Lambda)", got)
	}
	if n := w.LateRecords(); n != 1 {
		t.Errorf("LateRecords %d, want 1", n)
	}
}

// Records of two windows interleaved in stream order (created near the
// boundary: W1, W2, W1, W2) each go into their own window's state, and
// each window gets one final call with its whole, once the stream has
// passed its end by WindowGrace — in one batch or one record a batch.
// AWS documents windows by the records' creation time ("Using tumbling
// windows", https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html) and nothing of records
// that interleave across a boundary: this is the choice made (issue 48).
func TestWindowsInterleaved(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	recs := []events.DynamoDBEventRecord{
		windowRecord(1, t0.Add(59*time.Second)), windowRecord(2, t0.Add(60*time.Second)),
		windowRecord(3, t0.Add(59*time.Second)), windowRecord(4, t0.Add(61*time.Second)),
		windowRecord(5, t0.Add(2*time.Minute+10*time.Second)), // passes W2's end by the grace too
	}
	for _, batch := range []int{5, 2, 1} {
		t.Run(fmt.Sprintf("batches of %d", batch), func(t *testing.T) {
			wc := &windowCalls{}
			w := &stream.Windows{Size: time.Minute, Handler: wc.handle}
			for i := 0; i < len(recs); i += batch {
				handleAll(t, w, recs[i:min(i+batch, len(recs))]...)
			}
			want := map[time.Time]int{t0: 1 + 3, t0.Add(time.Minute): 2 + 4}
			if diff := cmp.Diff(want, wc.finalsNow()); diff != "" {
				t.Errorf("final totals (-want +got):\n%s", diff)
			}
			for start, n := range wc.count {
				if n != 1 {
					t.Errorf("window %s: %d final calls", start.Format(time.TimeOnly), n)
				}
			}
		})
	}
}

// State over the limit ends the window early, as Lambda documents ("If it
// exceeds that size, Lambda terminates the window early": "Using tumbling
// windows", https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html): the final call comes at
// once with IsWindowTerminatedEarly and that state (which state the early
// final call gets is not documented), and the next call of the same window
// starts with fresh state.
func TestWindowsStateOverTheLimitEndsTheWindowEarly(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	type final struct {
		total int
		early bool
	}
	var finals []final
	var fresh []bool // per call with records: whether its state was empty
	h := func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		total, _ := strconv.Atoi(ev.State["total"])
		if ev.IsFinalInvokeForWindow {
			finals = append(finals, final{total, ev.IsWindowTerminatedEarly})
			return events.DynamoDBTimeWindowEventResponse{}, nil
		}
		fresh = append(fresh, len(ev.State) == 0)
		for _, r := range ev.Records {
			i, _ := strconv.Atoi(r.Change.NewImage["i"].Number())
			total += i
		}
		// state grows by 1 KB a record
		pad := strings.Repeat("x", 1024*(len(ev.State["pad"])/1024+len(ev.Records)))
		return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"total": strconv.Itoa(total), "pad": pad}}}, nil
	}
	w := &stream.Windows{Size: time.Minute, Handler: h, MaxState: 2500}
	handleAll(t, w, windowRecord(1, t0))                    // 1 KB
	handleAll(t, w, windowRecord(2, t0.Add(time.Second)))   // 2 KB
	handleAll(t, w, windowRecord(3, t0.Add(2*time.Second))) // 3 KB: over, ends early
	handleAll(t, w, windowRecord(4, t0.Add(3*time.Second))) // the same window, afresh
	if _, err := w.Due(context.Background(), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if want := []final{{6, true}, {4, false}}; !slices.Equal(finals, want) {
		t.Errorf("final calls %v, want %v", finals, want)
	}
	if want := []bool{true, false, false, true}; !slices.Equal(fresh, want) {
		t.Errorf("calls with fresh state %v, want %v", fresh, want)
	}
}

// A final call that keeps failing holds the records after it and is made
// again first at their next delivery, counted against its own window:
// after FinalAttempts, OnGiveUp gets the window (its range and state) and
// the next window's records go on, never failed for it. AWS documents
// nothing of a failing final call (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html): the
// choice made is to spend the window's own retries on it.
func TestWindowsFinalCallGivenUpAsTheWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	wc := &windowCalls{}
	failFinals := true
	h := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		if ev.IsFinalInvokeForWindow && ev.Window.Start.Equal(t0) && failFinals {
			return events.DynamoDBTimeWindowEventResponse{}, fmt.Errorf("sink down")
		}
		return wc.handle(ctx, ev)
	}
	var gaveUp []stream.WindowGiveUp
	w := &stream.Windows{Size: time.Minute, Handler: h, FinalAttempts: 3,
		OnGiveUp: func(_ context.Context, g stream.WindowGiveUp) error { gaveUp = append(gaveUp, g); return nil }}
	handleAll(t, w, windowRecord(1, t0), windowRecord(2, t0.Add(time.Second)))
	next := []events.DynamoDBEventRecord{windowRecord(3, t0.Add(2*time.Minute)), windowRecord(4, t0.Add(2*time.Minute))}
	for attempt := 1; attempt <= 2; attempt++ {
		resp, _ := w.Handle(context.Background(), events.DynamoDBEvent{Records: next})
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != next[0].Change.SequenceNumber {
			t.Fatalf("attempt %d: %v, want the next window's first record held", attempt, resp)
		}
	}
	handleAll(t, w, next...) // the third attempt gives the final call up, and goes on
	if len(gaveUp) != 1 || gaveUp[0].First != windowRecord(1, t0).Change.SequenceNumber || gaveUp[0].Last != windowRecord(2, t0).Change.SequenceNumber ||
		gaveUp[0].State["total"] != "3" || gaveUp[0].Attempts != 3 || !gaveUp[0].Window.Start.Equal(t0) {
		t.Fatalf("given up: %+v", gaveUp)
	}
	if _, err := w.Due(context.Background(), t0.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := wc.finalsNow()[t0.Add(2*time.Minute)]; got != 7 {
		t.Errorf("the next window's final total %d, want 7", got)
	}
}

// A window's state may be as large as Lambda allows ("the maximum allowed
// size for state is 1 MB per shard": https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html), and a
// Runner keeps it with the checkpoint across a restart: TableCheckpoints
// keeps what one item (400 KB) cannot hold in items of its own, and drops
// them when the checkpoint no longer needs them.
func TestRunWindowsKeepsAMegabyteOfState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, table, arn := newTable(t)
	cps := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
	if err := cps.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var finals []int
	big := strings.Repeat("é", 450<<10) // 900 KB of two-byte runes
	h := func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		total, _ := strconv.Atoi(ev.State["total"])
		if ev.IsFinalInvokeForWindow {
			mu.Lock()
			defer mu.Unlock()
			if ev.State["pad"] == big {
				finals = append(finals, total)
			}
			return events.DynamoDBTimeWindowEventResponse{}, nil
		}
		for _, r := range ev.Records {
			i, _ := strconv.Atoi(r.Change.NewImage["i"].Number())
			total += i
		}
		return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"total": strconv.Itoa(total), "pad": big}}}, nil
	}
	skew := time.Duration(0)
	runner := func() *stream.Runner {
		r := newRunner(t, c.Streams, arn, "windows")
		r.Checkpoints, r.TumblingWindow = cps, 15*time.Minute
		r.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
		return r
	}
	shard := shardID(t, c.Streams, arn)
	putItems(t, c.DB, table, 1, 3) // 1+2
	recs := readStream(t, c.Streams, arn, 2)
	r1 := runner()
	ctx1, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r1.RunWindows(ctx1, h) }()
	waitWindowCheckpoint(t, cps, shard, aws.ToString(recs[1].Dynamodb.SequenceNumber))
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cp, err := cps.Get(ctx, "windows", shard); err != nil || len(cp) < 900<<10 {
		t.Fatalf("checkpoint of %d bytes, %v", len(cp), err)
	}

	putItems(t, c.DB, table, 3, 4) // 3, after the restart
	r2 := runner()
	ctx2, stop2 := context.WithCancel(ctx)
	defer stop2()
	go func() { done <- r2.RunWindows(ctx2, h) }()
	recs = readStream(t, c.Streams, arn, 3)
	waitWindowCheckpoint(t, cps, shard, aws.ToString(recs[2].Dynamodb.SequenceNumber))
	mu.Lock()
	skew = 30 * time.Minute // the window has ended
	mu.Unlock()
	waitFor(t, "the final call", func() bool { mu.Lock(); defer mu.Unlock(); return len(finals) > 0 })
	mu.Lock()
	if finals[0] != 6 {
		t.Errorf("final total %d, want 6: the state did not survive the restart", finals[0])
	}
	mu.Unlock()
	// once the window's final call is made the state is small again: the
	// parts are dropped
	waitFor(t, "the parts dropped", func() bool {
		out, err := c.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table + "-checkpoints")})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if s, ok := it["shardId"].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(s.Value, "#state#") {
				return false
			}
		}
		return true
	})
}

// A Runner gives up on a window whose final call keeps failing after its
// retries, as the window's: a dead letter with the window, its state and
// its records' range, and the shard goes on. (Not documented by AWS; the
// choice of TestWindowsFinalCallGivenUpAsTheWindows.)
func TestRunWindowsDeadLettersAFinalCallThatKeepsFailing(t *testing.T) {
	t.Parallel()
	c, table, arn := newTable(t)
	var mu sync.Mutex
	skew := time.Duration(0)
	r := newRunner(t, c.Streams, arn, "windows")
	r.TumblingWindow, r.MaxRetries = time.Minute, stream.Retries(1)
	r.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	finals := 0
	h := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		if ev.IsFinalInvokeForWindow {
			mu.Lock()
			finals++
			mu.Unlock()
			return events.DynamoDBTimeWindowEventResponse{}, fmt.Errorf("the sink is down")
		}
		return (&windowCalls{}).handle(ctx, ev)
	}
	putItems(t, c.DB, table, 1, 3)
	recs := readStream(t, c.Streams, arn, 2)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go r.RunWindows(ctx, h)
	waitWindowCheckpoint(t, r.Checkpoints, shardID(t, c.Streams, arn), aws.ToString(recs[1].Dynamodb.SequenceNumber))
	mu.Lock()
	skew = 3 * time.Minute
	mu.Unlock()
	dl := r.DeadLetters.(*stream.MemoryDeadLetters)
	waitFor(t, "the window dead-lettered", func() bool { return len(dl.All()) == 1 })
	d := dl.All()[0]
	start := stream.WindowOf(aws.ToTime(recs[0].Dynamodb.ApproximateCreationDateTime), time.Minute).Start.Time
	if d.Window == nil || !d.Window.Start.Equal(start) || d.WindowState["total"] != "3" || d.Attempts != 2 ||
		d.FirstSequenceNumber != aws.ToString(recs[0].Dynamodb.SequenceNumber) || d.LastSequenceNumber != aws.ToString(recs[1].Dynamodb.SequenceNumber) {
		t.Errorf("dead letter %+v", d)
	}
	time.Sleep(200 * time.Millisecond) // more polls: given up, the final call is not made again
	mu.Lock()
	defer mu.Unlock()
	if finals != 2 {
		t.Errorf("%d final calls, want 2 (MaxRetries 1)", finals)
	}
}

// A final call that Due makes and that fails is made again only after the
// backoff, so a downstream blip does not use up its attempts in a second.
// The Runner's own pacing: AWS documents no backoff for final calls.
func TestWindowsDueBacksOff(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	finals := 0
	h := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		if ev.IsFinalInvokeForWindow {
			finals++
			return events.DynamoDBTimeWindowEventResponse{}, fmt.Errorf("down")
		}
		return (&windowCalls{}).handle(ctx, ev)
	}
	w := &stream.Windows{Size: time.Minute, Handler: h, RetryBackoff: 10 * time.Second, FinalAttempts: 3,
		OnGiveUp: func(context.Context, stream.WindowGiveUp) error { return nil }}
	handleAll(t, w, windowRecord(1, t0))
	ctx := context.Background()
	at := t0.Add(2 * time.Minute)
	for _, d := range []time.Duration{0, time.Second, 5 * time.Second} { // one call, then the backoff
		_, _ = w.Due(ctx, at.Add(d))
	}
	if finals != 1 {
		t.Fatalf("%d final calls within the first backoff (10 s), want 1", finals)
	}
	_, _ = w.Due(ctx, at.Add(11*time.Second))       // the second
	_, _ = w.Due(ctx, at.Add(21*time.Second))       // not yet: the backoff doubled
	made, err := w.Due(ctx, at.Add(32*time.Second)) // the third, given up on
	if finals != 3 || !made || err != nil {
		t.Errorf("%d final calls; last Due %v %v", finals, made, err)
	}
}

// Over the limit with two windows open, the window with the most state
// ends early, not the small one whose call went over. AWS documents the
// limit per shard (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html) and not which window
// ends: this is the choice made.
func TestWindowsOverTheLimitEndsTheLargest(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	early := map[time.Time]int{}
	h := func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		if ev.IsFinalInvokeForWindow {
			if ev.IsWindowTerminatedEarly {
				early[ev.Window.Start.UTC()]++
			}
			return events.DynamoDBTimeWindowEventResponse{}, nil
		}
		pad := ev.State["pad"] + strings.Repeat("x", 1000*len(ev.Records))
		return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"pad": pad}}}, nil
	}
	w := &stream.Windows{Size: time.Minute, Handler: h, MaxState: 2500}
	// window A (10:00) grows to 2 KB; window B (10:01) takes 1 KB: over
	handleAll(t, w, windowRecord(1, t0.Add(57*time.Second)), windowRecord(2, t0.Add(58*time.Second)), windowRecord(3, t0.Add(61*time.Second)))
	if want := map[time.Time]int{t0: 1}; !maps.Equal(early, want) {
		t.Errorf("windows ended early %v, want only the larger, %v", early, want)
	}
}

// Without ReportBatchItemFailures a failed window call fails its whole
// batch, which is retried (its state comes back by position), as Lambda
// retries a failed function ("Lambda treats all other results as a
// complete failure and retries processing the batch":
// https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html): the window's total stays whole, where
// ignoring the failure (as a handler's own BatchItemFailures are then)
// would lose the call's records.
func TestRunWindowsWithoutReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	c, table, arn := newTable(t)
	var mu sync.Mutex
	skew := time.Duration(0)
	r := newRunner(t, c.Streams, arn, "windows")
	r.TumblingWindow, r.NoReportBatchItemFailures = time.Minute, true
	r.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	wc := &windowCalls{}
	failed := false
	h := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		mu.Lock()
		first := !failed && len(ev.Records) > 0
		failed = failed || first
		mu.Unlock()
		if first {
			return events.DynamoDBTimeWindowEventResponse{}, fmt.Errorf("once")
		}
		return wc.handle(ctx, ev)
	}
	putItems(t, c.DB, table, 1, 4) // 1+2+3
	recs := readStream(t, c.Streams, arn, 3)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go r.RunWindows(ctx, h)
	waitWindowCheckpoint(t, r.Checkpoints, shardID(t, c.Streams, arn), aws.ToString(recs[2].Dynamodb.SequenceNumber))
	mu.Lock()
	skew = 3 * time.Minute
	mu.Unlock()
	want := map[time.Time]int{}
	for i, rec := range recs {
		want[stream.WindowOf(aws.ToTime(rec.Dynamodb.ApproximateCreationDateTime), time.Minute).Start.UTC()] += i + 1
	}
	waitFor(t, "the final calls", func() bool { return len(wc.finalsNow()) == len(want) })
	if diff := cmp.Diff(want, wc.finalsNow()); diff != "" {
		t.Errorf("final totals (-want +got):\n%s", diff)
	}
}

// A Runner that ran windows runs the handler its next Run is given: the
// window handler of RunWindows is that run's, not kept in the Runner for
// the next (issue: a later Run(ctx, h) ran the old window handler instead
// of h). With TumblingWindow still set, Run refuses, as it does on a
// Runner that never ran windows; with it cleared, h gets the records.
// The Runner's own API: AWS documents nothing of it (a mapping's
// TumblingWindowInSeconds is set on the mapping, which has one function).
func TestRunAfterRunWindowsRunsItsOwnHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := newRunner(t, f.c.Streams, f.arn, "reused")
	r.TumblingWindow = time.Minute
	windows := &windowCalls{}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.RunWindows(ended, windows.handle); err != nil {
		t.Fatal(err)
	}
	bounded, stop := context.WithTimeout(context.Background(), 10*time.Second) // a bound on a wrong run, not a timing
	defer stop()
	if err := r.Run(bounded, (&recorder{}).handle); err == nil || !strings.Contains(err.Error(), "use RunWindows") {
		t.Fatalf("Run with TumblingWindow after RunWindows: %v, want the refusal a new Runner gives", err)
	}
	r.TumblingWindow = 0
	rec := &recorder{}
	run := start(t, r, rec.handle)
	putItems(t, f.c.DB, f.table, 0, 3)
	waitFor(t, "the records at the plain handler", func() bool { return len(rec.delivered()) >= 3 })
	run.stop()
	if n := len(windows.finalsNow()); n != 0 {
		t.Errorf("the window handler made %d final calls after its run ended", n)
	}
}
