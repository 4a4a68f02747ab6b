package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/internal/prop"
)

// rec is a record of partition key pk with sequence number seq.
func rec(seq int, pk string) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID: fmt.Sprintf("ev-%d", seq), EventName: "INSERT",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprintf("%021d", seq),
			Keys: map[string]events.DynamoDBAttributeValue{
				"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute(fmt.Sprint(seq)),
			},
		},
	}
}

func pkOf(r events.DynamoDBEventRecord) string { return r.Change.Keys["PK"].String() }

// applied records what a handler applied, in order, per key, and checks
// the ordering rule as it goes: a record is applied only after every earlier
// record of its key was.
type applied struct {
	mu        sync.Mutex
	order     map[string][]string // key → sequence numbers, first applications
	done      map[string]bool
	all       []events.DynamoDBEventRecord // the stream
	dead      func(seq string) bool        // dead-lettered records count as done (nil: none)
	violation string
	running   atomic.Int32
	peak      atomic.Int32
}

func newApplied(all []events.DynamoDBEventRecord) *applied {
	return &applied{order: map[string][]string{}, done: map[string]bool{}, all: all}
}

func (a *applied) apply(r events.DynamoDBEventRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seq := r.Change.SequenceNumber
	for _, earlier := range a.all {
		if earlier.Change.SequenceNumber >= seq {
			break
		}
		if pkOf(earlier) == pkOf(r) && !a.done[earlier.Change.SequenceNumber] && (a.dead == nil || !a.dead(earlier.Change.SequenceNumber)) && a.violation == "" {
			a.violation = fmt.Sprintf("record %s of key %s applied before the earlier %s", seq, pkOf(r), earlier.Change.SequenceNumber)
		}
	}
	if !a.done[seq] {
		a.done[seq] = true
		a.order[pkOf(r)] = append(a.order[pkOf(r)], seq)
	}
}

