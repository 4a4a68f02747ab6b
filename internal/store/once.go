package store

import (
	"context"
	"time"

	"github.com/dynastream/dynastream/idempotency"
)

// TypeIdempotency marks idempotency records.
const TypeIdempotency = "IdempotencyRecord"

// OnceState is what BeginOnce found for an idempotency key.
type OnceState = idempotency.State

// The states.
const (
	// OnceStarted: the caller holds the key and must do the work, then End
	// (or Abort on failure).
	OnceStarted = idempotency.Started
	// OnceDone: the work was done before; skip it.
	OnceDone = idempotency.Done
	// OnceBusy: another worker holds the key and its hold has not expired;
	// try again later.
	OnceBusy = idempotency.Busy
)

func (s *Store) onceGuard(now time.Time, hold, keep time.Duration) idempotency.Guard {
	return idempotency.Guard{DB: s.DB, Table: s.book(), Hold: hold, Expiry: keep, ItemType: TypeIdempotency,
		Now: func() time.Time { return now }}
}

// BeginOnce, EndOnce and AbortOnce are idempotency.Guard's claim, run and
// complete for the notifier's effects outside DynamoDB (e-mails), in the
// bookkeeping table; the counters' markers are the Guard's too (MarkerIn,
// Store.counted). The only clock they read is the one BeginOnce is given.
//
// BeginOnce claims an idempotency key, as AWS Lambda Powertools' idempotency
// utility does (idempotency.Guard.Begin): a record in progress with an
// expiry (hold), completed when the work is done. A holder that crashed
// loses the key when its hold expires, so the work is then done again: at
// most once, except for a crash between the work and End. Records are kept
// for keep, then TTL removes them. They live in the bookkeeping table
// (Store.Bookkeeping), which has no stream; marked derived, so that
// consumers would ignore them on a stream.
//
// For OnceBusy it also returns when the other holder's hold ends.
func (s *Store) BeginOnce(ctx context.Context, key string, now time.Time, hold, keep time.Duration) (OnceState, time.Time, error) {
	return s.onceGuard(now, hold, keep).Begin(ctx, key)
}

// EndOnce marks the work of a key done, recording its result (it reads no
// clock: the record keeps the expiry BeginOnce gave it).
func (s *Store) EndOnce(ctx context.Context, key, result string) error {
	return s.onceGuard(time.Time{}, 0, 0).End(ctx, key, result)
}

// AbortOnce releases a key whose work failed, so a retry can do it.
func (s *Store) AbortOnce(ctx context.Context, key string) error {
	return s.onceGuard(time.Time{}, 0, 0).Abort(ctx, key)
}
