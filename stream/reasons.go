package stream

import (
	"context"
	"sync"
)

// A handler that reports records in BatchItemFailures can only name them:
// Lambda's response has no room for why. NoteFailure gives the reason to
// whoever delivers the batch — the Runner and the replay kit put it in the
// log line of the failed call and in the dead letter if the record is
// given up on. Keyed.Handler notes the error of every group it stops; a
// handler of your own calls NoteFailure next to each failure it reports.
// Under lambda.Start nothing collects reasons (Keyed logs them).

type reasonsKey struct{}

type reasons struct {
	mu sync.Mutex
	m  map[string]error
}

// WithFailureReasons returns a context in which NoteFailure records
// reasons, and a function that returns the reason noted for a record's
// sequence number (nil if none). For code that delivers batches, as the
// Runner does.
func WithFailureReasons(ctx context.Context) (context.Context, func(seq string) error) {
	r := &reasons{} // the map only when a failure is noted: most calls note none
	return context.WithValue(ctx, reasonsKey{}, r), func(seq string) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.m[seq]
	}
}

// NoteFailure records err as the reason the record with sequence number seq
// failed, when ctx comes from WithFailureReasons; otherwise it does
// nothing.
func NoteFailure(ctx context.Context, seq string, err error) {
	r, ok := ctx.Value(reasonsKey{}).(*reasons)
	if !ok || err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]error{}
	}
	r.m[seq] = err
}