func (a *applied) enter() {
	n := a.running.Add(1)
	for {
		p := a.peak.Load()
		if n <= p || a.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// One call: each key's records are applied in order up to its first
// failure and not beyond; keys without a failure run to their end; the
// response names exactly the first failure of each failed key; at most
// Concurrency groups run at once.
func TestKeyedOneBatch(t *testing.T) {
	prop.Check(t, func(t *prop.T) {
		n := prop.IntRange(1, 60).Draw(t, "records")
		nkeys := prop.IntRange(1, 8).Draw(t, "keys")
		conc := prop.IntRange(1, 8).Draw(t, "concurrency")
		var recs []events.DynamoDBEventRecord
		fails := map[string]bool{}
		for i := range n {
			r := rec(i, fmt.Sprintf("k%d", prop.IntRange(0, nkeys-1).Draw(t, "key")))
			recs = append(recs, r)
			if prop.IntRange(0, 6).Draw(t, "fail") == 0 {
				fails[r.Change.SequenceNumber] = true
			}
		}
		a := newApplied(recs)
		h := stream.Keyed{Concurrency: conc}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
			a.enter()
			defer a.running.Add(-1)
			time.Sleep(time.Duration(len(r.Change.SequenceNumber)%3) * 10 * time.Microsecond)
			if fails[r.Change.SequenceNumber] {
				return errors.New("boom")
			}
			a.apply(r)
			return nil
		}))
		resp, err := h(context.Background(), events.DynamoDBEvent{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		if a.violation != "" {
			t.Fatal(a.violation)
		}
		wantOrder := map[string][]string{}
		var wantFailed []string
		stopped := map[string]bool{}
		for _, r := range recs {
			k, seq := pkOf(r), r.Change.SequenceNumber
			if stopped[k] {
				continue
			}
			if fails[seq] {
				stopped[k] = true
				wantFailed = append(wantFailed, seq)
				continue
			}
			wantOrder[k] = append(wantOrder[k], seq)
		}
		for k, want := range wantOrder {
			if !slices.Equal(a.order[k], want) {
				t.Fatalf("key %s applied %v, want %v", k, a.order[k], want)
			}
		}
		var got []string
		for _, f := range resp.BatchItemFailures {
			got = append(got, f.ItemIdentifier)
		}
		slices.Sort(got)
		if !slices.Equal(got, wantFailed) {
			t.Fatalf("batch item failures %v, want %v", got, wantFailed)
		}
		if p := a.peak.Load(); p > int32(conc) {
			t.Fatalf("%d groups ran at once, Concurrency %d", p, conc)
		}
	})
}

// Delivered as Lambda delivers — again from the lowest reported failure
// until nothing fails, failures drawn anew on every attempt — every record
// is applied, each only after every earlier record of its key, and the
// position Lambda would checkpoint never passes a record not yet applied.
func TestKeyedRedelivery(t *testing.T) {
	prop.Check(t, func(t *prop.T) {
		n := prop.IntRange(1, 40).Draw(t, "records")
		nkeys := prop.IntRange(1, 5).Draw(t, "keys")
		var recs []events.DynamoDBEventRecord
		for i := range n {
			recs = append(recs, rec(i, fmt.Sprintf("k%d", prop.IntRange(0, nkeys-1).Draw(t, "key"))))
		}
		a := newApplied(recs)
		var mu sync.Mutex
		fail := map[string]bool{} // this attempt's failures
		h := stream.Keyed{Concurrency: prop.IntRange(1, 6).Draw(t, "concurrency")}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
			mu.Lock()
			f := fail[r.Change.SequenceNumber]
			mu.Unlock()
			if f {
				return errors.New("transient")
			}
			a.apply(r)
			return nil
		}))
		batch := recs
		for attempt := 0; len(batch) > 0; attempt++ {
			if attempt > 200 {
				t.Fatal("no progress after 200 attempts")
			}
			mu.Lock()
			clear(fail)
			for _, r := range batch {
				if attempt < 50 && prop.IntRange(0, 4).Draw(t, "fail") == 0 {
					fail[r.Change.SequenceNumber] = true
				}
			}
			mu.Unlock()
			resp, _ := h(context.Background(), events.DynamoDBEvent{Records: batch})
			lowest := len(batch)
			for _, f := range resp.BatchItemFailures {
				i := slices.IndexFunc(batch, func(r events.DynamoDBEventRecord) bool { return r.Change.SequenceNumber == f.ItemIdentifier })
				if i < 0 {
					t.Fatalf("unknown failure %s", f.ItemIdentifier)
				}
				lowest = min(lowest, i)
			}
			// Lambda checkpoints everything before the lowest failure.
			for _, r := range batch[:lowest] {
				if !a.done[r.Change.SequenceNumber] {
					t.Fatalf("checkpoint passes %s, which was never applied", r.Change.SequenceNumber)
				}
			}
			batch = batch[lowest:]
		}
		if a.violation != "" {
			t.Fatal(a.violation)
		}
		for _, r := range recs {
			if !a.done[r.Change.SequenceNumber] {
				t.Fatalf("record %s never applied", r.Change.SequenceNumber)
			}
		}
	})
}

