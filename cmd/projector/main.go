package main

import (
	"context"
	"os"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

func main() {
	c, err := app.LoadCommon()
	log := app.Logger(c, "projector")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	clients, err := ddb.New(context.Background(), c.DB)
	if err != nil {
		app.Fatal(log, "clients", err)
	}
	st := store.New(clients.DB, c.Table)
	st.Bookkeeping = c.Bookkeeping
	if len(os.Args) > 1 && command(st, c, os.Args[1], os.Args[2:]) {
		return
	}
	app.EnsureBookkeeping(c, clients, log)
	dl := app.DeadLetters(c, clients, "projector")
	p := &projections.Projector{Store: st, Logger: log, DeadLetters: dl}
	app.ServeStream(c, clients, log, app.Consumer{Name: "projector", Handler: p.Handle, DeadLetters: dl, Quarantine: st.Quarantine,
		Skip: stream.SkipDerived})
}
