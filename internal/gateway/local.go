package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// DefaultQueue is how many pushes may wait for one slow local connection.
const DefaultQueue = 1024

// Default bounds on the bytes waiting to be written to clients that do not
// read: per connection, and for all connections together.
const (
	DefaultQueueBytes      = 1 << 20
	DefaultTotalQueueBytes = 64 << 20
)

// writeTimeout bounds one frame's write to a local client; a client that
// does not read for that long is closed.
const writeTimeout = 10 * time.Second

// Local is a WebSocket API on this machine: ServeHTTP is the WebSocket
// endpoint (ws://host/ws?token=…&roomId=…), Management the management
// endpoint. The zero value is not usable: set Routes, Refuse and NewID.
type Local struct {
	Routes Routes
	Refuse Refusal
	// NewID makes connection ids (they must be safe in a URL path and in a
	// table key).
	NewID  func() string
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger
	// Queue bounds the pushes waiting for one connection (default
	// DefaultQueue); a push beyond it is refused with 429
	// LimitExceededException, as API Gateway throttles.
	Queue int
	// QueueBytes and TotalQueueBytes bound the bytes waiting for one
	// connection and for all of them (defaults DefaultQueueBytes and
	// DefaultTotalQueueBytes): a push beyond either is refused as one
	// beyond Queue is, a reply beyond either closes its connection (its
	// client does not read), so clients that never read cannot grow the
	// process while the others are served.
	QueueBytes, TotalQueueBytes int64
	// OriginPatterns are the other origins a browser page may connect
	// from (websocket.AcceptOptions); the writer's own origin always may.
	OriginPatterns []string
	// Auth authenticates the management endpoint's callers (SigV4, as API
	// Gateway does); nil leaves it open, for tests of other things only.
	Auth *SigV4

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
	wg     sync.WaitGroup
	queued atomic.Int64 // bytes waiting, all connections
}

// conn is one local connection. Pushes queue in out until the writer
// goroutine sends them; done closes when the connection ends.
type conn struct {
	id          string
	connectedAt time.Time
	sourceIP    string
	userAgent   string

	mu         sync.Mutex
	lastActive time.Time
	queued     atomic.Int64 // bytes waiting in out
	gone       bool         // unregistered: nothing is queued any more (under mu)
	out        chan []byte
	done       chan struct{}
	closeOnce  sync.Once
	closeCode  websocket.StatusCode
	closeWhy   string
}

func (c *conn) end(code websocket.StatusCode, why string) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closeCode, c.closeWhy = code, why
		c.mu.Unlock()
		close(c.done)
	})
}

func (g *Local) now() time.Time {
	if g.Now == nil {
		return time.Now()
	}
	return g.Now()
}

func (g *Local) log() *slog.Logger {
	if g.Logger == nil {
		return slog.Default()
	}
	return g.Logger
}

// enqueue puts a frame in c's queue unless it would pass a bound.
func (g *Local) enqueue(c *conn, f []byte) bool {
	per, total := g.QueueBytes, g.TotalQueueBytes
	if per <= 0 {
		per = DefaultQueueBytes
	}
	if total <= 0 {
		total = DefaultTotalQueueBytes
	}
	n := int64(len(f))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return false
	}
	if c.queued.Add(n) > per {
		c.queued.Add(-n)
		return false
	}
	if g.queued.Add(n) > total {
		g.queued.Add(-n)
		c.queued.Add(-n)
		return false
	}
	select {
	case c.out <- f:
		return true
	default:
		g.queued.Add(-n)
		c.queued.Add(-n)
		return false
	}
}

// dequeued accounts for a frame taken from c's queue.
func (g *Local) dequeued(c *conn, f []byte) {
	c.queued.Add(-int64(len(f)))
	g.queued.Add(-int64(len(f)))
}

// Queued is how many bytes wait to be written to clients.
func (g *Local) Queued() int64 { return g.queued.Load() }

func (g *Local) register(r *http.Request) (*conn, bool) {
	q := g.Queue
	if q <= 0 {
		q = DefaultQueue
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := g.now()
	c := &conn{id: g.NewID(), connectedAt: now, lastActive: now, sourceIP: ip, userAgent: r.UserAgent(),
		out: make(chan []byte, q), done: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, false
	}
	if g.conns == nil {
		g.conns = map[string]*conn{}
	}
	g.conns[c.id] = c
	g.wg.Add(1)
	return c, true
}

func (g *Local) unregister(c *conn) {
	g.mu.Lock()
	delete(g.conns, c.id)
	g.mu.Unlock()
	c.mu.Lock()
	c.gone = true
	g.queued.Add(-c.queued.Swap(0)) // what it never wrote is dropped with it
	c.mu.Unlock()
	g.wg.Done()
}

func (g *Local) lookup(id string) *conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conns[id]
}

