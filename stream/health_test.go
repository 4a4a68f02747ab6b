package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream"
)

// clock is a Runner's clock the test moves: Stuck is judged by it, so no
// test waits out a threshold.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const stuckAfter = time.Minute

// healthRunner is newRunner with the test's clock and StuckAfter.
func healthRunner(t *testing.T, api stream.API, arn, consumer string, clk *clock) *stream.Runner {
	r := newRunner(t, api, arn, consumer)
	r.Now = clk.Now
	r.StuckAfter = stuckAfter
	return r
}

func waitStatus(t *testing.T, r *stream.Runner, status string) stream.Health {
	t.Helper()
	var h stream.Health
	waitFor(t, "status "+status, func() bool { h = r.Health(); return h.Status == status })
	return h
}

func TestHealthIdleAndOK(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := newClock()
	if h := (&stream.Runner{}).Health(); h.Status != stream.Idle || len(h.Shards) != 0 || h.StuckAfter != stream.DefaultStuckAfter {
		t.Errorf("a Runner not started: %+v", h)
	}
	putItems(t, f.c.DB, f.table, 0, 10)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 10))
	release := make(chan struct{})
	rec := &recorder{behave: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		<-release
		return events.DynamoDBEventResponse{}, nil
	}}
	r := healthRunner(t, f.c.Streams, f.arn, "health", clk)
	start(t, r, rec.handle)
	waitFor(t, "a handler call", func() bool { return len(rec.snapshot()) == 1 })
	clk.advance(10 * time.Second)
	h := r.Health()
	if h.Status != stream.OK || len(h.Shards) != 1 {
		t.Fatalf("a call under way: %+v", h)
	}
	s := h.Shards[0]
	if s.ShardID != f.shard || s.Waiting != 10 || s.LastRead != oracle[9] || s.Checkpoint != "" || s.OldestWaiting != 10*time.Second {
		t.Errorf("a call under way, shard: %+v", s)
	}
	close(release)
	h = waitStatus(t, r, stream.Idle)
	s = h.Shards[0]
	if s.Waiting != 0 || s.Checkpoint != oracle[9] || s.ConsecutiveFailures != 0 || !s.LastSuccess.Equal(clk.Now()) || h.Stats.RecordsHandled != 10 {
		t.Errorf("caught up: %+v", h)
	}
	// Idle for longer than StuckAfter is not stuck: nothing waits.
	clk.advance(10 * stuckAfter)
	if h := r.Health(); h.Status != stream.Idle {
		t.Errorf("idle for long: %+v", h)
	}
}

