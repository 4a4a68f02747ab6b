package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/oklog/ulid/v2"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddb"
)

// In Lambda mode there is no /dev/tokens route, and a dev token — signed
// with any secret, the local one included — authenticates nobody: identity
// comes only from API Gateway's JWT authorizer. Locally the route exists.
func TestDevTokensImpossibleInLambda(t *testing.T) {
	clients, err := ddb.New(context.Background(), ddb.Config{Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	c := app.Common{Table: "t"}
	log := slog.New(slog.DiscardHandler)
	const secret = "a local secret, 32 bytes long..."
	tok, err := auth.DevTokens{Secret: []byte(secret), Issuer: "dynastream-local"}.Mint("admin", []string{"admins"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEV_AUTH_SECRET", secret)
	t.Setenv("CHAT_PUSH_SECRET", "a push secret")
	if _, err := loadConfig(true); err == nil || !strings.Contains(err.Error(), "JWT_ISSUER") {
		t.Fatalf("Lambda without JWT_ISSUER: %v", err)
	}
	t.Setenv("JWT_ISSUER", "http://127.0.0.1:1/pool") // keys never load: every token is refused
	t.Setenv("JWT_AUDIENCE", "client")
	for _, lambda := range []bool{true, false} {
		cfg, err := loadConfig(lambda)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := server(c, clients, log, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		resp, err := http.Post(ts.URL+"/dev/tokens", "application/json", strings.NewReader(`{"userId":"admin","groups":["admins"]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 404, false: 201}[lambda]; resp.StatusCode != want {
			t.Errorf("lambda %v: POST /dev/tokens %d, want %d", lambda, resp.StatusCode, want)
		}
		if lambda {
			req, _ := http.NewRequest("GET", ts.URL+"/me/rooms", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("lambda: a dev token got %d, want 401", resp.StatusCode)
			}
			// Nor does one open a chat connection.
			h := lambdaHandler(srv)
			out, err := h(context.Background(), json.RawMessage(`{"requestContext":{"eventType":"CONNECT","routeKey":"$connect","connectionId":"abc="},
				"queryStringParameters":{"token":"`+tok+`"}}`))
			if res, ok := out.(events.APIGatewayProxyResponse); err != nil || !ok || res.StatusCode != 401 {
				t.Errorf("lambda: $connect with a dev token: %+v %v, want 401", out, err)
			}
			// An HTTP API event goes to the HTTP routes.
			out, err = h(context.Background(), json.RawMessage(`{"version":"2.0","routeKey":"$default","rawPath":"/healthz","requestContext":{"http":{"method":"GET","path":"/healthz"}}}`))
			if res, ok := out.(events.APIGatewayV2HTTPResponse); err != nil || !ok || res.StatusCode != 200 {
				t.Errorf("lambda: GET /healthz: %+v %v", out, err)
			}
		}
		ts.Close()
	}
	t.Setenv("DEV_AUTH_SECRET", "")
	t.Setenv("CHAT_PUSH_SECRET", "")
	t.Setenv("INVITE_WINDOW", "soon")
	// every problem named at once
	if _, err := loadConfig(false); err == nil || !strings.Contains(err.Error(), "DEV_AUTH_SECRET") ||
		!strings.Contains(err.Error(), "CHAT_PUSH_SECRET") || !strings.Contains(err.Error(), "INVITE_WINDOW") {
		t.Errorf("local mode without its secrets: %v", err)
	}
	if app.Exposed(DefaultAddr) {
		t.Errorf("the default address %s reaches beyond this machine", DefaultAddr)
	}
}

// The writer's ids are well-formed ULIDs of now, all different.
func TestNewIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newID()
		u, err := ulid.ParseStrict(id)
		if err != nil || seen[id] {
			t.Fatalf("%s: %v (seen %v)", id, err, seen[id])
		}
		seen[id] = true
		if d := time.Since(ulid.Time(u.Time())); d < 0 || d > time.Minute {
			t.Fatalf("%s: time %v", id, ulid.Time(u.Time()))
		}
	}
}