// ServeHTTP is the WebSocket endpoint: $connect before the upgrade (a
// refused connection gets the refusal's status and problem+json, and is
// never upgraded), then each frame to Routes.Message and its reply back,
// then $disconnect however the connection ends.
func (g *Local) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Upgrade", "websocket")
		w.WriteHeader(http.StatusUpgradeRequired)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": "Upgrade Required", "status": http.StatusUpgradeRequired,
			"detail": "this is the chat's WebSocket endpoint: connect with a WebSocket client (ws://…/ws?token=<token>&roomId=<room>)"})
		return
	}
	c, ok := g.register(r)
	if !ok {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	defer g.unregister(c)
	q := r.URL.Query()
	if err := g.Routes.Connect(r.Context(), ConnectRequest{ConnectionID: c.id, Token: q.Get("token"), Query: q}); err != nil {
		c.end(websocket.StatusNormalClosure, "")
		status, header, body := g.Refuse(err)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	// From here on the connection's item exists: however this ends,
	// $disconnect runs.
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		if err := g.Routes.Disconnect(ctx, c.id); err != nil {
			g.log().Warn("gateway: $disconnect failed (the connection's item expires with its ttl)", "connectionId", c.id, "err", err)
		}
	}()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: g.OriginPatterns})
	if err != nil {
		c.end(websocket.StatusProtocolError, "")
		return
	}
	ws.SetReadLimit(MaxFrame)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	go func() { // reader: frames in, replies queued
		defer c.end(websocket.StatusNormalClosure, "")
		for {
			_, frame, err := ws.Read(ctx)
			if err != nil {
				if s := websocket.CloseStatus(err); s == websocket.StatusMessageTooBig {
					c.end(websocket.StatusMessageTooBig, "frame too large")
				}
				return
			}
			c.mu.Lock()
			c.lastActive = g.now()
			c.mu.Unlock()
			if reply := g.Routes.Message(ctx, c.id, frame); reply != nil && !g.enqueue(c, reply) {
				c.end(websocket.StatusPolicyViolation, "too many frames waiting: the client does not read")
				return
			}
		}
	}()
	for { // writer: pushes and replies out, in order, until the end
		select {
		case f := <-c.out:
			g.dequeued(c, f)
			wctx, wcancel := context.WithTimeout(ctx, writeTimeout)
			err := ws.Write(wctx, websocket.MessageText, f)
			wcancel()
			if err != nil {
				c.end(websocket.StatusPolicyViolation, "")
				_ = ws.CloseNow()
				cancel()
				return
			}
		case <-c.done:
			c.mu.Lock()
			code, why := c.closeCode, c.closeWhy
			c.mu.Unlock()
			// The close handshake first: the reader reads the client's
			// close frame and ends. Cancelling the reader's context first
			// would make the library drop the connection without a close
			// frame (the client would read EOF, not the status).
			_ = ws.Close(code, why)
			cancel()
			return
		}
	}
}

// Close ends every connection (status 1001, going away) and waits for
// their $disconnect; new ones are refused. http.Server.Shutdown does not
// close upgraded connections: call Close with it.
func (g *Local) Close() {
	g.mu.Lock()
	g.closed = true
	for _, c := range g.conns {
		c.end(websocket.StatusGoingAway, "server shutting down")
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// Len is how many connections are open (or admitted and upgrading).
func (g *Local) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// Management is API Gateway's management endpoint for the local
// connections, at /@connections/{connectionId}: POST sends the body as one
// frame (200), GET describes the connection, DELETE closes it (204); an
// unknown connection is 410 GoneException. Errors have the shape the
// apigatewaymanagementapi client reads (X-Amzn-ErrorType and a message).
// With Auth, a request that is not signed with its credentials is 403
// ForbiddenException, before anything else is said.
func (g *Local) Management() http.Handler {
	mux := g.management()
	if g.Auth == nil {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxFrame+1))
		if err != nil {
			apiError(w, http.StatusBadRequest, "BadRequestException", "could not read the body")
			return
		}
		if err := g.Auth.Verify(r, body); err != nil {
			apiError(w, http.StatusForbidden, "ForbiddenException", err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r)
	})
}

// Alive reports whether a connection is open here (what API Gateway's
// GetConnection tells: store.ConnLimit.Alive).
func (g *Local) Alive(_ context.Context, connectionID string) (bool, error) {
	c := g.lookup(connectionID)
	if c == nil {
		return false, nil
	}
	select {
	case <-c.done:
		return false, nil
	default:
		return true, nil
	}
}

func (g *Local) management() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /@connections/{id}", func(w http.ResponseWriter, r *http.Request) {
		c := g.lookup(r.PathValue("id"))
		if c == nil {
			gone(w)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxFrame+1))
		switch {
		case err != nil:
			apiError(w, http.StatusBadRequest, "BadRequestException", "could not read the body")
			return
		case len(body) > MaxFrame:
			apiError(w, http.StatusRequestEntityTooLarge, "PayloadTooLargeException", "a frame is at most 128 KB")
			return
		}
		select {
		case <-c.done:
			gone(w)
			return
		default:
		}
		if !g.enqueue(c, body) {
			apiError(w, http.StatusTooManyRequests, "LimitExceededException", "too many frames or bytes waiting for this connection (or for all)")
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /@connections/{id}", func(w http.ResponseWriter, r *http.Request) {
		c := g.lookup(r.PathValue("id"))
		if c == nil {
			gone(w)
			return
		}
		c.mu.Lock()
		last := c.lastActive
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"connectedAt":  c.connectedAt.UTC().Format(time.RFC3339Nano),
			"lastActiveAt": last.UTC().Format(time.RFC3339Nano),
			"identity":     map[string]string{"sourceIp": c.sourceIP, "userAgent": c.userAgent},
		})
	})
	mux.HandleFunc("DELETE /@connections/{id}", func(w http.ResponseWriter, r *http.Request) {
		c := g.lookup(r.PathValue("id"))
		if c == nil {
			gone(w)
			return
		}
		c.end(websocket.StatusNormalClosure, "closed by the server")
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func gone(w http.ResponseWriter) {
	apiError(w, http.StatusGone, "GoneException", "the connection is gone")
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
