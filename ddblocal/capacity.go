package ddblocal

import (
	"math"
	"time"
)

// AWS's per-partition limits: "Each partition on the table can serve up to
// 3,000 read request units or 1,000 write request units, or a linear
// combination of both" (amazondynamodb/latest/developerguide/
// bp-partition-key-design.html, and the throttling guide's "Key range
// throughput exceeded"); a global secondary index's partitions have the
// same limits.
const (
	PartitionWriteUnits = 1000
	PartitionReadUnits  = 3000
)

// part is one partition key value of a table or of one of its indexes:
// the unit the Limiter meters (DynamoDB's partitions hold many keys, so
// metering each key alone is the strictest reading of its limits short of
// knowing how it split the table).
type part struct {
	table, index, key string
}

// units is what a request costs on one partition key.
type units struct {
	p     part
	write bool
	n     float64
}

// bucket holds one partition key's units, reads and writes together ("up
// to 3,000 read request units or 1,000 write request units, or a linear
// combination of both"): counted in read units, a write unit taking
// readsPerWrite of them. It fills at its rate up to one second's worth,
// and a request is let in while it holds any (then pays what it cost,
// which may take it below 0: an item larger than a second's units is
// written, then the key waits).
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) fill(now time.Time, rate float64) {
	if b.last.IsZero() {
		b.tokens, b.last = rate, now
		return
	}
	if d := now.Sub(b.last).Seconds(); d > 0 {
		b.tokens = math.Min(rate, b.tokens+d*rate)
		b.last = now
	}
}

// writeUnits is what writing an item of size bytes costs: a unit per KB
// begun ("Capacity unit consumption for writes": 1 KB per write unit,
// rounded up; a transactional write two).
func writeUnits(size int, transactional bool) float64 {
	n := math.Max(1, math.Ceil(float64(size)/1024))
	if transactional {
		n *= 2
	}
	return n
}

// readUnits is what reading size bytes costs: a unit per 4 KB begun,
// half for an eventually consistent read, two for a transactional one
// ("Capacity unit consumption for reads").
func readUnits(size int, consistent, transactional bool) float64 {
	n := math.Max(1, math.Ceil(float64(size)/4096))
	switch {
	case transactional:
		n *= 2
	case !consistent:
		n /= 2
	}
	return n
}

// readsPerWrite is what a write unit takes of a partition's read units.
const readsPerWrite = PartitionReadUnits / PartitionWriteUnits

// capacity is the buckets of every partition key met so far.
type capacity struct {
	write, read float64 // units a second per partition key, each alone
	buckets     map[part]*bucket
	swept       time.Time
}

func (c *capacity) bucket(p part, now time.Time) *bucket {
	b := c.buckets[p]
	if b == nil {
		b = &bucket{}
		c.buckets[p] = b
	}
	b.fill(now, c.read)
	return b
}

// cost is what u takes of its partition's bucket, in read units.
func (u units) cost() float64 {
	if u.write {
		return u.n * readsPerWrite
	}
	return u.n
}

// admit lets costs in when every partition key of them has units left
// now, and takes costs off them in the same step, so that requests that
// meet a key at once cannot all pass on the units one of them was let in
// on; else it returns the key that has none. A read's cost is not known
// before it ran: its caller admits its least cost and pays the rest after.
func (c *capacity) admit(costs []units, now time.Time) (over *units) {
	c.sweep(now)
	for i := range costs {
		if b := c.bucket(costs[i].p, now); b.tokens <= 0 {
			return &costs[i]
		}
	}
	c.pay(costs, now)
	return nil
}

// pay takes costs off their buckets.
func (c *capacity) pay(costs []units, now time.Time) {
	for _, u := range costs {
		c.bucket(u.p, now).tokens -= u.cost()
	}
}

// refund gives back what admit took for costs.
func (c *capacity) refund(costs []units, now time.Time) {
	for _, u := range costs {
		c.bucket(u.p, now).tokens += u.cost()
	}
}

// sweep forgets, every ten seconds, the buckets that have filled up again
// (a new one is full).
func (c *capacity) sweep(now time.Time) {
	if now.Sub(c.swept) < 10*time.Second {
		return
	}
	c.swept = now
	for k, b := range c.buckets {
		if rate := c.read; b.tokens+now.Sub(b.last).Seconds()*rate >= rate {
			delete(c.buckets, k)
		}
	}
}
