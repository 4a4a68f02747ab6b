package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

func stream3x4() events.DynamoDBEvent { return streamOf(4, "A", "B", "C") }

func versions(recs []events.DynamoDBEventRecord) map[string][]int {
	out := map[string][]int{}
	for _, r := range recs {
		v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
		pk := r.Change.Keys["PK"].String()
		out[pk] = append(out[pk], v)
	}
	return out
}

func seqs(recs []events.DynamoDBEventRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Change.SequenceNumber
	}
	return out
}

func TestOrderKeepsPerItemOrder(t *testing.T) {
	ev := stream3x4()
	for _, s := range replay.Schedules(7, 50) {
		got := versions(replay.Order(ev, s))
		want := []int{1, 2, 3, 4}
		if s.Duplicate {
			want = []int{1, 2, 3, 4, 1, 2, 3, 4}
		}
		for _, pk := range []string{"A", "B", "C"} {
			if diff := cmp.Diff(want, got[pk]); diff != "" {
				t.Fatalf("%s: item %s order (-want +got):\n%s", s.Name, pk, diff)
			}
		}
	}
}

func TestOrderShufflesAcrossItems(t *testing.T) {
	ev := stream3x4()
	s := replay.Schedule{Shuffle: true, Seed: 1}
	same := 0
	for seed := uint64(1); seed <= 20; seed++ {
		s.Seed = seed
		if cmp.Equal(seqs(replay.Order(ev, s)), seqs(ev.Records)) {
			same++
		}
	}
	if same == 20 {
		t.Fatal("20 shuffles all kept the captured order")
	}
}

// Deliver retries a batch from the lowest record the handler reports failed,
// and never skips a record.
func TestDeliverRetriesFromLowestFailure(t *testing.T) {
	ev := stream3x4()
	seen := map[string]int{}
	failOnce := map[string]bool{ev.Records[3].Change.SequenceNumber: true, ev.Records[7].Change.SequenceNumber: true}
	var calls [][]string
	h := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		var resp events.DynamoDBEventResponse
		var call []string
		for _, r := range e.Records {
			seq := r.Change.SequenceNumber
			call = append(call, seq)
			if failOnce[seq] {
				delete(failOnce, seq)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
				continue
			}
			seen[seq]++
		}
		calls = append(calls, call)
		return resp, nil
	}
	st, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: h, OnFailure: replay.OnFailure{NoBisect: true}}, replay.Schedule{MaxBatch: 6})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.Records {
		if seen[r.Change.SequenceNumber] == 0 {
			t.Errorf("record %s never handled", r.Change.SequenceNumber)
		}
	}
	// batch 1 = records 0..5, failure at 3 → retry 3..5; batch 2 = 6..11, failure at 7 → retry 7..11
	if st.Calls != 4 {
		t.Fatalf("calls = %d, want 4: %v", st.Calls, calls)
	}
	if calls[1][0] != ev.Records[3].Change.SequenceNumber || len(calls[1]) != 3 {
		t.Fatalf("retry did not start at the failed record: %v", calls[1])
	}
}

func TestDeliverGivesUpOnAHandlerThatAlwaysFails(t *testing.T) {
	calls := 0
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		calls++
		return events.DynamoDBEventResponse{}, errors.New("boom")
	}
	// without bisection: three retries (the default), then the batch is dead-lettered, with the handler's error
	st, err := replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: h, OnFailure: replay.OnFailure{NoBisect: true}}, replay.AsCaptured)
	if err != nil || calls != 4 || len(st.DeadLetters) != 1 || len(st.DeadLetters[0].Event.Records) != 12 || st.HandlerFailures != 4 {
		t.Fatalf("%d calls, %+v, %v", calls, st, err)
	}
	if dl := st.DeadLetters[0]; !strings.Contains(dl.Error, "boom") || !strings.Contains(dl.Error, `record "ev-1" (PK="A", SK="META"`) || dl.Attempts != 4 {
		t.Errorf("dead letter: %+v", dl)
	}
	// no retries
	calls = 0
	if st, err := replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: h, OnFailure: replay.OnFailure{MaxRetries: stream.Retries(0), NoBisect: true}}, replay.AsCaptured); err != nil || calls != 1 || len(st.DeadLetters) != 1 {
		t.Fatalf("no retries: %d calls, %v", calls, err)
	}
	// forever: where Lambda would stop the shard, the delivery ends quoting the handler
	calls = 0
	_, err = replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: h, OnFailure: replay.OnFailure{MaxRetries: stream.Retries(stream.Forever), MaxAttempts: 7, NoBisect: true}}, replay.AsCaptured)
	var se *replay.StuckError
	if !errors.As(err, &se) || calls != 7 || se.Attempts != 7 || se.Record.EventID != "ev-1" || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), `PK="A"`) {
		t.Fatalf("Forever: %d calls, %v", calls, err)
	}
	if _, err := replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: h, OnFailure: replay.OnFailure{MaxRetries: stream.Retries(-3)}}, replay.AsCaptured); err == nil {
		t.Fatal("MaxRetries -3 accepted")
	}
	// the default bisects: each record is dead-lettered alone, after its own three retries
	calls = 0
	st, err = replay.Deliver(context.Background(), stream3x4(), replay.Target{Handler: h}, replay.AsCaptured)
	if err != nil || len(st.DeadLetters) != 12 || len(st.DeadLetters[0].Event.Records) != 1 || st.DeadLetters[0].Attempts != 4 {
		t.Fatalf("bisected: %d calls, %d dead letters, %v", calls, len(st.DeadLetters), err)
	}
}

