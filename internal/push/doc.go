// Package push sends frames to WebSocket clients through API Gateway's
// management API, in AWS at the WebSocket API's stage URL, locally at the
// writer, which implements the same endpoint (internal/gateway).
//
// A push (PostToConnection) is the request the SDK's client makes, built
// here and signed by the SDK's SigV4 signer: the SDK's per-call
// middleware cost more CPU than the rest of a push together
// (BenchmarkPush), and a broadcast to a room is thousands of pushes. It
// keeps what the SDK's middleware did that a push needs: the retries
// below, and clock skew correction (pushes are signed as of the server's
// clock, from the last response's Date, and a signature refused because
// the clocks differ by more than four minutes is tried again).
// Closing a connection (DeleteConnection, rare) goes through the SDK's
// client.
//
// Delivery: a push is sent once per call; throttling, 5xx answers and
// connections reset or timed out are tried again, as the configuration's
// Retryer says (the notifier's: ddb.NewRetryer), the same as Close. A connection API Gateway no longer has
// answers 410, which Push returns as ErrGone (the caller deletes it). What
// a push to a connection guarantees is at least once across the caller's
// retries, never exactly once: frames carry ids for clients to drop
// duplicates.
package push
