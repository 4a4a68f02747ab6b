package main

import (
	"context"
	"flag"
	"os"
	"time"

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
	st := store.New(clients.DB, c.Table)
	if len(os.Args) > 1 && os.Args[1] == "backfill" {
		backfill(st, c, os.Args[2:])
		return
	}
	p := &projections.Projector{Store: st, Logger: log}
	app.ServeStream(c, clients, log, "projector", p.Handle)
}

func backfill(st *store.Store, c app.Common, args []string) {
	log := app.Logger(c, "backfill")
	fs := flag.NewFlagSet("backfill", flag.ExitOnError)
	segments := fs.Int("segments", 4, "parallel scan segments")
	_ = fs.Parse(args)
	ctx, stop := app.SignalContext()
	defer stop()
	start := time.Now()
	last := time.Time{}
	stats, err := st.BackfillListingIndexes(ctx, *segments, func(s store.BackfillStats) {
		if time.Since(last) >= time.Second {
			last = time.Now()
			log.Info("backfill progress", "scanned", s.Scanned, "listings", s.Listings, "updated", s.Updated, "unchanged", s.Unchanged)
		}
	})
	log.Info("backfill done", "scanned", stats.Scanned, "listings", stats.Listings, "updated", stats.Updated,
		"unchanged", stats.Unchanged, "retried", stats.Retried, "seconds", time.Since(start).Seconds())
	if err != nil {
		app.Fatal(log, "backfill failed (it is safe to run again)", err)
	}
}
