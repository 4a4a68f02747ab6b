package eventbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/eventbus"
)

type orderPlaced struct {
	OrderID string `json:"orderId"`
	Cents   int64  `json:"cents"`
}

func orderRecord(eventID, seq string) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventID: eventID, EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		SequenceNumber:              seq,
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Date(2026, 11, 26, 8, 30, 0, 0, time.UTC)},
	}}
}

// The same record gives the same event, byte for byte, on every delivery;
// another record another id. The envelope arrives on the wire as built.
func TestEventFromRecordOnTheWire(t *testing.T) {
	f := newFakeBus(t)
	rec := orderRecord("a1b2", "100")
	ev := eventbus.FromRecord(rec, 0, "shop.orders", "OrderPlaced", orderPlaced{OrderID: "o-1", Cents: 1250})
	again := eventbus.FromRecord(rec, 0, "shop.orders", "OrderPlaced", orderPlaced{OrderID: "o-1", Cents: 1250})
	other := eventbus.FromRecord(orderRecord("c3d4", "200"), 0, "shop.orders", "OrderPlaced", orderPlaced{OrderID: "o-2"})
	if ev.ID != "a1b2-0" || again.ID != ev.ID || other.ID == ev.ID || eventbus.FromRecord(rec, 1, "s", "t", 0).ID != "a1b2-1" {
		t.Fatalf("ids %q %q %q", ev.ID, again.ID, other.ID)
	}
	e1, err := ev.Entry()
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := again.Entry()
	if string(e1.Detail) != string(e2.Detail) {
		t.Errorf("two deliveries, two details:\n%s\n%s", e1.Detail, e2.Detail)
	}
	want := `{"id":"a1b2-0","occurredAt":"2026-11-26T08:30:00.000Z","version":1,"sequenceNumber":"100","changedAt":"2026-11-26T08:30:00.000000Z","data":{"orderId":"o-1","cents":1250}}`
	if string(e1.Detail) != want {
		t.Errorf("detail\n%s\nwant\n%s", e1.Detail, want)
	}
	noErrors(t, f.publisher(&sleeps{}, &logBuffer{}).Publish(context.Background(), []eventbus.Entry{e1}))
	calls := f.allCalls()
	if len(calls) != 1 || len(calls[0]) != 1 {
		t.Fatalf("calls %v", calls)
	}
	got := calls[0][0]
	if got.Source != "shop.orders" || got.DetailType != "OrderPlaced" || got.Detail != want || got.Time == nil ||
		!wireTime(*got.Time).Equal(time.Date(2026, 11, 26, 8, 30, 0, 0, time.UTC)) {
		t.Errorf("on the wire: %+v", got)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(got.Detail), &env); err != nil || env["id"] != "a1b2-0" {
		t.Errorf("envelope %v, %v", env, err)
	}
}

func TestEventEntryNeedsItsNames(t *testing.T) {
	_, err := eventbus.Event[int]{Source: "s"}.Entry()
	if err == nil || !strings.Contains(err.Error(), "[ID DetailType]") || !eventbus.IsPermanent(err) {
		t.Errorf("error %v (permanent: %v)", err, eventbus.IsPermanent(err))
	}
	_, err = eventbus.Event[func()]{ID: "x", Source: "s", DetailType: "t", Data: func() {}}.Entry()
	if err == nil || !strings.Contains(err.Error(), "encode data") || !eventbus.IsPermanent(err) {
		t.Errorf("error %v (permanent: %v)", err, eventbus.IsPermanent(err))
	}
}

