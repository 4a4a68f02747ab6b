// Package onfailure is the event source mapping's on-failure destination
// for a stream.Runner, and its redrive for both: SQS sends what a Runner
// gives up on to an SQS queue as the record the mapping sends
// (stream.FailureRecord: the shard and the sequence range, not the
// records), and Redrive reads such a queue — the mapping's in AWS, the
// Runner's locally — reads each message's records back from the stream,
// hands them to the handler, and deletes a message only when all its
// records succeeded; records the stream no longer has are reported lost,
// never skipped.
//
// It is a package of its own so that a Lambda function built with package
// consumer does not link the SQS client.
//
// Delivery: a redriven record comes again if its message is kept (it
// failed again, or the run stopped before the delete): at least once, as
// everything a stream consumer gets.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package onfailure
