// Package replay tests stream consumers the way production treats them:
// with at-least-once delivery. It captures a table's stream during a
// scenario (Capture, as the events.DynamoDBEvent Lambda delivers; Save and
// Load keep it as a JSON fixture), then replays it into a handler under
// many delivery schedules and checks that the handler's derived state
// comes out identical every time (Check).
//
// A schedule (Schedule; Describe says what one does) may deliver every
// record twice (as after a lost checkpoint), split the stream into random
// batch sizes, shuffle the interleaving of different items' records (each
// item's own order kept, as a stream guarantees), inject handler failures
// that are retried like Lambda retries them (before the handler ran, after
// its effects were written, or one record reported failed), and spread
// the records over lanes by partition key with a ParallelizationFactor
// (Parallel), delivering the lanes at the same time, as Lambda does. Check
// always runs the Fixed schedules (duplicates only, batch size 1, a failure
// after every batch's effects, a crash after each request in turn) before
// the ones it is given, typically Schedules(seed, n): n random
// combinations, the same for the same seed. KinesisSchedules(seed, n) add
// what a Kinesis data stream for DynamoDB may do and DynamoDB Streams does
// not: one item's records repeated and out of order (Reorder, Repeat);
// Check says when a handler assumes that order (Run.AssumesOrder).
//
// Failures around whole calls cannot see the order of a handler's effects
// within a call. Build the handler's clients with APIOption (AWS SDK) and
// Transport (HTTP), and a schedule with CrashBetweenRequests crashes each
// call after its first request, then its second, and so on: the request is
// carried out, its answer lost, the rest of the call never leaves, and the
// batch comes again. A webhook sent before the write that records it is
// sent twice; an effect skipped because a retry finds its record already
// written is never done; both show as a differing state. A crash schedule
// under which no call made a request through those hooks crashed nothing
// and tested nothing: its Run says so (CrashedNothing), and Report.Err
// fails for it unless the Target says its handler makes no requests
// (NoRequests). A crashed call leaves what it claimed held, as a Lambda
// that died mid-invocation does; every handler call gets a Clock for
// idempotency Guards (idempotency.WithClock), one per lane, in which
// waiting out such a hold costs no real time. Handler calls see no deadline
// of the context given to Check (a Lambda invocation's deadline is its own;
// one shared by every call would hold a crashed call's claim until the
// deadline the next call must finish by), though they end when it is
// cancelled.
//
// The baseline is the stream delivered once, in order (AsCaptured). Check
// compares every run with it, so it proves a handler gives the same result
// however the stream is delivered — not that the result is right: give the
// Target an Expect (Want builds one from the expected state) to check the
// baseline too.
//
// A handler that recomputes from the source table instead of applying each
// record's change would read that table in its final state under every
// schedule, and converge whatever its bugs with the states in between: give
// the Target a Source (SourceTable) and the kit moves the table through the
// stream's own history (from the records' images), so before each call the
// handler sees it as it was just after the newest record delivered so far.
//
// A handler that derives in two steps through its own table (it writes an
// item whose record it handles in turn: a combiner's pending counts) is
// whole only when those records come too: give the Target a Follow
// (Follower reads them from the stream) and the kit delivers them after the
// schedule's records, under the same schedule, until there are none.
//
// A Target says how to reset and read the derived state; TableState does
// both for derived items kept in a DynamoDB table, reading them with Values
// so that numbers compare exactly (all 38 digits; a float64 would not).
// Check may read the state more often than once per schedule (a Kinesis
// schedule's baseline, a differing run again in order): a State that
// needs to know which delivery it reads after asks Delivered.
//
// Failures are treated as the event source mapping and stream.Runner treat
// them (Target.OnFailure), by the same code: stream.Policy decides, after
// each call, what is finished, retried, bisected or dead-lettered, for the
// Runner and the kit alike (TestRunnerAndKitDeliverAlike runs both on one
// stream and compares every call). A failed batch is retried from its lowest failed
// record, bisected unless NoBisect is set, and dead-lettered after MaxRetries
// (three by default). The dead letters, with the handler's last error and
// the record's eventID and keys, are in each run's Stats, and Check
// reports a run that dead-lettered other records than the baseline. Only
// the handler's own failures use up retries; injected ones stand for faults
// a retry cures. A batch still failing after OnFailure.MaxAttempts calls
// (with MaxRetries stream.Forever, where Lambda would stop the shard) ends
// the delivery with a *StuckError quoting the handler.
//
// Every handler answer is also checked against Lambda's partial batch
// response contract (CheckResponse; on unless a Schedule sets
// SkipContractCheck): an itemIdentifier that is not a sequence number of
// the batch, an empty or misspelled one, a misspelled batchItemFailures, or
// an error returned together with failures fail the delivery with a
// *ContractError saying what Lambda would have done instead — a whole batch
// retried, or a batch taken as a success and its failures lost.
//
// A Target delivers what the mapping would: its Filter (the mapping's
// FilterCriteria, a filter.Criteria) keeps records from the handler, and a
// WindowHandler with Window in place of Handler is run in tumbling windows
// as the mapping runs them (stream.Windows), so a windowed aggregate is
// proven under the same schedules. A dead letter reads as the mapping's
// on-failure record (stream.DeadLetter.FailureRecord).
//
// With a ParallelizationFactor above 1, Deliver calls the handler from
// several goroutines at once (one per lane), so the handler and the
// Target's state must be safe for that; otherwise one goroutine calls it.
// Deliver and Check themselves are not meant to be called concurrently.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package replay
