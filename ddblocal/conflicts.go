package ddblocal

import "sync"

// inflight is the items that requests under way through the Limiter
// write: those of transactions (TransactWriteItems) and those of single
// writes (PutItem, UpdateItem, DeleteItem, BatchWriteItem). DynamoDB
// cancels a request for a conflict from these ("Transaction conflict
// handling in DynamoDB", amazondynamodb/latest/developerguide/
// transaction-apis.html#transaction-conflict-handling):
//   - a PutItem, UpdateItem or DeleteItem of an item that an ongoing
//     TransactWriteItems includes (TransactionConflictException);
//   - a TransactWriteItems with an item that another ongoing
//     TransactWriteItems includes (TransactionCanceledException,
//     TransactionConflict on that item);
//   - a TransactGetItems with an item that an ongoing TransactWriteItems,
//     BatchWriteItem, PutItem, UpdateItem or DeleteItem writes
//     (TransactionCanceledException, TransactionConflict).
//
// DynamoDB Local runs transactions one at a time and never conflicts; the
// Limiter's conflicts come from real overlap: two requests under way at
// once on one item.
type inflight struct {
	mu     sync.Mutex
	tx     map[string]int
	single map[string]int
}

// begin checks ids against what is in flight and, when nothing conflicts,
// holds them until the returned end is called (nil: it conflicts at the
// indexes given). A read holds nothing.
func (f *inflight) begin(ids []string, kind reqKind) (end func(), at []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, id := range ids {
		if f.tx[id] > 0 || (kind == txRead && f.single[id] > 0) {
			at = append(at, i)
		}
	}
	if len(at) > 0 {
		return nil, at
	}
	held := f.single
	switch kind {
	case txRead:
		return func() {}, nil
	case txWrite:
		held = f.tx
	}
	for _, id := range ids {
		held[id]++
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, id := range ids {
			if held[id]--; held[id] <= 0 {
				delete(held, id)
			}
		}
	}, nil
}

// hold holds ids as a single write's, whatever is in flight, until the
// returned end is called.
func (f *inflight) hold(ids []string) (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.single[id]++
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, id := range ids {
			if f.single[id]--; f.single[id] <= 0 {
				delete(f.single, id)
			}
		}
	}
}

// reqKind is how a request meets the items in flight.
type reqKind int

const (
	singleWrite reqKind = iota
	txWrite
	txRead
)