func TestKeyedGroupFuncContract(t *testing.T) {
	recs := []events.DynamoDBEventRecord{rec(1, "a"), rec(2, "a"), rec(3, "b"), rec(4, "c"), rec(5, "d"), rec(6, "a")}
	res := stream.Keyed{}.Run(context.Background(), recs, func(_ context.Context, g stream.Group) (int, error) {
		switch g.Key {
		case "a":
			return 1, errors.New("second record of a failed")
		case "b":
			panic("b is poison")
		case "c":
			return 0, nil // stopped without saying why
		default:
			return 7, nil // more than it had
		}
	})
	got := map[string]string{}
	for _, o := range res {
		msg := "ok"
		if o.Failed() {
			msg = fmt.Sprintf("stopped at %s: %v", o.Records[o.Done].Change.SequenceNumber, o.Err)
		}
		got[o.Key] = msg
	}
	checks := map[string]string{
		"a": "stopped at 000000000000000000002: second record of a failed",
		"b": "stopped at 000000000000000000003: group \"b\": panic: b is poison",
		"c": "stopped at 000000000000000000004: group \"c\": stopped at record 0 of 1 without an error",
		"d": "stopped at 000000000000000000005: group \"d\": GroupFunc finished 7 of 1 records",
	}
	for k, want := range checks {
		if !strings.HasPrefix(got[k], want) {
			t.Errorf("group %s: %q, want it to start with %q", k, got[k], want)
		}
	}
	if len(res) != 4 || len(res[0].Records) != 3 {
		t.Errorf("groups %+v: want a (3 records), b, c, d", res)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "b is poison") {
		t.Errorf("Err() = %v", err)
	}
	if n := len(res.Response().BatchItemFailures); n != 4 {
		t.Errorf("%d batch item failures, want 4", n)
	}

	// Fail stops a group earlier than where it stopped, never later.
	res[0].Done, res[0].Err = 3, nil
	res.Fail(0, 2, errors.New("shared write failed"))
	res.Fail(0, 2, errors.New("later news")) // not earlier: ignored
	if res[0].Done != 2 || res[0].Err.Error() != "shared write failed" {
		t.Errorf("after Fail: done %d, err %v", res[0].Done, res[0].Err)
	}

	// A cancelled context: nothing runs, every group fails.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Bool
	res = stream.Keyed{Concurrency: 1}.Run(ctx, recs, func(context.Context, stream.Group) (int, error) { ran.Store(true); return 0, nil })
	for _, o := range res {
		if !errors.Is(o.Err, context.Canceled) || o.Done != 0 {
			t.Errorf("group %s after cancel: done %d, err %v", o.Key, o.Done, o.Err)
		}
	}
	if ran.Load() {
		t.Error("a group ran after the context was cancelled")
	}
}

func TestPartitionAndItemKeys(t *testing.T) {
	r := events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{
		"id": events.NewNumberAttribute("42"), "sort": events.NewBinaryAttribute([]byte{1, 2}),
	}}}
	if got := stream.PartitionKey("id")(r); got != "42" {
		t.Errorf("PartitionKey(id) = %q", got)
	}
	if got, want := stream.PartitionKey("PK")(r), stream.ItemKey(r); got != want {
		t.Errorf("PartitionKey(PK) of a record without PK = %q, want its item key %q", got, want)
	}
	if got := stream.ItemKey(r); got != "id=42\x00sort=AQI=\x00" {
		t.Errorf("ItemKey = %q", got)
	}
}