// A poison record retried Forever makes the Runner Stuck after StuckAfter,
// with the handler's error; pausing stops the calls, the paused time does
// not count, and resuming carries on.
func TestHealthStuckOnPoisonForever(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := newClock()
	const items, poisonAt = 12, 5
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
	var mu sync.Mutex
	poisoned := true
	rec := &recorder{behave: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			if r.Change.SequenceNumber == oracle[poisonAt] && poisoned {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	r := healthRunner(t, f.c.Streams, f.arn, "stuck", clk)
	r.MaxRetries = stream.Retries(stream.Forever)
	start(t, r, rec.handle)
	var h stream.Health
	waitFor(t, "three failed calls", func() bool { h = r.Health(); return len(h.Shards) == 1 && h.Shards[0].ConsecutiveFailures >= 3 })
	if h.Status != stream.OK || h.Shards[0].Checkpoint != oracle[poisonAt-1] || h.Shards[0].Waiting != items-poisonAt {
		t.Fatalf("failing, not yet for StuckAfter: %+v", h)
	}
	clk.advance(stuckAfter)
	h = r.Health()
	want := fmt.Sprintf("shard %s: %d record(s) waiting and the checkpoint has not moved for 1m0s (", f.shard, items-poisonAt)
	if h.Status != stream.Stuck || !strings.HasPrefix(h.Reason, want) || !strings.Contains(h.Reason, "handler reported 1 failed item(s), lowest "+oracle[poisonAt]) {
		t.Fatalf("stuck: status %s, reason %q, want it to start %q and quote the failure", h.Status, h.Reason, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := r.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	calls := len(rec.snapshot())
	clk.advance(10 * stuckAfter)
	h = r.Health()
	if h.Status != stream.Paused || h.Shards[0].Status != stream.Paused || h.PausedSince.IsZero() {
		t.Fatalf("paused: %+v", h)
	}
	time.Sleep(100 * time.Millisecond) // a retry would have come (RetryBackoff 1 ms)
	if n := len(rec.snapshot()); n != calls {
		t.Fatalf("%d handler calls while paused", n-calls)
	}
	r.Resume()
	if h := r.Health(); h.Status != stream.OK {
		t.Fatalf("just resumed, the paused time counted: %+v", h)
	}
	waitFor(t, "calls after resume", func() bool { return len(rec.snapshot()) > calls })
	mu.Lock()
	poisoned = false
	mu.Unlock()
	waitCheckpoint(t, r.Checkpoints, "stuck", f.shard, oracle[items-1])
	if h := waitStatus(t, r, stream.Idle); h.Shards[0].ConsecutiveFailures != 0 {
		t.Errorf("after the fix: %+v", h)
	}
}

// A handler call that never returns makes the Runner Stuck too.
func TestHealthStuckOnHungHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := newClock()
	putItems(t, f.c.DB, f.table, 0, 3)
	release := make(chan struct{})
	rec := &recorder{behave: func(int, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		<-release
		return events.DynamoDBEventResponse{}, nil
	}}
	r := healthRunner(t, f.c.Streams, f.arn, "hung", clk)
	start(t, r, rec.handle)
	defer close(release)
	waitFor(t, "the call", func() bool { return len(rec.snapshot()) == 1 })
	clk.advance(stuckAfter)
	h := r.Health()
	if h.Status != stream.Stuck || !strings.HasSuffix(h.Reason, "(a handler call has not returned)") {
		t.Fatalf("hung: %+v", h)
	}
	// Pause waits for the call: here it cannot, and says so when its
	// context ends; the Runner is paused all the same.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Pause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Pause with a call that does not return: %v", err)
	}
	if h := r.Health(); h.Status != stream.Paused {
		t.Errorf("after Pause: %+v", h)
	}
}

// failingAPI fails DescribeStream or GetRecords while told to.
type failingAPI struct {
	stream.API
	mu                    sync.Mutex
	describe, getRecords  bool
	describes, getRecsCnt int
}

func (a *failingAPI) set(describe, getRecords bool) {
	a.mu.Lock()
	a.describe, a.getRecords = describe, getRecords
	a.mu.Unlock()
}

func (a *failingAPI) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	a.mu.Lock()
	fail := a.describe
	a.describes++
	a.mu.Unlock()
	if fail {
		return nil, errors.New("injected: describe fails")
	}
	return a.API.DescribeStream(ctx, in, opts...)
}

func (a *failingAPI) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	a.mu.Lock()
	fail := a.getRecords
	a.getRecsCnt++
	a.mu.Unlock()
	if fail {
		return nil, errors.New("injected: get records fails")
	}
	return a.API.GetRecords(ctx, in, opts...)
}

func (a *failingAPI) reads() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.getRecsCnt
}

