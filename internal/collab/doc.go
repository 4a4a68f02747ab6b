// Package collab is the collaboration domain (seed 004): resources (goals,
// quests, tasks) with an owner, invites, collaborators, threaded comments
// with @mentions, emoji reactions and notification preferences.
//
// The package is pure: types, validation rules and text handling, no I/O
// and no AWS SDK. Storage lives in internal/store; derived reaction counts
// in internal/projections; emails and in-app notifications in the notifier.
package collab
