// Command projector derives the table's derived items from its stream. In
// Lambda it is the function of the stream's event source mapping; locally
// it polls the stream with the same semantics (package stream).
package main

import (
	"context"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
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
	p := &projections.Projector{Store: store.New(clients.DB, c.Table), Logger: log}
	app.ServeStream(c, log, "projector", p.Handle)
}
