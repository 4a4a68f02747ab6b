// Package store is the single DynamoDB table: its schema (the one place it is
// defined), typed key builders for the seeds' key patterns, and the reads and
// writes of core and derived items. Store is the core (the clients, keys,
// marshalling, transactions, batch reads and writes, quarantine); each
// domain is a type of its own over it (domains.go: Rooms, Locations, Chat,
// Cooking, Collab, Requests, Upkeep), a field of Store: st.Rooms.CreateRoom.
//
// Writes that must change together (Member and UserRoom, Room and its owner's
// membership) go in one TransactWriteItems; conditional failures become
// errs.Conflict or errs.NotFound with a reason, never a raw SDK error.
// Derived items are written with plain puts on keys taken from the source
// change, so writing them again is harmless (idempotent by key).
//
// Every read decodes stored items through one function: an item that cannot
// be decoded (written by someone else) is quarantined — skipped as if it were
// absent, logged once per key, counted (Quarantine) — so it never stops a
// derivation or a list; ScanQuarantine lists such items for repair. The
// consumers' bookkeeping (idempotency claims) lives in a second table without
// a stream (Store.Bookkeeping, BookkeepingTableInput).
package store
