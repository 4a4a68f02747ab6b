// Package cooking is the cooking domain of seed 003: ingredients, cooking
// preferences, recipes, cooking history, sessions and suggestions. It holds
// the types and the pure rules — name normalization, cook dates and ISO
// weeks, the rating aggregate and its fixed-width sort key, the suggestion
// rule — and does no I/O; internal/store keeps the items, internal/api
// serves them and internal/projections derives from them.
//
// Delivery: the projector derives recent cookings, weekly trending counts,
// rating aggregates (exactly once per change, by a marker in the same
// transaction), notifications and suggestions; Suggest is a function of
// core items only, so its list does not depend on the order the stream is
// processed in. See docs/cooking.md.
package cooking
