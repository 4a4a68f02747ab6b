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
//     key, runs the effect and marks it done; Guard.Once does the same and
//     records the effect's result, which every repeat gets back, and with
//     a payload it refuses a key reused for another request
//     (ErrPayloadMismatch, permanent). A repeat after it is done is
//     skipped. A claim is held until the context's deadline (a Lambda
//     invocation's) or Hold, and the effect's context ends before that. A
//     claim left by a crashed attempt — the usual reason a delivery finds
//     its key held, as a record goes to one invocation at a time — is
//     waited out and taken over when its hold ends within this attempt's
//     budget, so a crash delays the effect and never loses it; only a hold
//     longer than the budget gives ErrInProgress (report the record
//     failed: it is retried later). A failed effect releases the claim.
//     Only a crash between the effect and the done mark can repeat the
//     effect: where the receiver takes an idempotency key of its own, give
//     it the same key. Begin, Acquire, End and Abort are the steps one by
//     one.
//
// The replay kit proves a handler's use of a Guard under crashes between
// any two requests (replay.Schedule.CrashBetweenRequests): it gives every
// handler call a Clock (WithClock) in which waiting out a hold costs no
// real time.
//
// The two keep apart: a Marker and a Do of the same key are two effects (a
// handler's writes and its e-mail for the same record), and neither says
// the other is done (Marked and Done read each).
//
// Markers carry derived = true, so the stream runner's loop guard
// (stream.SkipDerived) and the template's filters skip their stream
// records, and an expiry time attribute (TTL) well past the stream's 24 h
// retention: a record cannot be delivered again once its marker has
// expired. Time is injected (Guard.Now), but no record expires less than
// Expiry/2 after the real time, whatever the clock says. Marked and
// MarkedIn read a Marker's and a MarkerIn's record.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package idempotency
