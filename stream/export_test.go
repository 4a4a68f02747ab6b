package stream

import (
	"context"
	"time"
)

// SetSleep makes c wait on sleep, not real time, before it tries a batch
// again for what DynamoDB left unprocessed: a test whose ddblocal Limiter
// fills its partitions' units on a clock of its own moves that clock by
// the wait, as real time would.
func SetSleep(c *TableCheckpoints, sleep func(context.Context, time.Duration) error) {
	c.sleep = sleep
}
