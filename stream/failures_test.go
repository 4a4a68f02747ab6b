package stream_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream"
)

// ---------------------------------------------------------------------------
// 3. Partial failure: BatchItemFailures.

func TestBatchItemFailuresResumeAtLowestFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 30
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))

	var failed string // the sequence number reported failed, once
	rec := &recorder{}
	rec.behave = func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if failed != "" || len(ev.Records) < 8 {
			return events.DynamoDBEventResponse{}, nil
		}
		// Report three failures, the lowest neither first nor last: it is
		// the one that counts.
		failed = ev.Records[3].Change.SequenceNumber
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
			{ItemIdentifier: ev.Records[6].Change.SequenceNumber},
			{ItemIdentifier: failed},
			{ItemIdentifier: ev.Records[7].Change.SequenceNumber},
		}}, nil
	}
	cps := &recordingCheckpoints{}
	r := newRunner(t, f.c.Streams, f.arn, "partial")
	r.BatchSize = 10
	r.Checkpoints = cps
	dls := r.DeadLetters.(*stream.MemoryDeadLetters)
	run := start(t, r, rec.handle)
	waitCheckpoint(t, cps, "partial", f.shard, oracle[items-1])
	run.stop()

	calls := rec.snapshot()
	k := slices.IndexFunc(calls, func(c []events.DynamoDBEventRecord) bool { return contains(c, failed) })
	if failed == "" || k < 0 || k+1 >= len(calls) {
		t.Fatalf("the handler never reported a failure followed by a retry (failed=%q, %d calls)", failed, len(calls))
	}
	failedBatch := seqsOf(calls[k])
	at := slices.Index(failedBatch, failed)
	// The retry starts exactly at the lowest failed record.
	if diff := cmp.Diff(failedBatch[at:], seqsOf(calls[k+1])); diff != "" {
		t.Fatalf("retry after the partial failure (-want +got):\n%s", diff)
	}
	// Everything is handled exactly once, except the failed record and those
	// after it in its batch, which came twice.
	var want []string
	for i, c := range calls {
		if i == k {
			want = append(want, failedBatch[:at]...)
			continue
		}
		want = append(want, seqsOf(c)...)
	}
	if diff := cmp.Diff(oracle, want); diff != "" {
		t.Fatalf("records handled (-stream +handled):\n%s", diff)
	}
	counts := map[string]int{}
	for _, q := range rec.delivered() {
		counts[q]++
	}
	for _, q := range oracle {
		wantN := 1
		if slices.Contains(failedBatch[at:], q) {
			wantN = 2
		}
		if counts[q] != wantN {
			t.Errorf("record %s delivered %d times, want %d", q, counts[q], wantN)
		}
	}
	// The records before the failure were checkpointed right after it.
	puts := cps.all()
	if !slices.Contains(puts, failedBatch[at-1]) {
		t.Errorf("checkpoints %v lack %s, the record just before the failure", puts, failedBatch[at-1])
	}
	assertAscending(t, "checkpoints", puts)
	if got := checkpointOf(t, cps, "partial", f.shard); got != oracle[items-1] {
		t.Errorf("final checkpoint %s, want the last record %s", got, oracle[items-1])
	}
	if n := len(dls.All()); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
}

// ---------------------------------------------------------------------------
// 4. Handler errors: bisect, retry limit, dead letters.

