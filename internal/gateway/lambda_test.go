package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/gateway"
)

// fixture reads testdata/<name>.json with its placeholders filled in.
func event(t *testing.T, name string, vals map[string]string) events.APIGatewayWebsocketProxyRequest {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vals {
		q, _ := json.Marshal(v)
		s = strings.ReplaceAll(s, "{{"+k+"}}", string(q[1:len(q)-1]))
	}
	var ev events.APIGatewayWebsocketProxyRequest
	if err := json.Unmarshal([]byte(s), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestLambdaRoutes(t *testing.T) {
	routes := &echo{}
	l := gateway.Lambda{Routes: routes, Refuse: func(err error) (int, []byte) { return http.StatusUnauthorized, []byte(`{"status":401}`) }}
	ctx := context.Background()

	res, err := l.Handle(ctx, event(t, "connect", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "TOKEN": "ok", "ROOM": "r1"}))
	if err != nil || res.StatusCode != http.StatusOK || routes.connected[0] != "C9xkNcOFvHcCIhw=@r1" {
		t.Fatalf("connect: %+v %v %v", res, err, routes.connected)
	}
	res, err = l.Handle(ctx, event(t, "connect", map[string]string{"CONN": "C9xkNcOFvHcCIhx=", "TOKEN": "forged", "ROOM": "r1"}))
	if err != nil || res.StatusCode != http.StatusUnauthorized || res.Headers["Content-Type"] != "application/problem+json" || len(routes.connected) != 1 {
		t.Fatalf("refused connect: %+v %v", res, err)
	}
	res, err = l.Handle(ctx, event(t, "message", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "BODY": `{"action":"sendMessage","content":"hi \"there\""}`}))
	if err != nil || res.StatusCode != http.StatusOK || res.Body != `echo:{"action":"sendMessage","content":"hi \"there\""}` {
		t.Fatalf("message: %+v %v", res, err)
	}
	res, err = l.Handle(ctx, event(t, "message-base64", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "BODY": base64.StdEncoding.EncodeToString([]byte("bin\x00ary"))}))
	if err != nil || res.Body != "echo:bin\x00ary" {
		t.Fatalf("base64 message: %+v %v", res, err)
	}
	if _, err := l.Handle(ctx, event(t, "message-base64", map[string]string{"CONN": "C9xkNcOFvHcCIhw=", "BODY": "%%%"})); err == nil {
		t.Fatal("a frame that is not base64: want an error")
	}
	res, err = l.Handle(ctx, event(t, "disconnect", map[string]string{"CONN": "C9xkNcOFvHcCIhw="}))
	if err != nil || res.StatusCode != http.StatusOK || len(routes.disconnects()) != 1 || routes.disconnects()[0] != "C9xkNcOFvHcCIhw=" {
		t.Fatalf("disconnect: %+v %v %v", res, err, routes.disconnects())
	}
	if _, err := l.Handle(ctx, events.APIGatewayWebsocketProxyRequest{}); err == nil {
		t.Fatal("an event without a connection id: want an error")
	}
}
