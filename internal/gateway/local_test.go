package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
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
		Refuse: func(err error) (int, http.Header, []byte) {
			return http.StatusUnauthorized, nil, []byte(`{"detail":"` + err.Error() + `"}`)
		},
		Auth: &gateway.SigV4{AccessKeyID: "local", SecretAccessKey: "local"}}
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

// The management endpoint authenticates its callers as API Gateway does:
// only requests signed (SigV4, execute-api) with the stack's credentials
// are served; anything else is 403 ForbiddenException and does nothing,
// whether unsigned (a web page's form), signed with another secret, for
// another service, too old, or changed after signing.
func TestLocalManagementAuthentication(t *testing.T) {
	f := newFixture(t)
	c := f.dial(t, "token=ok")
	eventually(t, "the connection", func() bool { return f.gw.Len() == 1 })
	id := "conn-1="
	signed := func(secret, service string, at time.Time, body string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/@connections/"+id, strings.NewReader(body))
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "local", SecretAccessKey: secret},
			r, hex.EncodeToString(sum[:]), service, "us-east-1", at); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tampered := signed("local", "execute-api", time.Now(), `{"n":1}`)
	tampered.Body, tampered.ContentLength = io.NopCloser(strings.NewReader(`{"n":2}`)), 7
	for name, r := range map[string]*http.Request{
		"unsigned": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/@connections/"+id, strings.NewReader("forged"))
			return r
		}(),
		"another secret":  signed("guess", "execute-api", time.Now(), "forged"),
		"another service": signed("local", "dynamodb", time.Now(), "forged"),
		"ten minutes old": signed("local", "execute-api", time.Now().Add(-10*time.Minute), "forged"),
		"body changed":    tampered,
		"a DELETE, unsigned": func() *http.Request {
			r, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/@connections/"+id, nil)
			return r
		}(),
		"a GET, unsigned": func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/@connections/"+id, nil)
			return r
		}(),
	} {
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Amzn-ErrorType") != "ForbiddenException" {
			t.Errorf("%s: %d %s %s, want 403 ForbiddenException", name, res.StatusCode, res.Header.Get("X-Amzn-ErrorType"), body)
		}
	}
	// Still open, nothing pushed: the first frame it reads is the real one.
	if _, err := f.mgmt.PostToConnection(context.Background(), &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String(id), Data: []byte("real")}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, c); got != "real" {
		t.Errorf("first frame %q, want the signed push", got)
	}
	if _, err := f.mgmt.GetConnection(context.Background(), &apigatewaymanagementapi.GetConnectionInput{ConnectionId: aws.String(id)}); err != nil {
		t.Errorf("a signed GET: %v", err)
	}
}

// Clients that never read cannot grow the gateway: pushes to them wait up
// to QueueBytes each and TotalQueueBytes in all, then are refused (429
// LimitExceededException, as API Gateway throttles), while a client that
// reads gets every push meant for it. The heap's growth is measured and
// bounded far below what the refused pushes would have taken.
func TestLocalQueuesBoundedUnderClientsThatNeverRead(t *testing.T) {
	f := newFixture(t)
	f.gw.QueueBytes, f.gw.TotalQueueBytes = 2<<20, 8<<20
	reader := f.dial(t, "token=ok")
	const sleepers = 8
	for range sleepers {
		f.dial(t, "token=ok") // never read
	}
	eventually(t, "the connections", func() bool { return f.gw.Len() == sleepers+1 })
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	frame := []byte(strings.Repeat("x", 100<<10))
	ctx := context.Background()
	var refused, accepted, closed int
	var peakQueued int64
	var peakHeap uint64
	for round := range 40 {
		for i := 2; i <= sleepers+1; i++ { // each sleeper, three frames a round
			for range 3 {
				_, err := f.mgmt.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String(fmt.Sprintf("conn-%d=", i)), Data: frame})
				var limit *types.LimitExceededException
				var gone *types.GoneException
				switch {
				case err == nil:
					accepted++
				case errors.As(err, &limit):
					refused++
				case errors.As(err, &gone): // closed: it did not read for writeTimeout
					closed++
				default:
					t.Fatalf("push %d to conn-%d: %v", round, i, err)
				}
			}
		}
		// The reader gets its own push each round, however full the
		// others are.
		if _, err := f.mgmt.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String("conn-1="), Data: []byte(fmt.Sprint("hello ", round))}); err != nil {
			t.Fatalf("push %d to the reader: %v", round, err)
		}
		if got := read(t, reader); got != fmt.Sprint("hello ", round) {
			t.Fatalf("the reader got %q", got)
		}
		q := f.gw.Queued()
		if q > f.gw.TotalQueueBytes {
			t.Fatalf("%d bytes queued, above the bound %d", q, f.gw.TotalQueueBytes)
		}
		peakQueued = max(peakQueued, q)
		var now runtime.MemStats
		runtime.ReadMemStats(&now)
		peakHeap = max(peakHeap, now.HeapAlloc)
	}
	growth := int64(peakHeap) - int64(before.HeapAlloc)
	attempted := int64(accepted+refused+closed) * int64(len(frame))
	t.Logf("%d pushes of 100 KB to clients that never read: %d accepted (most into the kernel's socket buffers), %d refused, %d to connections closed for not reading; at most %.1f MB queued (bounds: %d MB each, %d MB in all); heap peak %.1f MB above the start (the pushes attempted: %.0f MB)",
		accepted+refused+closed, accepted, refused, closed, float64(peakQueued)/(1<<20), f.gw.QueueBytes>>20, f.gw.TotalQueueBytes>>20, float64(growth)/(1<<20), float64(attempted)/(1<<20))
	if refused == 0 {
		t.Error("no push was refused: the bound never acted")
	}
	if growth > 4*f.gw.TotalQueueBytes {
		t.Errorf("the heap grew %d bytes, over four times the bound on queued bytes", growth)
	}
}
