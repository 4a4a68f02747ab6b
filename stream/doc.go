// Package stream runs a DynamoDB Streams consumer outside Lambda with the
// semantics of Lambda's event source mapping, so one handler serves both:
// in Lambda pass it to lambda.Start; locally give it to a Runner. In
// Lambda, LambdaHandler also takes the events of a Kinesis data stream a
// table writes its changes to (DecodeKinesisEvent), where one item's
// records may come out of order and more than once: a handler for that
// source must not assume their order (replay.KinesisSchedules prove it).
//
// What a Runner guarantees, as the event source mapping does:
//   - at-least-once delivery: a record is handed to the handler until the
//     handler succeeds on it or it is sent to the dead-letter sink;
//   - order per partition key: with ParallelizationFactor 1 (the default)
//     a shard's records are delivered in sequence-number order, one batch at
//     a time; with up to 10, that many batches of a shard run at once, and
//     records are spread over them by a hash of their partition key (read
//     from DescribeStream's key schema), so records of one key are always
//     delivered in order and never at the same time, as Lambda does; parent
//     shards are drained before their children start; shards with no parent
//     run in parallel;
//   - batches of at most BatchSize records, gathered for at most BatchWindow;
//   - a handler's BatchItemFailures are honoured: the records before the
//     lowest failed sequence number are finished, the rest retried;
//   - the checkpoint moves only over records that are all finished (handled
//     or dead-lettered), whatever order the concurrent batches finish in, so
//     a crash never skips a record; it is written when it moved, at most
//     once per CheckpointInterval (1 s by default; a crash redelivers what
//     was finished since), one write at a time (never per empty poll), and
//     at once before each retry, on Pause and on stop;
//   - a failing batch is bisected (unless NoBisect is set) and retried up
//     to MaxRetries times with backoff (the decisions are Policy's, the one
//     pure function the replay kit replays too), then its records go to the dead-letter
//     sink with everything needed to resubmit them (the records themselves);
//     a poison record therefore never blocks its shard forever; with
//     MaxRecordAge, records older than that are dead-lettered before a call
//     (condition RecordAgeExceeded), as MaximumRecordAgeInSeconds does; a
//     dead letter reads as the mapping's on-failure record
//     (DeadLetter.FailureRecord), and ReadRange reads such a record's
//     range back from the stream (consumer/onfailure redrives a queue of
//     them);
//   - checkpoints are kept by a Checkpoints store outside the streamed table,
//     namespaced by Consumer, so a restarted runner resumes after the last
//     record it finished; expired iterators are renewed from there;
//   - iterator age — what Lambda's IteratorAge metric means: the time a
//     batch is handed to the handler minus the creation time of its newest
//     record, so how far behind the stream's head the consumer reads — is
//     reported per handler call through OnBatch and in Health (also when
//     MaxRecordAge discards the batch instead). A record's age counts from
//     its ApproximateCreationDateTime, which DynamoDB rounds down to the
//     second: the Runner takes it as it is, as Lambda does. DynamoDB Local
//     rounds it down to the minute, which alone made local ages off by up
//     to 60 s; while every creation time read is a whole minute, the Runner
//     also uses that a record was created after the start of the last read
//     that reached the shard's end without it, and takes the later of the
//     two, but never more than the minute the rounded time stands for: a
//     page cut short by GetRecords' 1 MB looks like the shard's end, and a
//     backlog read in such pages stays as old as it is;
//
// Tumbling windows (Config.TumblingWindow, RunWindows, Windows) run a
// WindowHandler as the mapping does with TumblingWindowInSeconds: calls of
// one window each, the state handed from call to call and kept with the
// checkpoint, each window's final call once the stream has passed its end
// by WindowGrace; records of windows interleaved near a boundary each go
// into their own; state over 1 MB ends a window early; a record after its
// window's final call starts it afresh, as on Lambda; a failed call is
// retried with the state it had, so a windowed aggregate written
// idempotently at the final call is exact; ParallelizationFactor 1 only.
//
// A new consumer on a table that already has data starts with Bootstrap:
// the stream's position, a scan of the table handed over as INSERT records,
// then the stream from the position through a Gate (the ordering rule per
// item), so every item the table holds ends in its latest state in the
// consumer, as in one that read every change. It is not that consumer:
// the scan hands over no change made before it (an item created and
// deleted before the scan is never seen, and state such a consumer kept
// for it, or for changes since undone, is not there), and every item that
// exists reaches the handler as an INSERT — a consumer with effects per
// change (an event, a webhook) makes them for every existing item unless
// it keeps them off the scan's records (IsSnapshot).
//
// A Runner says how it is doing (Health): per shard its position, the
// records waiting and for how long, the latest failures and dead letters,
// and a status — Idle, OK, Stuck (records waiting and the checkpoint still
// for StuckAfter, or the stream unreadable that long) or Paused. Pause stops
// it reading and calling the handler once the calls under way have
// finished and their checkpoint is written; Resume carries on from there,
// nothing skipped and nothing handled twice. In Lambda the same is done by
// disabling and enabling the event source mapping.
//
// Several consumers on one reader: a stream shard should have at most two
// readers at a time, so a third consumer of a table joins a reader as a
// Fanout branch — its own filter, retries, dead letters and counts; a
// failing branch neither stops the others nor makes them repeat what they
// finished.
//
// Filters and the loop guard: a Runner applies the event source mapping's
// FilterCriteria (Config.Filter, a filter.Criteria: package stream/filter
// evaluates Lambda's pattern syntax) — records no pattern matches are
// finished at once and counted in Stats.FilteredOut. A consumer that writes
// derived items into the table it reads gets its own writes back on the
// stream: mark them derived = true and filter with LoopGuard, the same value
// the template's FilterCriteria is checked against. Behind the filter, the
// handler gets no record its Config.Skip skips — by default SkipDerived, the
// same guard as a Go function (SkipNone for every record); skipped records
// are finished at once and counted in Stats.Skipped. In Lambda, wrap the
// handler in Filter and Skip as a defence (consumer.Options does).
//
// Handlers must therefore be idempotent: records can come again after a
// crash, a retry or a redelivery, exactly as in Lambda.
//
// Inside one batch, Keyed runs a handler's work concurrently by key (the
// partition key by default, or a key the consumer chooses), each key's
// records in order, and stops a key at its first failure while the other
// keys run to their end; it answers with the partial-batch response, so
// Lambda and the Runner deliver again from the first unfinished record. It
// works the same under lambda.Start and under a Runner. A record whose
// failure is marked Permanent (retrying cannot help: it cannot be decoded)
// is dead-lettered at once by Keyed, with the record itself, when it has
// DeadLetters (TableDeadLetters in Lambda, which has no disk), and its key
// goes on; it never waits out the retry budget nor holds up its key.
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package stream
