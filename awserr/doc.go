// Package awserr says what an AWS SDK error means for a retry, and how long
// to wait before the next attempt. It is shared by the adapters that retry
// AWS calls themselves (with the SDK's own retries off): each keeps its
// service's error codes and passes them in; the SDK-level rules live here.
//
// Classify sorts an error into Retryable (throttling, server faults,
// transport errors), Permanent (the same input fails again: the SDK's own
// input validation, or a code the caller names) and Fatal (anything else,
// notably other 4xx answers: not retried within the call, but a fix of
// configuration, quota or permissions lets a later redelivery succeed).
//
// Backoff is exponential backoff with full jitter and a cap: the pause
// before attempt n+1 is drawn uniformly from [0, min(Base<<n, Max)], and
// the wait ends early with ctx.Err() when the context is done.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package awserr