func TestPoisonRecord(t *testing.T) {
	t.Parallel()
	const items, poisonAt, maxRetries = 20, 7, 2
	cases := []struct {
		name   string
		bisect bool
		fail   func(seq string) (events.DynamoDBEventResponse, error)
		errHas string
		// retries is MaxRetries (nil: maxRetries); attempts the expected tries.
		retries  *int
		attempts int
	}{
		{"bisect/error", true, func(seq string) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("poison record %s", seq)
		}, "poison record", nil, 0},
		{"bisect/panic", true, func(seq string) (events.DynamoDBEventResponse, error) {
			panic("poison record " + seq)
		}, "handler panicked: poison record", nil, 0},
		{"no bisect", false, func(seq string) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("poison record %s", seq)
		}, "poison record", nil, 0},
		{"bisect/no retries", true, func(seq string) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("poison record %s", seq)
		}, "poison record", stream.Retries(0), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			putItems(t, f.c.DB, f.table, 0, items)
			oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
			poison := oracle[poisonAt]

			rec := &recorder{behave: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				if contains(ev.Records, poison) {
					return tc.fail(poison)
				}
				return events.DynamoDBEventResponse{}, nil
			}}
			r := newRunner(t, f.c.Streams, f.arn, "poison")
			r.BatchSize = 10
			wantAttempts := maxRetries + 1
			r.MaxRetries = stream.Retries(maxRetries)
			if tc.retries != nil {
				r.MaxRetries, wantAttempts = tc.retries, tc.attempts
			}
			r.NoBisect = !tc.bisect
			dls := r.DeadLetters.(*stream.MemoryDeadLetters)
			run := start(t, r, rec.handle)
			// The shard moves on past the poison record to its end.
			waitCheckpoint(t, r.Checkpoints, "poison", f.shard, oracle[items-1])
			run.stop()

			calls := rec.snapshot()
			var handled []string
			var poisoned [][]string
			for _, c := range calls {
				if contains(c, poison) {
					poisoned = append(poisoned, seqsOf(c))
				} else {
					handled = append(handled, seqsOf(c)...)
				}
			}
			assertAscending(t, "successfully handled records", handled)

			all := dls.All()
			if len(all) != 1 {
				t.Fatalf("%d dead letters, want 1: %+v", len(all), all)
			}
			dl := all[0]
			// Without bisect the whole first batch holding the poison record
			// goes; with it, the poison record alone.
			wantDead := []string{poison}
			if !tc.bisect {
				wantDead = poisoned[0]
			}
			if diff := cmp.Diff(wantDead, seqsOf(dl.Event.Records)); diff != "" {
				t.Fatalf("dead-lettered records (-want +got):\n%s", diff)
			}
			var wantHandled []string
			for _, q := range oracle {
				if !slices.Contains(wantDead, q) {
					wantHandled = append(wantHandled, q)
				}
			}
			if diff := cmp.Diff(wantHandled, handled); diff != "" {
				t.Fatalf("handled records (-want +got):\n%s", diff)
			}
			// The dead-lettered batch got MaxRetries+1 attempts of its own.
			attempts := 0
			for _, p := range poisoned {
				if slices.Equal(p, wantDead) {
					attempts++
				}
			}
			if attempts != wantAttempts {
				t.Errorf("the dead-lettered batch was attempted %d times on its own, want %d", attempts, wantAttempts)
			}
			if dl.Attempts != wantAttempts {
				t.Errorf("DeadLetter.Attempts = %d, want %d", dl.Attempts, wantAttempts)
			}
			if dl.FirstSequenceNumber != wantDead[0] || dl.LastSequenceNumber != wantDead[len(wantDead)-1] {
				t.Errorf("DeadLetter sequence numbers %s..%s, want %s..%s", dl.FirstSequenceNumber, dl.LastSequenceNumber, wantDead[0], wantDead[len(wantDead)-1])
			}
			if !strings.Contains(dl.Error, tc.errHas) {
				t.Errorf("DeadLetter.Error = %q, want it to contain %q", dl.Error, tc.errHas)
			}
			if dl.Consumer != "poison" || dl.StreamARN != f.arn || dl.ShardID != f.shard || dl.FailedAt.IsZero() {
				t.Errorf("DeadLetter envelope: consumer=%q arn=%q shard=%q failedAt=%s", dl.Consumer, dl.StreamARN, dl.ShardID, dl.FailedAt)
			}
			// The full record, as the handler saw it.
			for _, got := range dl.Event.Records {
				if diff := cmp.Diff(recordJSON(t, findRecord(calls, got.Change.SequenceNumber)), recordJSON(t, got)); diff != "" {
					t.Errorf("dead-lettered record %s differs from the delivered one:\n%s", got.Change.SequenceNumber, diff)
				}
			}
			c, err := stream.Decode(dl.Event.Records[slices.Index(wantDead, poison)])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(testItem(poisonAt, "1"), c.New, cmpAV...); diff != "" {
				t.Errorf("dead-lettered poison record's new image (-want +got):\n%s", diff)
			}
		})
	}
}

