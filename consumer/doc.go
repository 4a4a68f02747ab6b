// Package consumer wires a stream handler (a stream.Handler, the function
// Lambda calls with a batch of DynamoDB stream records) into a deployed
// consumer: the Lambda entry point, metrics on every call, and the admin
// endpoints of a stream.Runner that runs the same handler outside Lambda.
//
//   - Lambda (and Start) serve the handler under Lambda's runtime API. The
//     payload goes to stream.LambdaHandler as it came, unparsed by
//     aws-lambda-go: each record is decoded on its own by the fast
//     decoder, and one that does not decode is dead-lettered instead of
//     failing the whole batch again and again; a payload that is not a
//     DynamoDB stream event (an SQS event, {}) fails the invocation with an
//     error that says so (stream.StreamEvent). The loop guard
//     (Options.Skip) drops the consumer's own derived writes.
//   - Instrument reports every handler call to a metrics hook (Call:
//     records, failures, duration, and the iterator age as Lambda defines
//     it: the newest record's age when the batch was handed over), on the
//     Lambda path and on a Runner's alike; EMF is a hook that writes
//     CloudWatch Embedded Metric Format lines (package emf), the metrics the
//     example template's alarms watch. CountDeadLetters adds DeadLettered.
//   - Mapping writes a Runner's counters as the event source mapping's
//     metrics, under Lambda's names (PolledEventCount, FilteredOutEventCount,
//     DroppedEventCount, …), so alarms written for the mapping read the
//     Runner too.
//   - Package onfailure (consumer/onfailure) sends what a Runner gives up
//     on to an SQS queue as the mapping's on-failure destination record
//     (stream.FailureRecord: the shard and sequence range), and redrives
//     such a queue — the mapping's or the Runner's — reading the records
//     back from the stream; a package of its own, so that a function built
//     with this one does not link the SQS client.
//   - Admin is a Runner's admin handler: GET /healthz (503 when stuck),
//     GET /status, and POST /pause and POST /resume, which answer this
//     machine only and never a cross-site browser request.
//
// examples/orders is a consumer built this way, with a CloudFormation
// template for one consumer (template.yaml beside it).
//
// Delivery: the handler gets every record at least once, in order per
// item; metrics are written once per call and never retried (a lost line
// is a gap in a graph, not lost data).
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package consumer
