package stream

import (
	"sync/atomic"
	"time"
)

// Stats are a Runner's counters since it started, for metrics and health.
type Stats struct {
	// Polls counts the reads of the stream that were answered, an empty
	// one too (for each, Lambda emits PolledEventCount, 0 when it was
	// empty).
	Polls int64 `json:"polls"`
	// RecordsRead counts records read from the stream (each once, however
	// often it is then delivered).
	RecordsRead int64 `json:"recordsRead"`
	// FilteredOut counts records read that matched none of Config.Filter's
	// patterns (Lambda's FilteredOutEventCount).
	FilteredOut int64 `json:"filteredOut"`
	// Skipped counts records read that Config.Skip kept from the handler.
	Skipped int64 `json:"skipped"`
	// InvokedEvents counts records handed to the handler (a record handed
	// over again counts again: Lambda's InvokedEventCount), and
	// FailedInvokeEvents those of them a call did not finish (its error,
	// or its failed items and the records after them:
	// FailedInvokeEventCount).
	InvokedEvents      int64 `json:"invokedEvents"`
	FailedInvokeEvents int64 `json:"failedInvokeEvents"`
	// HandlerCalls counts calls of the handler, FailedCalls those that
	// failed (an error, a panic or batch item failures).
	HandlerCalls int64 `json:"handlerCalls"`
	FailedCalls  int64 `json:"failedCalls"`
	// RecordsHandled counts records a handler call finished (a record
	// delivered again after a retry counts again).
	RecordsHandled int64 `json:"recordsHandled"`
	// DeadLettered counts records handed to the dead-letter sink (the
	// on-failure destination), Expired those among them that were older
	// than MaxRecordAge.
	DeadLettered int64 `json:"deadLettered"`
	Expired      int64 `json:"expired"`
	// DestinationFailures counts the dead-letter sink's refusals (Lambda's
	// DestinationDeliveryFailures): the Runner tries again, and the shard
	// waits, until the sink takes the records (Health says so meanwhile).
	DestinationFailures int64 `json:"destinationFailures"`
	// CheckpointWrites counts checkpoints written.
	CheckpointWrites int64 `json:"checkpointWrites"`
	// IteratorAge is the iterator age of the latest handler call.
	IteratorAge time.Duration `json:"iteratorAgeNs"`
}

type counters struct {
	polls, recordsRead, filteredOut, skipped, invoked, failedInvoke, calls, failedCalls, handled, deadLettered, expired, destinationFailures, checkpoints, iteratorAge atomic.Int64
}

// Stats returns the counters so far; it is safe to call while Run runs.
func (r *Runner) Stats() Stats {
	c := &r.counters
	return Stats{
		Polls: c.polls.Load(), RecordsRead: c.recordsRead.Load(), FilteredOut: c.filteredOut.Load(), Skipped: c.skipped.Load(), InvokedEvents: c.invoked.Load(), FailedInvokeEvents: c.failedInvoke.Load(), HandlerCalls: c.calls.Load(), FailedCalls: c.failedCalls.Load(),
		RecordsHandled: c.handled.Load(), DeadLettered: c.deadLettered.Load(), Expired: c.expired.Load(), DestinationFailures: c.destinationFailures.Load(), CheckpointWrites: c.checkpoints.Load(),
		IteratorAge: time.Duration(c.iteratorAge.Load()),
	}
}