func TestHealthStuckWhenTheStreamCannotBeRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := newClock()
	api := &failingAPI{API: f.c.Streams}
	r := healthRunner(t, api, f.arn, "unreadable", clk)
	r.ShardRefresh = 20 * time.Millisecond
	rec := &recorder{}
	start(t, r, rec.handle)
	waitFor(t, "the shard idle", func() bool { h := r.Health(); return len(h.Shards) == 1 && h.Status == stream.Idle })

	api.set(false, true)
	var h stream.Health
	waitFor(t, "a failed read", func() bool { h = r.Health(); return h.Shards[0].ReadError != "" })
	if h.Status == stream.Stuck {
		t.Fatalf("stuck at once: %+v", h)
	}
	clk.advance(stuckAfter)
	h = r.Health()
	if h.Status != stream.Stuck || !strings.Contains(h.Reason, "the shard could not be read for 1m0s: injected: get records fails") {
		t.Fatalf("reads failing: %+v", h)
	}
	api.set(false, false)
	waitStatus(t, r, stream.Idle)

	api.mu.Lock()
	api.describe, api.describes = true, 0
	api.mu.Unlock()
	waitFor(t, "two failed describes", func() bool {
		api.mu.Lock()
		defer api.mu.Unlock()
		return api.describes >= 2
	})
	clk.advance(stuckAfter)
	h = r.Health()
	if h.Status != stream.Stuck || h.Reason != "the stream could not be described for 1m0s: stream: describe "+f.arn+": injected: describe fails" {
		t.Fatalf("describe failing: %+v", h)
	}
	api.set(false, false)
	waitStatus(t, r, stream.Idle)
}

// Paused, the Runner finishes the call under way, checkpoints it and reads
// nothing; resumed, it delivers the rest: every record once, in order.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const first, more = 20, 15
	putItems(t, f.c.DB, f.table, 0, first)
	api := &failingAPI{API: f.c.Streams}
	release := make(chan struct{})
	rec := &recorder{behave: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 0 {
			<-release
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	r := newRunner(t, api, f.arn, "pause")
	r.BatchSize = 5
	run := start(t, r, rec.handle)
	waitFor(t, "the first call", func() bool { return len(rec.snapshot()) == 1 })

	paused := make(chan error, 1)
	go func() { paused <- r.Pause(context.Background()) }()
	waitStatus(t, r, stream.Paused)
	select {
	case err := <-paused:
		t.Fatalf("Pause returned (%v) while a call was under way", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, first))
	if cp := checkpointOf(t, r.Checkpoints, "pause", f.shard); cp != oracle[4] {
		t.Errorf("checkpoint when paused = %s, want the first call's last record %s", cp, oracle[4])
	}
	putItems(t, f.c.DB, f.table, first, first+more)
	reads, calls := api.reads(), len(rec.snapshot())
	time.Sleep(200 * time.Millisecond) // ten poll intervals
	if api.reads() != reads || len(rec.snapshot()) != calls {
		t.Fatalf("paused: %d reads, %d calls", api.reads()-reads, len(rec.snapshot())-calls)
	}
	if err := r.Pause(context.Background()); err != nil { // again: no-op
		t.Fatal(err)
	}
	r.Resume()
	r.Resume() // again: no-op
	oracle = rawSeqs(readStream(t, f.c.Streams, f.arn, first+more))
	waitCheckpoint(t, r.Checkpoints, "pause", f.shard, oracle[len(oracle)-1])
	run.stop()
	if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
		t.Fatalf("delivered (-stream +delivered):\n%s", diff)
	}
}

// A Runner paused before it runs reads nothing until resumed.
func TestPauseBeforeRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	putItems(t, f.c.DB, f.table, 0, 5)
	api := &failingAPI{API: f.c.Streams}
	r := newRunner(t, api, f.arn, "prepaused")
	if err := r.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	start(t, r, rec.handle)
	waitFor(t, "the shard", func() bool { return len(r.Health().Shards) == 1 })
	time.Sleep(100 * time.Millisecond)
	if api.reads() != 0 || len(rec.snapshot()) != 0 {
		t.Fatalf("paused before Run: %d reads, %d calls", api.reads(), len(rec.snapshot()))
	}
	r.Resume()
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 5))
	waitCheckpoint(t, r.Checkpoints, "prepaused", f.shard, oracle[4])
}

// refusingSink refuses every dead letter until it is opened.
type refusingSink struct {
	stream.MemoryDeadLetters
	open atomic.Bool
}

func (s *refusingSink) Put(ctx context.Context, dl stream.DeadLetter) error {
	if !s.open.Load() {
		return errors.New("the on-failure queue is gone")
	}
	return s.MemoryDeadLetters.Put(ctx, dl)
}

