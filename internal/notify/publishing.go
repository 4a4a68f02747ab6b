package notify

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/stream"
)

// publishing is a batch's events on their way out while its groups run. A
// group hands over each record's events as soon as its step is done (add),
// and one goroutine publishes whatever has been handed over since its last
// call, in one Publish call, in stream order: an event waits for the call
// in flight at most, not for the batch's slowest group (a comment's
// e-mails, a big room's broadcast), and the batch's events still share a
// few calls (more when they come in a trickle: at most one per Publish
// call's duration). A group's events are handed over in its order and the
// calls are made one after another, so one key's events are published in
// stream order, as before.
//
// An event that failed fails its record (finish, with stream.Result.Fail
// once the groups are done), so the record and the rest of its group come
// again; the events of the group's earlier records are out already, as
// when a single call publishes part of its entries.
type publishing struct {
	pub  Publisher
	log  *slog.Logger
	wake chan struct{} // a handover or the end, waiting to be seen
	done chan struct{} // the goroutine has published everything

	mu     sync.Mutex
	queue  []owned[events.Event]
	closed bool
	failed []owned[error] // each failed event's error, with its record
}

// startPublishing starts the batch's publishing goroutine; stop it (or
// finish it) on every path.
func (n *Notifier) startPublishing(ctx context.Context, log *slog.Logger) *publishing {
	p := &publishing{pub: n.Publisher, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run(ctx)
	return p
}

// add hands over a record's events.
func (p *publishing) add(evs ...owned[events.Event]) {
	if len(evs) == 0 {
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, evs...)
	p.mu.Unlock()
	p.signal()
}

func (p *publishing) signal() {
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is pending already; it will see this
	}
}

func (p *publishing) run(ctx context.Context) {
	defer close(p.done)
	for range p.wake {
		for {
			p.mu.Lock()
			q, closed := p.queue, p.closed
			p.queue = nil
			p.mu.Unlock()
			if len(q) == 0 {
				if closed {
					return
				}
				break
			}
			p.publish(ctx, q)
		}
	}
}

// publish publishes q in one call, in stream order, and keeps the failed
// events' errors.
func (p *publishing) publish(ctx context.Context, q []owned[events.Event]) {
	slices.SortStableFunc(q, func(a, b owned[events.Event]) int { return a.index - b.index })
	all := make([]events.Event, len(q))
	for i, o := range q {
		all[i] = o.v
	}
	// A Publisher that panicked, or that did not give one result per
	// event, is broken: nothing counts as published, so every record
	// with events is retried (a bug fails records, not the batch or the
	// process, as the groups' panics do).
	results, err := p.call(ctx, all)
	if err == nil && len(results) != len(all) {
		err = fmt.Errorf("notify: publisher returned %d results for %d events", len(results), len(all))
	}
	if err != nil {
		p.log.Error("notifier: publisher broken", "events", len(all), "err", err)
		results = slices.Repeat([]error{err}, len(all))
	}
	var failed []owned[error]
	for i, err := range results {
		if err != nil {
			p.log.Error("notifier: publish failed", "event", all[i].ID, "err", err)
			o := q[i]
			failed = append(failed, owned[error]{fmt.Errorf("publish event %s: %w", all[i].ID, err), o.index, o.group, o.record})
		}
	}
	if len(failed) > 0 {
		p.mu.Lock()
		p.failed = append(p.failed, failed...)
		p.mu.Unlock()
	}
}

// call is Publish with a panic made its error.
func (p *publishing) call(ctx context.Context, all []events.Event) (results []error, err error) {
	defer recovered("publish", &err)
	return p.pub.Publish(ctx, all), nil
}

// stop tells the goroutine that nothing more will be handed over, and
// waits for it to publish what was. Calling it again does nothing more.
func (p *publishing) stop() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
	<-p.done
}

// finish stops the publishing and fails the records whose events failed;
// the groups must be done.
func (p *publishing) finish(res stream.Result) {
	p.stop()
	for _, f := range p.failed {
		res.Fail(f.group, f.record, f.v)
	}
}
