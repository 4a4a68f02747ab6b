package notify

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/dynastream/dynastream/internal/events"
)

// stalledFirst is a Publisher whose first call tells started and waits for
// release, then fails whole; the later calls succeed and are kept.
type stalledFirst struct {
	started, release chan struct{}

	mu   sync.Mutex
	n    int
	sent []string
}

func (p *stalledFirst) Publish(_ context.Context, evs []events.Event) []error {
	p.mu.Lock()
	p.n++
	first := p.n == 1
	p.mu.Unlock()
	out := make([]error, len(evs))
	if first {
		close(p.started)
		<-p.release
		for i := range out {
			out[i] = errors.New("ThrottlingException")
		}
		return out
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range evs {
		p.sent = append(p.sent, e.ID)
	}
	return out
}

// A key's events handed over while the call carrying its earlier record's
// event is in flight wait for that call; when it fails whole, they are held
// back (failed, never sent), and the key says so to its group, while other
// keys' events go out.
func TestHeldBackAfterAFailedCall(t *testing.T) {
	p0 := &stalledFirst{started: make(chan struct{}), release: make(chan struct{})}
	pub := (&Notifier{Publisher: p0}).startPublishing(context.Background(), slog.New(slog.DiscardHandler))
	ev := func(id string, index, group, record int) owned[events.Event] {
		return owned[events.Event]{events.Event{ID: id}, index, group, record}
	}
	pub.add(ev("k-r0", 0, 0, 0))
	<-p0.started // the first call has k-r0 alone
	pub.add(ev("k-r1", 1, 0, 1))
	pub.add(ev("other-r0", 2, 1, 0))
	if err := pub.failure(0); err != nil {
		t.Fatalf("a failure before the call ended: %v", err)
	}
	close(p0.release)
	if err := pub.settle(0); err == nil {
		t.Fatal("settle: no failure after the key's call failed")
	}
	pub.stop()
	if !slices.Equal(p0.sent, []string{"other-r0"}) {
		t.Errorf("sent %v after the failed call, want only the other key's event", p0.sent)
	}
	var failed []int
	for _, f := range pub.failed {
		failed = append(failed, f.group*10+f.record)
	}
	slices.Sort(failed)
	if !slices.Equal(failed, []int{0, 1}) {
		t.Errorf("failed (group*10+record) %v, want the key's two records", failed)
	}
	if err := pub.failure(1); err != nil {
		t.Errorf("the other key: %v", err)
	}
}
