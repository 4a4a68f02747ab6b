package push

import "time"

// Quick makes c wait d between attempts and sign as of now.
func Quick(c *Client, d time.Duration, now func() time.Time) {
	c.backoff = func(int, error) (time.Duration, error) { return d, nil }
	c.now = now
}
