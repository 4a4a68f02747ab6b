// Package api is the writer's HTTP API: one http.Handler served by net/http
// locally and through API Gateway (HTTP API, payload 2.0) in Lambda.
//
// Every error is an application/problem+json document (RFC 9457) whose
// status comes from one table (statusOf); invalid input names each bad field
// and the reason. Commands validate everything before they write, and
// writes that belong together are one DynamoDB transaction, so a rejected
// request leaves nothing half-written.
//
// Authorization: only members read a room; only its owner adds members. A
// non-member gets 404 for a room, exactly as for a room that does not exist,
// so room ids cannot be probed.
package api