func findRecord(calls [][]events.DynamoDBEventRecord, seq string) events.DynamoDBEventRecord {
	for _, c := range calls {
		for _, r := range c {
			if r.Change.SequenceNumber == seq {
				return r
			}
		}
	}
	panic("no record " + seq)
}

func recordJSON(t testing.TB, r events.DynamoDBEventRecord) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// 5. Unknown item identifiers.

func TestUnknownItemIdentifierFailsWholeBatch(t *testing.T) {
	t.Parallel()
	const items = 10
	unknown := func(seq string) events.DynamoDBEventResponse {
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: seq}}}
	}

	t.Run("retried whole", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		putItems(t, f.c.DB, f.table, 0, items)
		oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
		rec := &recorder{behave: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if call == 0 {
				// A valid failure late in the batch plus an unknown one.
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
					{ItemIdentifier: ev.Records[len(ev.Records)-1].Change.SequenceNumber}, {ItemIdentifier: "no-such-record"},
				}}, nil
			}
			return events.DynamoDBEventResponse{}, nil
		}}
		var mu sync.Mutex
		var stats []stream.BatchStats
		r := newRunner(t, f.c.Streams, f.arn, "unknown")
		r.OnBatch = func(b stream.BatchStats) { mu.Lock(); stats = append(stats, b); mu.Unlock() }
		run := start(t, r, rec.handle)
		waitCheckpoint(t, r.Checkpoints, "unknown", f.shard, oracle[items-1])
		run.stop()

		calls := rec.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d calls, want 2 (the failed batch and its retry)", len(calls))
		}
		if diff := cmp.Diff(oracle, seqsOf(calls[0])); diff != "" {
			t.Fatalf("first call (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(seqsOf(calls[0]), seqsOf(calls[1])); diff != "" {
			t.Fatalf("the retry is not the whole batch (-want +got):\n%s", diff)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(stats) != 2 || !stats[0].Failed || stats[1].Failed {
			t.Errorf("OnBatch stats %+v: want the first failed and the second not", stats)
		}
	})

	t.Run("dead-lettered whole", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		putItems(t, f.c.DB, f.table, 0, items)
		oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
		rec := &recorder{behave: func(int, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return unknown("no-such-record"), nil
		}}
		r := newRunner(t, f.c.Streams, f.arn, "unknown")
		r.MaxRetries = stream.Retries(1)
		dls := r.DeadLetters.(*stream.MemoryDeadLetters)
		run := start(t, r, rec.handle)
		waitCheckpoint(t, r.Checkpoints, "unknown", f.shard, oracle[items-1])
		run.stop()

		all := dls.All()
		if len(all) != 1 {
			t.Fatalf("%d dead letters, want 1", len(all))
		}
		if diff := cmp.Diff(oracle, seqsOf(all[0].Event.Records)); diff != "" {
			t.Errorf("dead-lettered records (-want +got):\n%s", diff)
		}
		if !strings.Contains(all[0].Error, `unknown item "no-such-record"`) || all[0].Attempts != 2 {
			t.Errorf("dead letter error %q after %d attempts", all[0].Error, all[0].Attempts)
		}
		for i, c := range rec.snapshot() {
			if diff := cmp.Diff(oracle, seqsOf(c)); diff != "" {
				t.Errorf("call %d is not the whole batch (-want +got):\n%s", i, diff)
			}
		}
	})
}
