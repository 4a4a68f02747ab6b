package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/oklog/ulid/v2"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/devguard"
	"github.com/dynastream/dynastream/internal/gateway"
	"github.com/dynastream/dynastream/internal/push"
)

// DefaultAddr is where the local writer listens: loopback only, as its dev
// tokens authenticate anyone who asks.
const DefaultAddr = app.DefaultWriterAddr

// server builds the writer's API. In Lambda the identity comes from API
// Gateway's JWT authorizer and there is no /dev/tokens route at all, so no
// dev token is ever accepted there; locally dev tokens are signed with
// cfg.devSecret.
func server(c app.Common, clients *ddb.Clients, log *slog.Logger, cfg config) (*api.Server, error) {
	st := app.NewStore(c, clients) // the bookkeeping table: invite rate windows, idempotency records
	st.InviteLimits = cfg.invites
	hold := cfg.hold
	var err error
	srv := &api.Server{
		Store:   st,
		Logger:  log,
		Now:     time.Now,
		NewID:   newID,
		Observe: app.RequestMetrics(app.EMF("writer")),

		IdempotencyHold: hold,
	}
	if app.LambdaBuild || cfg.lambda {
		if cfg.managementEndpoint != "" {
			srv.ConnectionAlive = push.NewProbe(clients.AWS, cfg.managementEndpoint).Alive
		}
		srv.Auth = auth.APIGateway{}
		// The WebSocket API has no JWT authorizer: $connect verifies the
		// token against the same issuer and audience as the HTTP API's.
		if srv.Tokens, err = auth.NewCognito(context.Background(), cfg.jwtIssuer, cfg.jwtAudience); err != nil {
			return nil, err
		}
		return srv, nil
	}
	dev := &auth.DevTokens{Secret: []byte(cfg.devSecret), Issuer: "dynastream-local"}
	srv.Auth, srv.DevTokens, srv.Tokens = dev, dev, dev
	return srv, nil
}

// newID makes the writer's ids: ULIDs (sortable by time) whose 80 random
// bits come from crypto/rand, so no id tells the next one (ulid.Make draws
// them from math/rand seeded with the start time). Safe for concurrent
// requests.
func newID() string {
	return ulid.MustNew(ulid.Now(), rand.Reader).String()
}

// lambdaHandler serves both APIs in one function: API Gateway's WebSocket
// events (they carry requestContext.eventType) go to the chat's routes,
// HTTP API (payload 2.0) events to the HTTP handler.
func lambdaHandler(srv *api.Server) func(context.Context, json.RawMessage) (any, error) {
	httpAPI := httpadapter.NewV2(srv.Handler())
	ws := gateway.Lambda{Routes: srv.Chat(), Refuse: srv.Refusal}
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			RequestContext struct {
				EventType string `json:"eventType"`
			} `json:"requestContext"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("writer: an event that is not a JSON object: %w", err)
		}
		if probe.RequestContext.EventType != "" {
			var ev events.APIGatewayWebsocketProxyRequest
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, fmt.Errorf("writer: WebSocket event: %w", err)
			}
			return ws.Handle(ctx, ev)
		}
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("writer: HTTP API event: %w", err)
		}
		return httpAPI.ProxyWithContext(ctx, ev)
	}
}

// devRoutes are the routes only the local writer has, named by the
// warning a wider WRITER_ADDR gets.
const devRoutes = "POST /dev/tokens (a token for any user, admins included), " +
	"GET/POST/DELETE /@connections/{id} (API Gateway's management endpoint: read, push to and close any chat connection; SigV4 with CHAT_PUSH_SECRET), " +
	"/ws (the chat's WebSocket endpoint), GET /app/… (the pages the e-mails link to: instructions only)"

// localHandler is the writer's HTTP API with the chat's WebSocket
// endpoint at /ws and API Gateway's management endpoint at /@connections/
// (the notifier pushes through it), behind devguard: only requests
// addressed to this machine's loopback on port (or to one of hosts), no
// cross-site browser request that changes something, and JSON only on
// POST /dev/tokens.
func localHandler(srv *api.Server, gw *gateway.Local, port string, hosts []string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/ws", gw)
	mux.Handle("/@connections/", api.ReadDeadline(gw.Management(), api.BodyTimeout))
	mux.Handle("GET /app/", appPages("http://127.0.0.1:"+port))
	mux.Handle("/", api.ReadDeadline(srv.Handler(), api.BodyTimeout))
	return devguard.Guard{Port: port, Hosts: hosts, JSONOnly: func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/dev/tokens"
	}}.Wrap(mux)
}

const usage = `writer serves the HTTP API that writes the table's core items (and the chat's WebSocket routes):
behind API Gateway under Lambda, a net/http server elsewhere.