// A record failing with a Permanent error is dead-lettered at once and its
// group goes on with the next record; the GroupFunc sees the rest with
// Offset set, so Result.Fail still names the right record. Without
// DeadLetters the same error stops the group.
func TestKeyedDeadLettersPermanentFailuresAtOnce(t *testing.T) {
	recs := []events.DynamoDBEventRecord{rec(1, "a"), rec(2, "a"), rec(3, "b"), rec(4, "a"), rec(5, "a")}
	poison := map[string]bool{recs[1].Change.SequenceNumber: true, recs[4].Change.SequenceNumber: true}
	handle := func(seen *[]string, offsets *[]int) stream.GroupFunc {
		var mu sync.Mutex
		return func(_ context.Context, g stream.Group) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			*offsets = append(*offsets, g.Offset)
			for i, r := range g.Records {
				if poison[r.Change.SequenceNumber] {
					return i, fmt.Errorf("decode %s: %w", r.Change.SequenceNumber, stream.Permanent(errors.New("bad image")))
				}
				*seen = append(*seen, r.Change.SequenceNumber)
			}
			return len(g.Records), nil
		}
	}
	var dls stream.MemoryDeadLetters
	var seen []string
	var offsets []int
	res := stream.Keyed{Concurrency: 1, DeadLetters: &dls, Consumer: "test"}.Run(context.Background(), recs, handle(&seen, &offsets))
	if f := res.Response().BatchItemFailures; len(f) != 0 {
		t.Fatalf("failures %v, want none (poison records dead-lettered)", f)
	}
	if want := []string{recs[0].Change.SequenceNumber, recs[3].Change.SequenceNumber, recs[2].Change.SequenceNumber}; !slices.Equal(seen, want) {
		t.Errorf("handled %v, want %v", seen, want)
	}
	if want := []int{0, 2, 0}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	all := dls.All()
	if len(all) != 2 || all[0].Event.Records[0].Change.SequenceNumber != recs[1].Change.SequenceNumber ||
		all[1].Event.Records[0].Change.SequenceNumber != recs[4].Change.SequenceNumber {
		t.Fatalf("dead letters %+v, want records 2 and 5", all)
	}
	if dl := all[0]; dl.Consumer != "test" || !strings.Contains(dl.Error, "bad image") || dl.Attempts != 1 {
		t.Errorf("dead letter %+v: want consumer, error and one attempt", dl)
	}
	if n := len(res[0].DeadLettered); n != 2 || res[0].Done != 4 || len(res.DeadLettered()) != 2 {
		t.Errorf("group a: done %d, dead-lettered %d; want 4 and 2", res[0].Done, n)
	}
	// A shared write failing afterwards for record 4 (position 2 of group a)
	// stops the group there.
	res.Fail(0, 2, errors.New("write failed"))
	if f := res.Response().BatchItemFailures; len(f) != 1 || f[0].ItemIdentifier != recs[3].Change.SequenceNumber {
		t.Errorf("after Fail: %v, want record 4", f)
	}

	seen, offsets = nil, nil
	res = stream.Keyed{Concurrency: 1}.Run(context.Background(), recs, handle(&seen, &offsets))
	if f := res.Response().BatchItemFailures; len(f) != 1 || f[0].ItemIdentifier != recs[1].Change.SequenceNumber || !stream.IsPermanent(res[0].Err) {
		t.Errorf("without dead letters: failures %v (err %v), want record 2, permanent", f, res[0].Err)
	}
}

// A dead letter that cannot be written leaves the record failed.
func TestKeyedPermanentFailureStaysWhenDeadLetterFails(t *testing.T) {
	recs := []events.DynamoDBEventRecord{rec(1, "a"), rec(2, "a")}
	res := stream.Keyed{DeadLetters: failingDeadLetters{}}.Run(context.Background(), recs, func(_ context.Context, g stream.Group) (int, error) {
		return 0, stream.Permanent(errors.New("bad"))
	})
	if f := res.Response().BatchItemFailures; len(f) != 1 || f[0].ItemIdentifier != recs[0].Change.SequenceNumber {
		t.Fatalf("failures %v, want record 1", f)
	}
	if !strings.Contains(res[0].Err.Error(), "dead letter failed") {
		t.Errorf("err %v: want the dead letter's failure named", res[0].Err)
	}
}

type failingDeadLetters struct{}

func (failingDeadLetters) Put(context.Context, stream.DeadLetter) error {
	return errors.New("queue unavailable")
}

// saysPermanent is an error of another library that says it is permanent.
type saysPermanent bool

func (s saysPermanent) Error() string   { return "says permanent" }
func (s saysPermanent) Permanent() bool { return bool(s) }

// IsPermanent: Permanent's mark, or an error's own Permanent() bool,
// through wrapping.
func TestIsPermanent(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{stream.Permanent(errors.New("bad")), true},
		{fmt.Errorf("wrapped: %w", stream.Permanent(errors.New("bad"))), true},
		{saysPermanent(true), true},
		{fmt.Errorf("wrapped: %w", saysPermanent(true)), true},
		{saysPermanent(false), false},
		{errors.New("transient"), false},
		{nil, false},
	} {
		if got := stream.IsPermanent(c.err); got != c.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
