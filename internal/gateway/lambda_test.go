package gateway_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/gateway"
	"github.com/dynastream/dynastream/internal/gateway/gatewaytest"
)

func TestLambdaRoutes(t *testing.T) {
	routes := &echo{}
	l := gateway.Lambda{Routes: routes, Refuse: func(err error) (int, http.Header, []byte) {
		return http.StatusUnauthorized, http.Header{"Retry-After": {"7"}}, []byte(`{"status":401}`)
	}}
	ctx := context.Background()

	res, err := l.Handle(ctx, gatewaytest.Event(t, "connect", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "TOKEN": "ok", "ROOM": "r1"}))
	if err != nil || res.StatusCode != http.StatusOK || routes.connected[0] != "C9xkNcOFvHcCIhw=@r1" {
		t.Fatalf("connect: %+v %v %v", res, err, routes.connected)
	}
	res, err = l.Handle(ctx, gatewaytest.Event(t, "connect", map[string]string{"CONN": "C9xkNcOFvHcCIhx=", "TOKEN": "forged", "ROOM": "r1"}))
	if err != nil || res.StatusCode != http.StatusUnauthorized || res.Headers["Content-Type"] != "application/problem+json" || res.Headers["Retry-After"] != "7" || len(routes.connected) != 1 {
		t.Fatalf("refused connect: %+v %v", res, err)
	}
	res, err = l.Handle(ctx, gatewaytest.Event(t, "message", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "BODY": `{"action":"sendMessage","content":"hi \"there\""}`}))
	if err != nil || res.StatusCode != http.StatusOK || res.Body != `echo:{"action":"sendMessage","content":"hi \"there\""}` {
		t.Fatalf("message: %+v %v", res, err)
	}
	res, err = l.Handle(ctx, gatewaytest.Event(t, "message-base64", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "BODY": base64.StdEncoding.EncodeToString([]byte("bin\x00ary"))}))
	if err != nil || res.Body != "echo:bin\x00ary" {
		t.Fatalf("base64 message: %+v %v", res, err)
	}
	if _, err := l.Handle(ctx, gatewaytest.Event(t, "message-base64", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "BODY": "%%%"})); err == nil {
		t.Fatal("a frame that is not base64: want an error")
	}
	res, err = l.Handle(ctx, gatewaytest.Event(t, "disconnect", map[string]string{"CONN": "C9xkNcOFvHcCIhw="}))
	if err != nil || res.StatusCode != http.StatusOK || len(routes.disconnects()) != 1 || routes.disconnects()[0] != "C9xkNcOFvHcCIhw=" {
		t.Fatalf("disconnect: %+v %v %v", res, err, routes.disconnects())
	}
	if _, err := l.Handle(ctx, events.APIGatewayWebsocketProxyRequest{}); err == nil {
		t.Fatal("an event without a connection id: want an error")
	}
}
