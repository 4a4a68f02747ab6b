// Package outbox is the local stack's stand-in for EventBridge (and later
// SES): domain events appended as JSON lines to a file a developer can tail.
// Each Publish is written and synced before it returns; a redelivered event
// is written again with the same id (consumers dedupe by id).
package outbox
