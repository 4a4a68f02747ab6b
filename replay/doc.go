// Package replay tests stream consumers the way production treats them:
// with at-least-once delivery. It captures a table's stream during a
// scenario (Capture, as the events.DynamoDBEvent Lambda delivers; Save and
// Load keep it as a JSON fixture), then replays it into a handler under
// many delivery schedules — as captured, with every record twice, split
// into random batch sizes, with cross-item interleavings shuffled (each
// item's own order kept, as a stream guarantees), and with injected handler
// failures that are retried like Lambda retries them, and with a
// ParallelizationFactor (Parallel) that spreads the records over lanes by
// partition key and delivers the lanes at the same time, as Lambda does —
// and checks that the handler's derived state comes out identical every
// time (Check).
//
// A Target says how to reset and read the derived state; TableState does
// both for derived items kept in a DynamoDB table.
//
// Every handler answer is also checked against Lambda's partial batch
// response contract (CheckResponse; on unless a Schedule sets
// SkipContractCheck): an itemIdentifier that is not a sequence number of
// the batch, an empty or misspelled one, a misspelled batchItemFailures, or
// an error returned together with failures fail the delivery with a
// *ContractError saying what Lambda would have done instead — a whole batch
// retried, or a batch taken as a success and its failures lost.
//
// With a ParallelizationFactor above 1, Deliver calls the handler from
// several goroutines at once (one per lane), so the handler and the
// Target's state must be safe for that; otherwise one goroutine calls it.
// Deliver and Check themselves are not meant to be called concurrently.
package replay