// A claim check: the hook stores the payload and publishes a reference in
// its place. A hook that fails leaves an error to redeliver (its store may
// be back next time); one that gives an entry still too large, a
// *TooLargeError that says why. Nothing is sent for either.
func TestPublishTooLargeClaimCheck(t *testing.T) {
	f := newFakeBus(t)
	big := sizedAs(1, eventbus.DefaultMaxBytes+10, "shop.media", "ImageAdded")
	stored := map[string]int{}
	p := f.publisher(&sleeps{}, &logBuffer{})
	p.TooLarge = func(_ context.Context, e eventbus.Entry) (eventbus.Entry, error) {
		stored[e.DetailType] = len(e.Detail)
		if e.DetailType == "Broken" {
			return eventbus.Entry{}, errors.New("s3 is down")
		}
		if e.DetailType == "Stubborn" {
			return e, nil
		}
		return eventbus.Entry{Source: e.Source, DetailType: e.DetailType, Detail: []byte(`{"ref":"s3://bucket/key"}`)}, nil
	}
	entries := []eventbus.Entry{entry(0), big,
		sizedAs(2, eventbus.DefaultMaxBytes+1, "shop.media", "Broken"),
		sizedAs(3, eventbus.DefaultMaxBytes+1, "shop.media", "Stubborn")}
	errs := p.Publish(context.Background(), entries)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	var tl *eventbus.TooLargeError
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "s3 is down") || eventbus.IsPermanent(errs[2]) {
		t.Errorf("a failing hook: %v (permanent: %v), want an error to redeliver", errs[2], eventbus.IsPermanent(errs[2]))
	}
	if !errors.As(errs[3], &tl) || !strings.Contains(errs[3].Error(), "still over the limit") || !eventbus.IsPermanent(errs[3]) {
		t.Errorf("a hook that does not shrink: %v", errs[3])
	}
	// the hook got each oversized entry as it was
	if diff := cmp.Diff(map[string]int{"ImageAdded": len(big.Detail), "Broken": len(entries[2].Detail), "Stubborn": len(entries[3].Detail)}, stored); diff != "" {
		t.Errorf("the hook got (-want +got):\n%s", diff)
	}
	var sent []string
	for _, c := range f.allCalls() {
		sent = append(sent, details(c)...)
	}
	if diff := cmp.Diff([]string{string(entries[0].Detail), `{"ref":"s3://bucket/key"}`}, sent); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	if string(entries[1].Detail) != string(big.Detail) {
		t.Error("the caller's entries were changed")
	}
	// InOrder: the failed claim check (entry 2, to redeliver) holds back
	// the entries after it; the one that can never be sent (3) does not
	g := newFakeBus(t)
	q := g.publisher(&sleeps{}, &logBuffer{})
	q.TooLarge, q.InOrder = p.TooLarge, true
	errs = q.Publish(context.Background(), append(entries, entry(4)))
	if errs[0] != nil || errs[1] != nil || errs[2] == nil || !eventbus.IsPermanent(errs[3]) || !errors.Is(errs[4], eventbus.ErrNotSent) {
		t.Errorf("in order: %v", errs)
	}
	if n := len(g.allCalls()); n != 1 || len(g.allCalls()[0]) != 2 {
		t.Errorf("in order: %v sent, want entries 0 and 1 in one call", g.allCalls())
	}
}

// A call that hangs past CallTimeout is retried within the same Publish
// (it may have been accepted: at least once), and OnCall sees both calls.
func TestPublishCallTimeout(t *testing.T) {
	f := newFakeBus(t)
	f.onCall = func(call int) {
		if call == 1 {
			time.Sleep(300 * time.Millisecond)
		}
	}
	var mu sync.Mutex
	var seen []eventbus.Call
	p := f.publisher(&sleeps{}, &logBuffer{})
	p.CallTimeout = 50 * time.Millisecond
	p.OnCall = func(c eventbus.Call) { mu.Lock(); seen = append(seen, c); mu.Unlock() }
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(0), entry(1)}))
	if len(seen) != 2 || seen[0].Err == nil || !strings.Contains(seen[0].Err.Error(), "took longer than 50ms") ||
		seen[0].Failed != 2 || seen[1].Err != nil || seen[1].Attempt != 2 || seen[1].Entries != 2 || seen[1].Failed != 0 {
		t.Errorf("calls %+v", seen)
	}
}

// OnCall counts failed and throttled entries of a call that answered.
func TestPublishOnCallCountsFailures(t *testing.T) {
	f := newFakeBus(t)
	f.failEntry = func(e wireEntry, seen int) string {
		if seen == 1 && e.Detail == string(entry(1).Detail) {
			return "ThrottlingException"
		}
		return ""
	}
	var seen []eventbus.Call
	p := f.publisher(&sleeps{}, &logBuffer{})
	p.OnCall = func(c eventbus.Call) { seen = append(seen, c) }
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(0), entry(1), entry(2)}))
	want := []eventbus.Call{
		{Attempt: 1, Entries: 3, Bytes: entry(0).Size() + entry(1).Size() + entry(2).Size(), Failed: 1, Throttled: true},
		{Attempt: 2, Entries: 1, Bytes: entry(1).Size()},
	}
	for i := range seen {
		seen[i].Duration = 0
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A call refused with HTTP 429 counts as throttled, whatever its code.
func TestPublishOnCallCounts429AsThrottled(t *testing.T) {
	f := newFakeBus(t)
	f.failCall = func(call int) *callFailure {
		if call == 1 {
			return apiError(http.StatusTooManyRequests, "SlowDown")
		}
		return nil
	}
	var seen []eventbus.Call
	p := f.publisher(&sleeps{}, &logBuffer{})
	p.OnCall = func(c eventbus.Call) { seen = append(seen, c) }
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(0)}))
	if len(seen) != 2 || !seen[0].Throttled || seen[0].Failed != 1 || seen[1].Throttled {
		t.Errorf("calls %+v", seen)
	}
}
