package store

import (
	"time"

	"github.com/dynastream/dynastream/idempotency"
)

// TypeIdempotency marks idempotency records.
const TypeIdempotency = "IdempotencyRecord"

// OnceGuard is the idempotency.Guard of the notifier's effects outside
// DynamoDB (e-mails), in the effects table (Store.Effects): a claim in
// progress with a hold, completed when the work is done, as AWS Lambda
// Powertools' idempotency utility keeps them. A holder that crashed loses
// the key when its hold ends; the next attempt waits that out and does the
// work (at most once, except for a crash between the work and its
// completion). Records are kept for keep, then TTL removes them. The
// effects table has no stream; the records are marked derived all the
// same, so that consumers would ignore them on one. It is apart from the
// bookkeeping table, which every API write's transaction touches (its
// request record), so an e-mail's claim and completion never wait behind
// those: DynamoDB Local serializes a table's writes with the transactions
// on it (docs/performance.md). With Store.EffectsPrevious, records kept in
// the bookkeeping table before count (Guard.Previous). The counters'
// markers are the Guard's too (MarkerIn, Store.counted).
func (s Requests) OnceGuard(now func() time.Time, hold, keep time.Duration) idempotency.Guard {
	g := idempotency.Guard{DB: s.DB, Table: s.effects(), Hold: hold, Expiry: keep, ItemType: TypeIdempotency, Now: now}
	if s.EffectsPrevious != "" && s.EffectsPrevious != g.Table {
		g.Previous = s.EffectsPrevious
	}
	return g
}
