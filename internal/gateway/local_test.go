package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi/types"
	"github.com/coder/websocket"

	"github.com/dynastream/dynastream/internal/gateway"
)

// echo is a Routes that admits token "ok", answers each frame with
// "echo:<frame>" and records what happened.
type echo struct {
	mu           sync.Mutex
	connected    []string
	disconnected []string
}

func (e *echo) Connect(_ context.Context, r gateway.ConnectRequest) error {
	if r.Token != "ok" {
		return errors.New("bad token")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.connected = append(e.connected, r.ConnectionID+"@"+r.Query.Get("roomId"))
	return nil
}

func (e *echo) Disconnect(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.disconnected = append(e.disconnected, id)
	return nil
}

func (e *echo) Message(_ context.Context, id string, frame []byte) []byte {
	if string(frame) == "quiet" {
		return nil
	}
	return []byte("echo:" + string(frame))
}

func (e *echo) disconnects() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.disconnected...)
}

type fixture struct {
	routes *echo
	gw     *gateway.Local
	srv    *httptest.Server
	mgmt   *apigatewaymanagementapi.Client
	ids    atomic.Int32
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{routes: &echo{}}
	f.gw = &gateway.Local{Routes: f.routes, NewID: func() string { return fmt.Sprintf("conn-%d=", f.ids.Add(1)) },
		Refuse: func(err error) (int, []byte) {
			return http.StatusUnauthorized, []byte(`{"detail":"` + err.Error() + `"}`)
		}}
	mux := http.NewServeMux()
	mux.Handle("/ws", f.gw)
	mux.Handle("/@connections/", f.gw.Management())
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() { f.gw.Close(); f.srv.Close() })
	// The real management client, pointed at the local endpoint.
	f.mgmt = apigatewaymanagementapi.New(apigatewaymanagementapi.Options{
		BaseEndpoint: aws.String(f.srv.URL), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	return f
}

func (f *fixture) dial(t *testing.T, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/ws?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func read(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestLocalRefusesBeforeUpgrade(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/ws?token=bad", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("bad token: %v, %+v", err, resp)
	}
	if f.gw.Len() != 0 || len(f.routes.disconnects()) != 0 {
		t.Fatalf("a refused connection left state: %d open, disconnects %v", f.gw.Len(), f.routes.disconnects())
	}
	// Not a WebSocket handshake at all: 426 with a word on what to do.
	res, err := http.Get(f.srv.URL + "/ws")
	if err != nil || res.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET: %v %v", res, err)
	}
	res.Body.Close()
}

func TestLocalFramesPushesAndManagement(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.dial(t, "token=ok&roomId=r1")
	if err := a.Write(ctx, websocket.MessageText, []byte("quiet")); err != nil { // no reply
		t.Fatal(err)
	}
	if err := a.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, a); got != "echo:hi" {
		t.Fatalf("reply: %q", got)
	}
	if f.routes.connected[0] != "conn-1=@r1" {
		t.Fatalf("connect: %v", f.routes.connected)
	}
	// Pushes through the real client arrive in order.
	for i := range 3 {
		if _, err := f.mgmt.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String("conn-1="), Data: []byte(fmt.Sprint("push ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if got := read(t, a); got != fmt.Sprint("push ", i) {
			t.Fatalf("push %d: %q", i, got)
		}
	}
	info, err := f.mgmt.GetConnection(ctx, &apigatewaymanagementapi.GetConnectionInput{ConnectionId: aws.String("conn-1=")})
	if err != nil || info.ConnectedAt == nil || info.Identity == nil || *info.Identity.SourceIp != "127.0.0.1" {
		t.Fatalf("get: %+v %v", info, err)
	}
	// An unknown connection is a GoneException for every operation.
	var gone *types.GoneException
	if _, err := f.mgmt.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String("nope"), Data: []byte("x")}); !errors.As(err, &gone) {
		t.Fatalf("post to unknown: %v", err)
	}
	if _, err := f.mgmt.GetConnection(ctx, &apigatewaymanagementapi.GetConnectionInput{ConnectionId: aws.String("nope")}); !errors.As(err, &gone) {
		t.Fatalf("get unknown: %v", err)
	}
	var big *types.PayloadTooLargeException
	if _, err := f.mgmt.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String("conn-1="), Data: make([]byte, gateway.MaxFrame+1)}); !errors.As(err, &big) {
		t.Fatalf("oversize push: %v", err)
	}
	// DELETE closes the connection: the client sees a normal closure,
	// $disconnect runs, later pushes are gone.
	if _, err := f.mgmt.DeleteConnection(ctx, &apigatewaymanagementapi.DeleteConnectionInput{ConnectionId: aws.String("conn-1=")}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, _, err := a.Read(rctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after DELETE the client reads %v", err)
	}
	eventually(t, "$disconnect", func() bool { return len(f.routes.disconnects()) == 1 })
	if _, err := f.mgmt.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String("conn-1="), Data: []byte("x")}); !errors.As(err, &gone) {
		t.Fatalf("post after delete: %v", err)
	}
}

func TestLocalClientCloseAndShutdown(t *testing.T) {
	f := newFixture(t)
	a, b := f.dial(t, "token=ok"), f.dial(t, "token=ok")
	_ = a.Close(websocket.StatusNormalClosure, "bye")
	eventually(t, "a's $disconnect", func() bool { return len(f.routes.disconnects()) == 1 })
	// An oversize frame closes with 1009 (API Gateway's limit).
	c := f.dial(t, "token=ok")
	_ = c.Write(context.Background(), websocket.MessageText, make([]byte, gateway.MaxFrame+1))
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.Read(rctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("oversize frame: %v", err)
	}
	// b reads while the gateway shuts down, as a client does: the close
	// handshake needs its answer.
	read := make(chan error, 1)
	go func() {
		_, _, err := b.Read(rctx)
		read <- err
	}()
	f.gw.Close()
	if err := <-read; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("on shutdown the client reads %v", err)
	}
	if n := len(f.routes.disconnects()); n != 3 || f.gw.Len() != 0 {
		t.Fatalf("after Close: %d disconnects, %d open", n, f.gw.Len())
	}
}
