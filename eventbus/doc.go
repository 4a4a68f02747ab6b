// Package eventbus publishes domain events to an Amazon EventBridge bus
// with PutEvents, from stream consumers that get every record at least
// once.
//
// # Events
//
// Event[T] is a domain event with typed data. FromRecord makes the n-th
// event of a stream record, its ID derived from the record's eventID (ID),
// so that a redelivered record publishes the very same event and
// subscribers can dedupe on the id. Event.Entry encodes it as the neutral
// Entry (Source, DetailType, JSON Detail, Time, Resources, TraceHeader)
// with the envelope {"id", "occurredAt", "version", "sequenceNumber",
// "changedAt", "data"}; callers with an envelope of their own build Entry directly.
// Publisher.Publish takes a batch of entries and returns one error per
// entry in input order.
//
// # Sizes and chunking
//
// Entry.Size counts an entry as EventBridge does ("Calculating Amazon
// EventBridge PutEvents event entry size",
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html):
// 14 bytes for a set Time, plus the UTF-8 byte lengths of Source,
// DetailType, Detail and each of Resources. An entry larger than MaxBytes
// (default 256 KB) on its own can never be sent: the Publisher's TooLarge
// hook, if set, may replace it with a reference to its payload stored
// elsewhere (a claim check); otherwise it gets a *TooLargeError, is logged
// at Error level and is not sent. The others are cut greedily,
// in input order, into PutEvents calls of at most MaxEntries (10) entries
// and at most MaxBytes total size, sent one after the other.
//
// # Failures and retries
//
// Publish is the only place that retries (build the client with
// NewClient, which turns the SDK's retries off). Retries use exponential
// backoff from Publisher.Backoff (default 100ms, doubling, capped at
// MaxBackoff = 5s) with full jitter, up to MaxAttempts (default 5)
// attempts per entry. Sleep and Jitter are injectable.
//
//   - A call that succeeds may still report failed entries
//     (FailedEntryCount, and ErrorCode/ErrorMessage in the result entry at
//     the same position). Only those are sent again, and only when their
//     code is retryable: InternalFailure or ThrottlingException.
//   - An entry rejected as it is (MalformedDetail, InvalidArgument,
//     InvalidAccountIdException, RedactionFailure, any code not known
//     here) gets a *PermanentError{Code, Message} and is not sent again:
//     dead-letter it.
//   - An entry rejected for authorization (AccessDeniedException,
//     NotAuthorizedForSourceException, NotAuthorizedForDetailTypeException)
//     is a configuration error: it gets an *EntryError at once, not
//     retried here and not permanent, so that redelivery after the fix
//     publishes it.
//   - A whole call that fails with throttling (ThrottlingException, which
//     EventBridge sends with HTTP 400, or HTTP 429), a server fault (HTTP
//     5xx, InternalException) or a transport error is retried for all the
//     entries it carried.
//   - A whole call that fails with any other client error
//     (ValidationException, ResourceNotFoundException for a missing bus,
//     AccessDeniedException, bad credentials…) is returned at once, wrapped,
//     for every entry of the call. Such failures are configuration, not
//     the entries' fault, so they are not permanent: the stream redelivers
//     the records once the configuration is fixed. Only the SDK's own input
//     validation comes back as *PermanentError.
//   - Entries still failing after MaxAttempts attempts get their last
//     (retryable) error, wrapped; report them as batch item failures so
//     that the event source mapping retries or dead-letters the records.
//   - A call that takes longer than CallTimeout (default 10s) is retried
//     like a transport error: it may have been accepted.
//   - When ctx is done, including during a backoff pause, Publish returns
//     promptly; the entries not yet published get an error wrapping
//     ctx.Err().
//
// IsPermanent tells the errors to dead-letter from those to redeliver.
//
// # Delivery guarantees
//
// A nil error means EventBridge accepted the entry (returned an event id).
// Delivery is at least once: a call retried after an ambiguous failure
// (5xx, timeout, connection reset) may have been accepted already, and the
// records of a failed batch are redelivered by the event source mapping,
// entries already published included. Nothing here deduplicates: consumers
// must dedupe on the deterministic event id inside Detail (the envelope's
// "id", derived from the stream eventID). Order is kept when cutting calls,
// but a retried entry is published after entries that followed it, and
// EventBridge does not guarantee order anyway: consumers order by the
// envelope (sequenceNumber on a DynamoDB stream, changedAt on a Kinesis
// data stream for DynamoDB), not by arrival. With InOrder, a
// call that leaves an entry failed (to be sent again) stops the Publish:
// the later calls' entries are not sent (ErrNotSent), so none of them goes
// out before it; within that one call, EventBridge may still have accepted
// entries after the failed one.
//
// OnCall, a metrics hook, is told about every call: entries, bytes,
// failures, throttling, duration.
//
// There is no package-level mutable state; sleeps, jitter and the logger
// are injected.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package eventbus
