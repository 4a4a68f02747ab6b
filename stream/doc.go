// Package stream runs a DynamoDB Streams consumer outside Lambda with the
// semantics of Lambda's event source mapping, so one handler serves both:
// in Lambda pass it to lambda.Start; locally give it to a Runner.
//
// What a Runner guarantees, as the event source mapping does:
//   - at-least-once delivery: a record is handed to the handler until the
//     handler succeeds on it or it is sent to the dead-letter sink;
//   - per-shard order: records of a shard are delivered in sequence-number
//     order, one batch at a time; parent shards are drained before their
//     children start; shards with no parent run in parallel;
//   - batches of at most BatchSize records, gathered for at most BatchWindow;
//   - a handler's BatchItemFailures are honoured: the records before the
//     lowest failed sequence number are checkpointed, the rest retried;
//   - a failing batch is bisected (when Bisect is set) and retried up to
//     MaxRetries times with backoff, then its records go to the dead-letter
//     sink with everything needed to resubmit them (the records themselves);
//     a poison record therefore never blocks its shard forever;
//   - checkpoints are kept by a Checkpoints store outside the streamed table,
//     namespaced by Consumer, so a restarted runner resumes after the last
//     record it finished; expired iterators are renewed from there;
//   - iterator age (the time a batch is handed to the handler minus the
//     approximate creation time of its newest record, as Lambda's
//     IteratorAge) is reported per handler call through OnBatch.
//
// Handlers must therefore be idempotent: records can come again after a
// crash, a retry or a redelivery, exactly as in Lambda.
package stream
