// Package audit is a user's own consumer of the table's stream, as the
// library's users add one: a trail of the core changes (one Entry per
// change: which item, what happened, when), appended to a Sink.
//
// It shows the third consumer a table's stream can have without a third
// reader: the projector runs it as a stream.Fanout branch beside its own
// handler, on its one reader (`make run` writes the trail to
// .local/audit.jsonl). It has its own filter (the loop guard: core changes
// only), its own retries and dead letters (deadletters/audit.jsonl), and a
// failure of its sink neither stops the projector nor makes it repeat
// its effects.
//
// Delivery: at least once, as every consumer's; an entry is keyed by the
// change's stream eventID and a Sink writes each key once, so a change
// delivered again (a retry, a replay, a restart) leaves one entry. Entries
// of one item are appended in stream order; of different items, in no
// fixed order. The replay kit checks both (audit_test.go).
package audit
