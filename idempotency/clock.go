package idempotency

import (
	"context"
	"time"

	"github.com/dynastream/dynastream/awserr"
)

// Clock is the time a Guard reads, and waits in, within one context.
// Outside a replay it is the Guard's own Now and real waiting; the replay
// kit gives each handler call a Clock of its own (WithClock) whose time
// jumps ahead when a Guard waits out a crashed attempt's hold, so that a
// schedule that crashes hundreds of calls costs no real time for it.
type Clock interface {
	// Now is the time.
	Now() time.Time
	// Sleep waits d of this clock's time, or until ctx ends (its error).
	Sleep(ctx context.Context, d time.Duration) error
}

type clockKey struct{}

// WithClock returns a context in which every Guard reads time from c
// instead of its Now and waits with c.Sleep. A context's deadline stays in
// real time: a Guard takes what is left of it (time.Until) and counts that
// from c's Now.
func WithClock(ctx context.Context, c Clock) context.Context {
	return context.WithValue(ctx, clockKey{}, c)
}

// wallClock is a Guard's own clock: its Now and real waiting.
type wallClock struct{ now func() time.Time }

func (w wallClock) Now() time.Time { return w.now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error { return awserr.SleepCtx(ctx, d) }

// clock is the Clock of ctx, or the Guard's own.
func (g Guard) clock(ctx context.Context) Clock {
	if c, ok := ctx.Value(clockKey{}).(Clock); ok && c != nil {
		return c
	}
	return wallClock{g.Now}
}
