package stream

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// pauseGate holds handler calls and reads while the Runner is paused, and
// counts the handler calls under way, so Pause can wait for them.
type pauseGate struct {
	mu       sync.Mutex // taken alone (the lock order: shardRun.mu)
	paused   bool
	since    time.Time
	resume   chan struct{} // closed by Resume
	inflight int
	idle     chan struct{} // closed when inflight drops to 0 while paused
}

// isPaused reports whether the Runner is paused now.
func (g *pauseGate) isPaused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

// wait returns once the Runner is not paused (true) or ctx ended (false).
func (g *pauseGate) wait(ctx context.Context) bool {
	for {
		g.mu.Lock()
		if !g.paused {
			g.mu.Unlock()
			return ctx.Err() == nil
		}
		ch := g.resume
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// enter is wait, counting a handler call under way until exit.
func (g *pauseGate) enter(ctx context.Context) bool {
	for {
		if !g.wait(ctx) {
			return false
		}
		g.mu.Lock()
		if !g.paused {
			g.inflight++
			g.mu.Unlock()
			return true
		}
		g.mu.Unlock()
	}
}

func (g *pauseGate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// Pause stops the Runner reading and calling the handler: calls under way
// finish (with their retries' bookkeeping: checkpoint, dead letters), no
// new call starts, no shard is read. It returns once no call is under way
// and every shard's checkpoint covers what was finished, or when ctx ends
// (the Runner is paused all the same: a call that has not returned yet
// finishes later). Records read and not handled stay where they are; Resume
// carries on with them, so nothing is skipped and nothing is handled
// twice. If the process ends while paused, a restart reads them again from
// the checkpoint. Pausing a paused Runner only waits again.
//
// The local programs pause on SIGUSR1 and POST /pause (see docs/operations.md); in
// Lambda the same is done by disabling the event source mapping.
func (r *Runner) Pause(ctx context.Context) error {
	now, _, log, consumer := r.settings()
	g := &r.pause
	g.mu.Lock()
	if !g.paused {
		g.paused, g.since, g.resume = true, now(), make(chan struct{})
	}
	var idle chan struct{}
	if g.inflight > 0 {
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
		idle = g.idle
	}
	g.mu.Unlock()
	if idle != nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream: paused, but a handler call is still under way: %w", ctx.Err())
		case <-idle:
		}
	}
	for _, sr := range r.shardRuns() {
		sr.writeCheckpoint()
	}
	log.Info("paused", "consumer", consumer)
	return nil
}

// Resume undoes Pause: reading and handler calls carry on where they
// stopped. The time spent paused does not count toward Stuck.
func (r *Runner) Resume() {
	now, _, log, consumer := r.settings()
	g := &r.pause
	g.mu.Lock()
	if !g.paused {
		g.mu.Unlock()
		return
	}
	g.paused = false
	close(g.resume)
	g.mu.Unlock()
	t := now()
	for _, sr := range r.shardRuns() {
		sr.mu.Lock()
		sr.health.lastProgress = t
		if !sr.health.readFailingSince.IsZero() {
			sr.health.readFailingSince = t
		}
		sr.mu.Unlock()
	}
	log.Info("resumed", "consumer", consumer)
}
