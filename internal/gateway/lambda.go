package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"

	"github.com/aws/aws-lambda-go/events"
)

// Lambda handles API Gateway WebSocket events with Routes.
type Lambda struct {
	Routes Routes
	Refuse Refusal
	// Logger gets a route's panic (nil: slog.Default()).
	Logger *slog.Logger
}

// Handle is the Lambda handler for the WebSocket API's routes.
func (l Lambda) Handle(ctx context.Context, req events.APIGatewayWebsocketProxyRequest) (resp events.APIGatewayProxyResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			// A bug in one route must not take the execution environment,
			// and the connections it serves, down: the caller gets a 500.
			log := l.Logger
			if log == nil {
				log = slog.Default()
			}
			log.Error("WebSocket route panicked", "route", req.RequestContext.RouteKey, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp, err = events.APIGatewayProxyResponse{StatusCode: http.StatusInternalServerError}, nil
		}
	}()
	id := req.RequestContext.ConnectionID
	if id == "" {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("gateway: a WebSocket event without a connection id (route %q)", req.RequestContext.RouteKey)
	}
	switch req.RequestContext.EventType {
	case "CONNECT":
		q := url.Values{}
		for k, vs := range req.MultiValueQueryStringParameters {
			q[k] = vs
		}
		for k, v := range req.QueryStringParameters {
			if _, ok := q[k]; !ok {
				q.Set(k, v)
			}
		}
		if err := l.Routes.Connect(ctx, ConnectRequest{ConnectionID: id, Token: q.Get("token"), Query: q}); err != nil {
			status, body := l.Refuse(err)
			return events.APIGatewayProxyResponse{StatusCode: status, Body: string(body),
				Headers: map[string]string{"Content-Type": "application/problem+json"}}, nil
		}
		return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
	case "DISCONNECT":
		if err := l.Routes.Disconnect(ctx, id); err != nil {
			// API Gateway does not retry $disconnect; the item expires
			// with its ttl. Failing says so in the function's errors.
			return events.APIGatewayProxyResponse{}, fmt.Errorf("gateway: disconnect %s: %w", id, err)
		}
		return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
	case "MESSAGE":
		frame := []byte(req.Body)
		if req.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(req.Body)
			if err != nil {
				return events.APIGatewayProxyResponse{}, fmt.Errorf("gateway: a base64 frame that does not decode: %w", err)
			}
			frame = b
		}
		reply := l.Routes.Message(ctx, id, frame)
		return events.APIGatewayProxyResponse{StatusCode: http.StatusOK, Body: string(reply)}, nil
	}
	return events.APIGatewayProxyResponse{}, fmt.Errorf("gateway: unknown WebSocket event type %q (route %q)", req.RequestContext.EventType, req.RequestContext.RouteKey)
}
