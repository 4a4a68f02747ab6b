// Package room holds the search-room domain (seed 000): rooms, members and the
// criteria documents members put, plus the derived combined criteria and
// compatibility snapshots the projector computes from them.
//
// The package is pure: it imports no AWS SDK and does no I/O. Storage lives
// in internal/store, derivation in internal/projections.
package room
