package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/oklog/ulid/v2"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/store"
)

func main() {
	c, err := app.LoadCommon()
	log := app.Logger(c, "writer")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	clients, err := ddb.New(context.Background(), c.DB)
	if err != nil {
		app.Fatal(log, "clients", err)
	}
	srv := &api.Server{
		Store:  store.New(clients.DB, c.Table),
		Logger: log,
		Now:    time.Now,
		NewID:  func() string { return ulid.Make().String() }, // safe for concurrent requests
	}
	if app.InLambda() {
		srv.Auth = auth.APIGateway{}
		lambda.Start(httpadapter.NewV2(srv.Handler()).ProxyWithContext)
		return
	}
	secret := os.Getenv("DEV_AUTH_SECRET")
	if secret == "" {
		app.Fatal(log, "bad configuration", errors.New("DEV_AUTH_SECRET is required outside Lambda (it signs the local dev tokens)"))
	}
	dev := &auth.DevTokens{Secret: []byte(secret), Issuer: "dynastream-local"}
	srv.Auth, srv.DevTokens = dev, dev
	addr := os.Getenv("WRITER_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	ctx, stop := app.SignalContext()
	defer stop()
	if err := app.ServeAdmin(ctx, log, os.Getenv("ADMIN_ADDR"), "writer", clients, srv.Store.Quarantine); err != nil {
		app.Fatal(log, "admin endpoint", err)
	}
	hs := &http.Server{Addr: addr, Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		app.Fatal(log, "listen (is another writer running? set WRITER_ADDR)", err)
	}
	log.Info("writer listening", "addr", ln.Addr().String(), "table", c.Table)
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		app.Fatal(log, "serve", err)
	}
	log.Info("stopped")
}
