// Package idempotency makes a stream consumer's effects happen once per
// record although records are delivered at least once: a marker item per
// key (by default the record's eventID, which every delivery of a record
// shares) says the effect is done.
//
// Two ways to use a Guard:
//
//   - Writes to DynamoDB: put Guard.Marker in the same TransactWriteItems as
//     the handler's own writes. The transaction succeeds the first time
//     only; on a repeat it is cancelled for the marker's condition, and
//     IsDuplicate tells that apart from a real failure, so the handler
//     skips the record. The writes and the marker are atomic: there is no
//     moment at which one is there without the other.
//   - Effects outside DynamoDB (an e-mail, an HTTP call): Guard.Do claims the
//     key, runs the effect and marks it done. Begin, End and Abort are the
//     same steps one by one, for a caller that waits out a Busy key or
//     records a result (this project's notifier does, for its e-mails). A
//     repeat after it is done is skipped; a repeat while another attempt holds the claim gets
//     ErrInProgress (report the record failed: it is retried later); a
//     failed effect releases the claim. Only a crash between the effect and
//     the done mark can repeat the effect, after Hold: where the receiver
//     takes an idempotency key of its own, give it the same key.
//
// The two keep apart: a Marker and a Do of the same key are two effects (a
// handler's writes and its e-mail for the same record), and neither says
// the other is done (Marked and Done read each).
//
// Markers carry derived = true, so the stream runner's loop guard
// (stream.SkipDerived) and the template's filters skip their stream
// records, and an expiry time attribute (TTL) well past the stream's 24 h
// retention: a record cannot be delivered again once its marker has
// expired. Time is injected (Guard.Now).
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package idempotency
