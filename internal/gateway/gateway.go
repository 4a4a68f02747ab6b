package gateway

import (
	"context"
	"net/http"
	"net/url"
)

// Routes is a WebSocket API's behaviour.
type Routes interface {
	// Connect admits a connection, or refuses it with an error the
	// transport turns into the handshake's status (Refuse).
	Connect(ctx context.Context, r ConnectRequest) error
	// Disconnect forgets a connection that closed (or vanished).
	Disconnect(ctx context.Context, connectionID string) error
	// Message handles a frame from a connection and returns the frame to
	// send back to it (nil: none).
	Message(ctx context.Context, connectionID string, frame []byte) []byte
}

// ConnectRequest is a $connect.
type ConnectRequest struct {
	ConnectionID string
	// Token is the query string's token parameter: browsers cannot set
	// headers on a WebSocket handshake, and API Gateway's WebSocket APIs
	// have no JWT authorizer, so $connect verifies it.
	Token string
	// Query is the handshake's query string (e.g. roomId).
	Query url.Values
}

// Refusal turns a refused $connect's error into the handshake's HTTP
// status, its headers (Content-Type, and Retry-After where the refusal
// says when to try again) and a body (problem+json).
type Refusal func(err error) (status int, header http.Header, body []byte)

// MaxFrame is the largest frame either way: API Gateway's limit for a
// WebSocket message (128 KB).
const MaxFrame = 128 << 10
