package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
	for _, lambda := range []bool{true, false} {
		srv, err := server(c, clients, log, lambda, secret)
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
		}
		ts.Close()
	}
	if _, err := server(c, clients, log, false, ""); err == nil {
		t.Error("local mode without DEV_AUTH_SECRET was accepted")
	}
	if app.Exposed(DefaultAddr) {
		t.Errorf("the default address %s reaches beyond this machine", DefaultAddr)
	}
}
