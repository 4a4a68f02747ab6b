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
// call's duration).
//
// One key's events are published in stream order under every failure: a
// group's events are handed over in its order and the calls are made one
// after another, and once an event of a group's record has failed, the
// group's later events are held back (never published: their records come
// again after the failed one). Within one Publish call the entries are in
// stream order, and EventBridge's publisher (eventbus.Publisher.InOrder)
// sends no chunk after one that failed; but within one PutEvents request
// EventBridge can accept an entry after one it fails, which puts a key's
// later event out before its failed earlier one is published again, and
// EventBridge does not promise its targets any order.
//
// An event that failed fails its record (finish, with stream.Result.Fail
// once the groups are done), so the record and the rest of its group come
// again. A group asks failure before each record's step and stops there
// when an earlier record of its key failed to publish (so its later
// records push and close nothing), and settle before it dead-letters a
// record, so that a record dead-lettered is never before one that comes
// again (which would dead-letter it a second time).
type publishing struct {
	pub  Publisher
	log  *slog.Logger
	wake chan struct{} // a handover or the end, waiting to be seen
	done chan struct{} // the goroutine has published everything

	mu      sync.Mutex
	settled *sync.Cond // a call ended: a group's outstanding events may be resolved
	queue   []owned[events.Event]
	closed  bool
	failed  []owned[error] // each failed (or held back) event's error, with its record
	open    map[int]int    // events handed over and not yet published or failed, by group
	broken  map[int]int    // each group's earliest record with a failed event
}

// startPublishing starts the batch's publishing goroutine; stop it (or
// finish it) on every path.
func (n *Notifier) startPublishing(ctx context.Context, log *slog.Logger) *publishing {
	p := &publishing{pub: n.Publisher, log: log, wake: make(chan struct{}, 1), done: make(chan struct{}),
		open: map[int]int{}, broken: map[int]int{}}
	p.settled = sync.NewCond(&p.mu)
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
	p.open[evs[0].group] += len(evs)
	p.mu.Unlock()
	p.signal()
}

// failure is the publish failure of an earlier record of group (nil:
// none so far): the group stops at its current record.
func (p *publishing) failure(group int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.broken[group]; ok {
		return fmt.Errorf("an earlier record of its key (%d in its group) failed to publish its events; it comes again after it", r)
	}
	return nil
}

// settle waits until every event group handed over is published or
// failed, and is failure's answer then.
func (p *publishing) settle(group int) error {
	p.mu.Lock()
	for p.open[group] > 0 {
		p.settled.Wait()
	}
	p.mu.Unlock()
	return p.failure(group)
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
// events' errors; the events of a group that has failed before are held
// back.
func (p *publishing) publish(ctx context.Context, q []owned[events.Event]) {
	slices.SortStableFunc(q, func(a, b owned[events.Event]) int { return a.index - b.index })
	var failed []owned[error]
	p.mu.Lock()
	send := q[:0:0]
	for _, o := range q {
		if r, ok := p.broken[o.group]; ok && o.record > r {
			failed = append(failed, owned[error]{fmt.Errorf("event %s held back: an earlier record of its key failed to publish", o.v.ID), o.index, o.group, o.record})
			continue
		}
		send = append(send, o)
	}
	p.mu.Unlock()
	all := make([]events.Event, len(send))
	for i, o := range send {
		all[i] = o.v
	}
	// A Publisher that panicked, or that did not give one result per
	// event, is broken: nothing counts as published, so every record
	// with events is retried (a bug fails records, not the batch or the
	// process, as the groups' panics do).
	var results []error
	var err error
	if len(all) > 0 {
		results, err = p.call(ctx, all)
	}
	if err == nil && len(results) != len(all) {
		err = fmt.Errorf("notify: publisher returned %d results for %d events", len(results), len(all))
	}
	if err != nil {
		p.log.Error("notifier: publisher broken", "events", len(all), "err", err)
		results = slices.Repeat([]error{err}, len(all))
	}
	for i, err := range results {
		if err != nil {
			p.log.Error("notifier: publish failed", "event", all[i].ID, "err", err)
			o := send[i]
			failed = append(failed, owned[error]{fmt.Errorf("publish event %s: %w", all[i].ID, err), o.index, o.group, o.record})
		}
	}
	p.mu.Lock()
	for _, f := range failed {
		if r, ok := p.broken[f.group]; !ok || f.record < r {
			p.broken[f.group] = f.record
		}
	}
	for _, o := range q {
		p.open[o.group]--
	}
	p.failed = append(p.failed, failed...)
	p.settled.Broadcast()
	p.mu.Unlock()
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
