// Package events is the catalogue of domain events — the public contract
// other services consume through EventBridge (the local outbox on the local
// stack) — and the one mapping from a stream change to the events it means.
//
// Each event is a Go struct, grouped by domain (rooms.go, collab.go,
// locations.go), registered with its Source, DetailType and schema version;
// docs/events.md is generated from them (JSON Schema and example of each
// event's data), and a test fails when it is stale or when an item type of
// the table has no mapping. Map is pure: a change's old and new images in,
// typed events out. Changes that mean nothing outside (lookups, markers,
// idempotency records, activities, rewrites of snapshots) map to none.
//
// Delivery guarantees: an event's id is the stream record's eventID plus
// its index within the change, so a redelivered or replayed record yields
// the same ids and consumers dedupe on them. On a DynamoDB stream,
// sequenceNumber orders the events of one item. On a Kinesis data stream
// for DynamoDB, which may repeat a change and deliver one item's changes
// out of order, sequenceNumber is the Kinesis record's (a repeat has
// another) and changedAt, the change's creation time to the microsecond,
// orders them, as AWS advises. occurredAt is the item's own timestamp when
// it has one, else the record's creation time. No event carries an e-mail
// address.
package events
