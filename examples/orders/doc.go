// Package orders is an example of a stream consumer built only on the
// project's public packages, for a table of its own: orders keyed by
// customer, and per-customer totals derived from them by a projection that
// is correct under at-least-once delivery (Totals), next to a naive one
// that is not (NaiveTotals) — the replay kit tells them apart. See
// README.md.
//
// Delivery guarantees: Totals changes each customer's totals once per
// stream record however often the record is delivered (an idempotency
// marker in the same transaction as the change), in any interleaving of
// customers; a record it cannot read is reported failed, with its reason,
// for the event source mapping (or stream.Runner) to retry and dead-letter.
package orders