Usage:
  writer

Environment: DYNAMODB_TABLE_NAME, DYNAMODB_ENDPOINT (empty: AWS), AWS_REGION, WRITER_ADDR (default
127.0.0.1:8080), WRITER_ALLOWED_HOSTS, DEV_AUTH_SECRET and CHAT_PUSH_SECRET (required outside Lambda),
ADMIN_ADDR, LOG_LEVEL (see docs/operations.md, Configuration). make run starts it with all of these set.
`

func main() {
	app.Help(usage)
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "writer: unexpected argument %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	c, err := app.LoadCommon()
	log := app.Logger(c, "writer")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	// Every write of a request is its own (its ids and, with an
	// Idempotency-Key, its times): one found already written is done.
	c.DB.OwnWrites = true
	clients, err := ddb.New(context.Background(), c.DB)
	if err != nil {
		app.Fatal(log, "clients", err)
	}
	app.EnsureBookkeeping(c, clients, log) // invite rate windows (local; the template makes it in AWS)
	cfg, err := loadConfig(app.LambdaBuild || app.InLambda())
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	srv, err := server(c, clients, log, cfg)
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	if err := app.AgreeSharding(context.Background(), srv.Store, log, false, false); err != nil {
		app.Fatal(log, "write shards", err)
	}
	if app.LambdaBuild || app.InLambda() {
		app.StartLambda(log, lambdaHandler(srv))
		return
	}
	addr, hosts := cfg.addr, cfg.allowedHosts
	if app.Exposed(addr) {
		log.Warn("the writer listens beyond this machine: its dev-only routes answer anyone who reaches it and names it in Host (WRITER_ALLOWED_HOSTS) — keep WRITER_ADDR on 127.0.0.1 unless that is what you want",
			"addr", addr, "devOnlyRoutes", devRoutes, "allowedHosts", hosts)
	}
	pushSecret := cfg.pushSecret
	ctx, stop := app.SignalContext()
	defer stop()
	if err := app.ServeAdmin(ctx, log, cfg.adminAddr, "writer", clients, srv.Store.Quarantine); err != nil {
		app.Fatal(log, "admin endpoint", err)
	}
	gw := &gateway.Local{Routes: srv.Chat(), Refuse: srv.Refusal, NewID: srv.NewID, Logger: log,
		Auth: &gateway.SigV4{AccessKeyID: app.LocalPushKeyID, SecretAccessKey: pushSecret}}
	srv.ConnectionAlive = gw.Alive // the gateway is this process
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		app.Fatal(log, "listen (is another writer running? set WRITER_ADDR)", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// Headers within 5 s, a body within api.BodyTimeout (api.ReadDeadline),
	// an idle keep-alive connection closed after 2 minutes.
	hs := &http.Server{Handler: localHandler(srv, gw, port, hosts), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		gw.Close() // Shutdown leaves upgraded connections open
	}()
	log.Info("writer listening", "addr", ln.Addr().String(), "table", c.Table)
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		app.Fatal(log, "serve", err)
	}
	log.Info("stopped")
}
