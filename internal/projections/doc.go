// Package projections derives the derived items of the table from its
// stream (docs/design.md §3): a room's combined criteria and compatibility
// snapshots, its activity feed, the cascade delete of a deleted room, and
// the reaction counts of comments.
//
// The derivations are pure functions (Combine, Compatibility, Snapshot,
// TriggerOf) of a change and the state read; Projector is the thin handler
// that reads that state and writes the results.
//
// Scheduling is stream.Keyed's: a batch's records are grouped by room (other
// records by partition key), the groups run concurrently, each in stream
// order and stopped at its first failure. What rooms can share is shared: one
// BatchGetItem for the batch's Room items, shared BatchWriteItem calls for
// all derived items. A room's snapshots read its current members and, per
// member, only the criteria versions the snapshot times need (Store.
// SnapshotState): requests follow the members, not the room's history.
//
// Delivery guarantees: the handler is idempotent and convergent under
// at-least-once delivery. A snapshot's key comes from its source change (the
// criteria version's timestamp, the member's joinedAt, or the record's
// creation time for a removal) and its content is computed "as of" that
// timestamp from the current core state — each current member who joined by
// then, with their latest criteria version at or before it — so a
// redelivered, reordered or replayed record rewrites the same item with the
// same content. Reaction counts are increments guarded by a marker item per
// source change (its stream event id), written in the same transaction, so
// each change counts once: O(1) requests per record, no recount. Derived
// items (derived = true) are ignored, so the projector never reacts to its
// own writes.
package projections
