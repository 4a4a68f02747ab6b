// Package cooking is the cooking domain of seed 003: ingredients (and,
// as it grows, recipes, cooking history and sessions). It holds the types
// and the pure rules — name normalization above all — and does no I/O;
// internal/store keeps the items and internal/api serves them.
//
// Delivery: nothing here is derived from the stream yet; ingredient names
// are unique by their normalized form, enforced in the create transaction.
package cooking
