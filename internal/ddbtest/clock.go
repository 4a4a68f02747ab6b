package ddbtest

import (
	"sync"
	"time"
)

// Clock is a test's clock: it moves only when the test moves it (Add).
// Give its Now to what takes a clock (a ddblocal.Limits, a Projector), so
// that what the test asserts depends on the order of its steps, never on
// how fast the machine ran them.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
