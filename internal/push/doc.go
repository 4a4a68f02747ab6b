// Package push sends frames to WebSocket clients through API Gateway's
// management API (PostToConnection), with the real
// apigatewaymanagementapi client in both modes: in AWS at the WebSocket
// API's stage URL, locally at the writer, which implements the same
// endpoint (internal/gateway).
//
// Delivery: a push is sent once per call; the client's retryer retries
// throttling and 5xx answers. A connection API Gateway no longer has
// answers 410, which Push returns as ErrGone (the caller deletes it). What
// a push to a connection guarantees is at least once across the caller's
// retries, never exactly once: frames carry ids for clients to drop
// duplicates.
package push
