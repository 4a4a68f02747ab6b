package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/audit"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/stream"
)

const usage = `projector derives the table's derived items from its stream: under Lambda the function of
the stream's event source mapping; elsewhere it polls the stream with the same semantics.

Usage:
  projector                    consume the stream (DYNAMODB_TABLE_NAME, DYNAMODB_ENDPOINT, STREAM_*, ADMIN_ADDR;
                               AUDIT_LOG=FILE: keep the audit trail there too, a second consumer on this reader)
  projector resubmit FILE      hand the dead letters in FILE to the handler again ("table": the bookkeeping table's)
  projector redrive [QUEUE_URL]
                               hand the records an on-failure queue's messages name to the handler again
  projector backfill [-segments N]
                               set the GSI1/GSI2 attributes of existing listings, the access items of
                               resources, and move the items of unsharded keys to their write shards
                               (STORE_SHARDS_*; safe to re-run, and reads work while it runs; a complete
                               run is recorded in the table, after which STORE_SHARDS_BACKFILLED=true
                               lets reads skip the unsharded keys)
  projector quarantine [-segments N]
                               list stored items the programs cannot decode (exit 1 when there are any)
  projector verify [-segments N] [-recheck D] [-examples N] [-json]
                               check the derived items against the core items (exit 1 on differences)
  projector rebuild [-dry-run] [-announce] [-workers N] (and verify's flags)
                               repair what verify finds

The commands use make run's stack (table search-room at http://127.0.0.1:8000) unless DYNAMODB_TABLE_NAME
is set; with DYNAMODB_TABLE_NAME and no DYNAMODB_ENDPOINT they use AWS, and say so.
`

// commands are the operator commands (the rest of the arguments are theirs).
var commands = []string{"resubmit", "redrive", "backfill", "quarantine", "verify", "rebuild"}

func main() {
	app.Help(usage)
	var defaulted string
	if len(os.Args) > 1 && slices.Contains(commands, os.Args[1]) {
		defaulted = app.LocalStackByDefault()
	} else if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "projector: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	c, err := app.LoadCommon()
	log := app.Logger(c, "projector")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	if defaulted != "" {
		log.Info(defaulted)
	}
	if app.NothingToResubmit(log) {
		return
	}
	log.Info("using " + app.Where(c))
	clients, err := ddb.New(context.Background(), c.DB)
	if err != nil {
		app.Fatal(log, "clients", err)
	}
	st := app.NewStore(c, clients)
	// every use but the quarantine's list reads or writes the sharded keys
	if len(os.Args) < 2 || os.Args[1] != "quarantine" {
		sub := ""
		if len(os.Args) > 1 {
			sub = os.Args[1]
		}
		// the stream's handler counts cooking changes (served, resubmitted
		// or redriven): it records the cooking layout's move if need be
		counts := sub == "" || sub == "resubmit" || sub == "redrive"
		if err := app.AgreeSharding(context.Background(), st, log, sub == "backfill", counts); err != nil {
			app.Fatal(log, "write shards", err)
		}
	}
	if len(os.Args) > 1 && command(st, c, os.Args[1], os.Args[2:]) {
		return
	}
	app.EnsureBookkeeping(c, clients, log)
	dl := app.DeadLetters(c, clients, "projector")
	every, err := app.Duration("PROJECTOR_DRAIN_EVERY", projections.DefaultDrainEvery)
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	p := &projections.Projector{Store: st, Logger: log, DeadLetters: dl, DrainEvery: every}
	cons := app.Consumer{Name: "projector", Handler: p.Handle, DeadLetters: dl, Quarantine: st.Quarantine,
		Filter: projections.Filter(), Skip: projections.Skip}
	if path := os.Getenv("AUDIT_LOG"); path != "" {
		// A user's consumer beside the projector, on its reader (the
		// stream's shards take two readers, and the notifier is the
		// other): the audit trail, a branch of a stream.Fanout.
		trail, err := audit.OpenFile(path)
		if err != nil {
			app.Fatal(log, "AUDIT_LOG", err)
		}
		fan := &stream.Fanout{Logger: log, Branches: []stream.Branch{
			{Name: "projector", Handler: p.Handle, DeadLetters: dl, Skip: projections.Skip},
			{Name: "audit", Handler: audit.Handler(trail), DeadLetters: app.DeadLetters(c, clients, "audit"), Skip: stream.SkipDerived},
		}}
		if cons.Handler, err = fan.Handler(); err != nil {
			app.Fatal(log, "fan-out", err)
		}
		cons.Branches = fan.Stats
		log.Info("the audit trail shares the projector's reader", "trail", path)
	}
	app.ServeStream(c, clients, log, cons)
}
