// Package onfailure is the event source mapping's on-failure destination
// for a stream.Runner, and its redrive for each: SQS sends what a Runner
// gives up on to an SQS queue as the record the mapping sends
// (stream.FailureRecord: the shard and the sequence range, not the
// records), SNS publishes the same record to a topic, and S3 writes the
// whole invocation record (S3Record: the failure record and the records)
// to a bucket, under the keys Lambda uses. Redrive reads a queue — the
// mapping's in AWS, the Runner's locally, directly or subscribed to the
// topic — reads each message's records back from the stream, hands them to
// the handler, and deletes a message only when all its records succeeded;
// records the stream no longer has are reported lost, never skipped.
// RedriveS3 hands each object's records over from the object itself, so it
// works after the stream has trimmed them. Records Bootstrap gave up on
// (a scan's, in no shard) are read again from the table by the keys their
// record names (Options.Items).
//
// It is a package of its own so that a Lambda function built with package
// consumer does not link the SQS, SNS and S3 clients.
//
// Delivery: a redriven record comes again if its message is kept (it
// failed again, or the run stopped before the delete): at least once, as
// everything a stream consumer gets.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package onfailure