// A projection that is not idempotent (a plain counter) is caught.
func TestCheckCatchesANonIdempotentHandler(t *testing.T) {
	count := 0
	target := replay.Target{
		Handler: func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			count += len(e.Records)
			return events.DynamoDBEventResponse{}, nil
		},
		Reset: func(context.Context) error { count = 0; return nil },
		State: func(context.Context) (any, error) { return count, nil },
	}
	rep, err := replay.Check(context.Background(), stream3x4(), target, replay.Schedules(3, 20))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() == nil {
		t.Fatal("a counting handler passed 20 schedules with duplicates and failures")
	}
}

func TestSaveLoad(t *testing.T) {
	ev := stream3x4()
	path := filepath.Join(t.TempDir(), "stream.json")
	if err := replay.Save(path, ev); err != nil {
		t.Fatal(err)
	}
	got, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(ev)
	have, _ := json.Marshal(got)
	if string(want) != string(have) {
		t.Fatalf("loaded event differs:\n%s\n%s", want, have)
	}
}

// With a ParallelizationFactor, lanes are delivered at the same time: calls
// overlap, each partition key's records still come in order and never in
// two calls at once, and every record is delivered.
func TestDeliverParallelLanes(t *testing.T) {
	var ev events.DynamoDBEvent
	seq := 0
	for v := 1; v <= 6; v++ {
		for k := range 12 {
			seq++
			ev.Records = append(ev.Records, record(seq, "K"+strconv.Itoa(k), v))
		}
	}
	var mu sync.Mutex
	inFlight, peak := 0, 0
	busy := map[string]bool{}
	got := map[string][]int{}
	var clash string
	h := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mine := map[string]bool{}
		for _, r := range e.Records {
			pk := r.Change.Keys["PK"].String()
			if busy[pk] && !mine[pk] && clash == "" {
				clash = "key " + pk + " in two calls at once"
			}
			busy[pk], mine[pk] = true, true
		}
		for pk, vs := range versions(e.Records) {
			got[pk] = append(got[pk], vs...)
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inFlight--
		for pk := range mine {
			delete(busy, pk)
		}
		mu.Unlock()
		return events.DynamoDBEventResponse{}, nil
	}
	ss := replay.Parallel([]replay.Schedule{{Name: "lanes", MaxBatch: 3}}, 4)
	if !strings.HasSuffix(ss[0].Name, "parallelization 4") {
		t.Errorf("name %q", ss[0].Name)
	}
	st, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: h}, ss[0])
	if err != nil {
		t.Fatal(err)
	}
	if clash != "" {
		t.Fatal(clash)
	}
	if peak < 2 || peak > 4 {
		t.Errorf("%d calls at once with 4 lanes", peak)
	}
	if st.RecordsDelivered != len(ev.Records) {
		t.Errorf("%d records delivered, want %d", st.RecordsDelivered, len(ev.Records))
	}
	for k := range 12 {
		if diff := cmp.Diff([]int{1, 2, 3, 4, 5, 6}, got["K"+strconv.Itoa(k)]); diff != "" {
			t.Errorf("key K%d (-want +got):\n%s", k, diff)
		}
	}
	if _, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: h}, replay.Schedule{ParallelizationFactor: 11}); err == nil {
		t.Error("ParallelizationFactor 11 accepted")
	}
}