// A dead-letter sink that refuses is counted (Lambda's
// DestinationDeliveryFailures, "Event source mapping metrics":
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html)
// and shown in Health (the Runner's own): the dead letters
// waiting, since when, why, and Stuck once that is StuckAfter ago; the
// shard waits, so nothing is lost, and the records go to the sink once it
// takes them.
func TestHealthShowsARefusingDeadLetterSink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := newRunner(t, f.c.Streams, f.arn, "sink")
	sink := &refusingSink{}
	r.DeadLetters, r.MaxRetries, r.StuckAfter = sink, stream.Retries(0), 300*time.Millisecond
	putItem(t, f.c.DB, f.table, testItem(1, "1"))
	start(t, r, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, errors.New("poison")
	})
	waitFor(t, "the sink's refusals in Health", func() bool {
		h := r.Health()
		return h.DeadLettersWaiting == 1 && h.Status == stream.Stuck && strings.Contains(h.Reason, "the on-failure queue is gone")
	})
	if h := r.Health(); h.DeadLetterSinkFailingSince.IsZero() || h.Stats.DestinationFailures == 0 || h.Stats.DeadLettered != 0 {
		t.Errorf("health %+v", h)
	}
	sink.open.Store(true)
	waitFor(t, "the dead letter taken", func() bool { return len(sink.All()) == 1 })
	waitFor(t, "Health clear", func() bool { h := r.Health(); return h.DeadLettersWaiting == 0 && h.Status != stream.Stuck })
	if st := r.Stats(); st.DeadLettered != 1 {
		t.Errorf("stats %+v", st)
	}
}

// tooLargeSink finds every dead letter too large for its destination, as
// SQS finds a message over 256 KB ("The minimum message size is 1 byte (1
// character). The maximum is 262,144 bytes (256 KiB)": SQS API Reference,
// SendMessage, MessageBody).
type tooLargeSink struct{ puts atomic.Int64 }

func (s *tooLargeSink) Put(context.Context, stream.DeadLetter) error {
	s.puts.Add(1)
	return fmt.Errorf("the queue takes 262,144 bytes: %w", stream.ErrTooLarge)
}

// A dead letter that its destination finds too large is put in halves;
// one of a single record cannot be split and would never fit: it is given
// up on, its error log line carries it whole, and the shard goes on,
// never retrying it for ever. (The handler fails the first of two
// records, and with no retries and no bisect both are dead-lettered
// together.)
func TestDeadLetterTooLargeAloneIsLogged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := newRunner(t, f.c.Streams, f.arn, "toolarge")
	logs := &syncBuffer{}
	sink := &tooLargeSink{}
	r.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	r.DeadLetters, r.MaxRetries = sink, stream.Retries(0)
	putItem(t, f.c.DB, f.table, testItem(1, "1"))
	putItem(t, f.c.DB, f.table, testItem(2, "2"))
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 2))
	start(t, r, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, rec := range ev.Records {
			if rec.Change.SequenceNumber == oracle[0] {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: oracle[0]}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	})
	waitCheckpoint(t, r.Checkpoints, "toolarge", f.shard, oracle[1])
	if n := sink.puts.Load(); n != 3 {
		t.Errorf("%d puts, want 3: the pair, then each record once", n)
	}
	var logged []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, "too large for its destination even alone") {
			continue
		}
		var line struct {
			DeadLetter string `json:"deadLetter"`
		}
		var dl stream.DeadLetter
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(line.DeadLetter), &dl); err != nil || len(dl.Event.Records) != 1 || dl.Event.Records[0].Change.NewImage == nil {
			t.Fatalf("the log line's dead letter %q (%v), want one record whole", line.DeadLetter, err)
		}
		logged = append(logged, dl.Event.Records[0].Change.SequenceNumber)
	}
	if !slices.Equal(logged, oracle) {
		t.Errorf("records logged %v, want %v", logged, oracle)
	}
	if st := r.Stats(); st.DeadLettered != 2 || st.DestinationFailures != 2 {
		t.Errorf("stats %+v, want 2 dead-lettered, 2 destination failures", st)
	}
}
