package notify_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// failingFirst is a Publisher whose first call fails whole after delay (a
// throttled PutEvents, after its retries), and whose later calls succeed;
// it keeps the sequence numbers of what it published, in order.
type failingFirst struct {
	delay time.Duration

	mu    sync.Mutex
	calls int
	out   []string // the published events' sequence numbers, call after call
}

func (p *failingFirst) Publish(_ context.Context, evs []events.Event) []error {
	p.mu.Lock()
	p.calls++
	first := p.calls == 1
	p.mu.Unlock()
	errs := make([]error, len(evs))
	if first {
		time.Sleep(p.delay)
		for i := range errs {
			errs[i] = errors.New("ThrottlingException")
		}
		return errs
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range evs {
		p.out = append(p.out, e.SequenceNumber)
	}
	return errs
}

// deliver hands recs to h as the event source mapping does: again from the
// lowest failure until none is left.
func deliver(t *testing.T, h func(context.Context, lambdaevents.DynamoDBEvent) (lambdaevents.DynamoDBEventResponse, error), recs []lambdaevents.DynamoDBEventRecord) (failed []string) {
	t.Helper()
	for range 10 {
		resp, err := h(context.Background(), lambdaevents.DynamoDBEvent{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		f := failures(resp)
		if len(f) == 0 {
			return failed
		}
		failed = append(failed, f...)
		from := slices.IndexFunc(recs, func(r lambdaevents.DynamoDBEventRecord) bool { return r.Change.SequenceNumber == f[0] })
		recs = recs[from:]
	}
	t.Fatal("still failing after 10 deliveries")
	return nil
}

// One key's events are published in stream order under every failure,
// and after a record's publish fails the key's later records close
// nothing: bob's removal from room r1 (whose closure closes his
// connections to the room's chat) comes after the room's creation, whose
// call fails whole after a delay. Its event is not published before the
// room's, nor is his connection closed while the room's event has failed;
// delivered again from the failure, both go out in order and the
// connection is closed once. 50 runs, with delays from 0 to 49 ms, so that
// the calls and the steps interleave in different ways.
func TestAKeysEventsStayInOrderWhenACallFails(t *testing.T) {
	t.Parallel()
	c, table, _ := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	mgmt, pusher := newManagement(t)
	b := batch(t)
	recs := []lambdaevents.DynamoDBEventRecord{b.Records[0], b.Records[7]} // room r1: 001 created, 008 bob left
	for run := range 50 {
		now := time.Now().UTC()
		if err := st.Chat.Connect(ctx, chat.Connection{ConnectionID: "bob-1", UserID: "bob", RoomID: "r1",
			ConnectedAt: store.Timestamp(now.Add(-time.Minute)), TTL: now.Add(chat.ConnectionTTL).Unix()}); err != nil {
			t.Fatal(err)
		}
		mgmt.mu.Lock()
		mgmt.closed, mgmt.gone = map[string]int{}, map[string]bool{}
		mgmt.mu.Unlock()
		pub := &failingFirst{delay: time.Duration(run) * time.Millisecond}
		n := &notify.Notifier{Publisher: pub, Chat: &notify.Chat{Store: st, Pusher: pusher, Now: time.Now}}
		resp, err := n.Handle(ctx, lambdaevents.DynamoDBEvent{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		mgmt.mu.Lock()
		closedEarly := mgmt.closed["bob-1"]
		mgmt.mu.Unlock()
		if f := failures(resp); !slices.Equal(f, []string{"001"}) || closedEarly != 0 {
			t.Errorf("run %d: failures %v, bob's connection closed %d time(s); want 001 failed and nothing closed", run, f, closedEarly)
		}
		if failed := deliver(t, n.Handle, recs); len(failed) != 0 {
			t.Fatalf("run %d: delivered again: failures %v", run, failed)
		}
		mgmt.mu.Lock()
		closed := mgmt.closed["bob-1"]
		mgmt.mu.Unlock()
		// the events once each, in stream order
		if !slices.Equal(pub.out, []string{"001", "008"}) || closed != 1 {
			t.Errorf("run %d: room r1's events published %v, bob's connection closed %d time(s); want 001 then 008, closed once", run, pub.out, closed)
		}
	}
}

// One dead letter per record: room r1's undecodable 007 is not
// dead-lettered while the room's earlier 001 is being published, and when
// 001's call fails whole, 007 comes again with it and is dead-lettered
// then, once (before, it was dead-lettered at once, and again when 001's
// redelivery brought it back).
func TestOneDeadLetterPerRecordWhenAnEarlierPublishFails(t *testing.T) {
	b := batch(t)
	recs := []lambdaevents.DynamoDBEventRecord{b.Records[0], b.Records[6]} // room r1: 001 created, 007 undecodable
	for run := range 10 {
		dl := &stream.MemoryDeadLetters{}
		pub := &failingFirst{delay: time.Duration(run) * 5 * time.Millisecond}
		n := &notify.Notifier{Publisher: pub, DeadLetters: dl}
		failed := deliver(t, n.Handle, recs)
		if !slices.Equal(failed, []string{"001"}) {
			t.Errorf("run %d: failures %v, want 001's once", run, failed)
		}
		var seqs []string
		for _, d := range dl.All() {
			seqs = append(seqs, d.FirstSequenceNumber)
		}
		if !slices.Equal(seqs, []string{"007"}) || !slices.Equal(pub.out, []string{"001"}) {
			t.Errorf("run %d: dead letters of %v, published %v; want 007's once, and 001", run, seqs, pub.out)
		}
	}
}
