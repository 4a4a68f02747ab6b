// Package api is the writer's HTTP API: one http.Handler served by net/http
// locally and through API Gateway (HTTP API, payload 2.0) in Lambda.
//
// Every error is an application/problem+json document (RFC 9457) whose
// status comes from one table (statusOf); invalid input names each bad field
// and the reason. Commands validate everything before they write, and
// writes that belong together are one DynamoDB transaction, so a rejected
// request leaves nothing half-written.
//
// Authorization is declared once, in the route table's access column
// (server.go: member, owner, admin, resource, resourceOwner, inviteParty,
// invitee, commenter, commentAuthor, recipeAuthor), and enforced there: the
// route wrapper checks it before it validates the input or runs the
// handler, and hands the handler what it found (callerGrant). A new route
// gets its check by saying who may call it. Only members read a room; only
// its owner adds members. A non-member gets 404 for a room, exactly as for
// a room that does not exist, so room ids cannot be probed; the same holds
// for resources, invites and comments. One exception: the chat's history
// routes are open to any user in the table, and the handler checks that a
// search room's chat is read by its members only (the same check the
// WebSocket routes make). The authorization matrix (authz_matrix_test.go)
// is the safety net over all of it.
package api
