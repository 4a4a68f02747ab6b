package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"

	"github.com/aws/aws-lambda-go/events"
)

// Lambda handles API Gateway WebSocket events with Routes.
type Lambda struct {
	Routes Routes
	Refuse Refusal
}

// Handle is the Lambda handler for the WebSocket API's routes.
func (l Lambda) Handle(ctx context.Context, req events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
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
			status, header, body := l.Refuse(err)
			h := map[string]string{"Content-Type": "application/problem+json"}
			for k := range header {
				h[k] = header.Get(k)
			}
			return events.APIGatewayProxyResponse{StatusCode: status, Body: string(body), Headers: h}, nil
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
