//go:build !lambda.norpc

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/store"
)

// command runs the operator's subcommand name (backfill, quarantine,
// verify, rebuild), reporting false when name is none of them. A Lambda
// build has none (commands_lambda.go): they run from a shell.
func command(st *store.Store, c app.Common, name string, args []string) bool {
	switch name {
	case "backfill":
		backfill(st, c, args)
	case "quarantine":
		quarantine(st, c, args)
	case "verify":
		verify(st, c, args)
	case "rebuild":
		rebuild(st, c, args)
	default:
		return false
	}
	return true
}

// scanCommand reads a table-scanning command's flags (-segments) and gives
// its logger and a context that SIGINT or SIGTERM cancels.
func scanCommand(c app.Common, name string, args []string) (*slog.Logger, *int, context.Context, context.CancelFunc) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	segments := fs.Int("segments", 4, "parallel scan segments")
	_ = fs.Parse(args)
	ctx, stop := app.SignalContext()
	return app.Logger(c, name), segments, ctx, stop
}

func backfill(st *store.Store, c app.Common, args []string) {
	log, segments, ctx, stop := scanCommand(c, "backfill", args)
	defer stop()
	start := time.Now()
	p := newProgress(log, "backfill", itemCount(ctx, st))
	stats, err := st.Upkeep.BackfillListingIndexes(ctx, *segments, func(s store.BackfillStats) {
		p.set(s.Scanned, "listings", s.Listings, "updated", s.Updated, "unchanged", s.Unchanged)
	})
	r := p.finish(stats.Scanned)
	log.Info("backfill done", "scanned", stats.Scanned, "listings", stats.Listings, "updated", stats.Updated,
		"unchanged", stats.Unchanged, "retried", stats.Retried, "seconds", time.Since(start).Seconds(), "itemsPerSecond", r)
	if err != nil {
		app.Fatal(log, "backfill failed (it is safe to run again)", err)
	}
	// Access items of resources written before they existed.
	start = time.Now()
	p = newProgress(log, "backfill access", itemCount(ctx, st))
	as, err := st.Collab.BackfillResourceAccess(ctx, *segments, func(s store.AccessBackfillStats) {
		p.set(s.Scanned, "granted", s.Granted, "raced", s.Raced)
	})
	r = p.finish(as.Scanned)
	log.Info("backfill access done", "scanned", as.Scanned, "granted", as.Granted, "raced", as.Raced,
		"seconds", time.Since(start).Seconds(), "itemsPerSecond", r)
	if as.Raced > 0 {
		log.Warn("backfill access: some resources changed during the scan; run it again", "raced", as.Raced)
	}
	if err != nil {
		app.Fatal(log, "backfill of access items failed (it is safe to run again)", err)
	}
	// Recent items written in recipes' partitions by builds before the
	// move, into their cooks' (store.BackfillCookingPartitions).
	start = time.Now()
	p = newProgress(log, "backfill cookings", itemCount(ctx, st))
	ms, err := st.Upkeep.BackfillCookingPartitions(ctx, *segments, time.Now(), func(s store.MoveStats) {
		p.set(s.Scanned, "recents", s.Recents, "moved", s.Moved, "gone", s.Gone, "skipped", s.Skipped)
	})
	r = p.finish(ms.Scanned)
	switch {
	case errors.Is(err, store.ErrMoveTooEarly):
		log.Warn("backfill cookings: not now (the rest of the backfill goes on)", "why", err.Error())
	case err != nil:
		app.Fatal(log, "backfill of the recent items' partitions failed (it is safe to run again)", err)
	case ms.Skipped > 0:
		log.Warn("backfill cookings: some recent items in recipes' partitions cannot be read and were left; the move is not recorded "+
			"(`projector quarantine` lists them; fix or delete them and run the backfill again)", "skipped", ms.Skipped)
	default:
		log.Info("backfill cookings done", "scanned", ms.Scanned, "recents", ms.Recents, "moved", ms.Moved, "gone", ms.Gone,
			"seconds", time.Since(start).Seconds(), "itemsPerSecond", r)
	}
	// The hot index keys' items into their write shards (store.Sharding).
	start = time.Now()
	p = newProgress(log, "backfill shards", itemCount(ctx, st))
	ss, err := st.Upkeep.BackfillIndexShards(ctx, *segments, func(s store.ShardStats) {
		p.set(s.Scanned, "indexed", s.Indexed, "moved", s.Moved, "unmoved", s.Unmoved)
	})
	r = p.finish(ss.Scanned)
	log.Info("backfill shards done", "recentShards", st.Sharding.Recent, "trendingShards", st.Sharding.Trending, "methodShards", st.Sharding.Method,
		"scanned", ss.Scanned, "indexed", ss.Indexed, "moved", ss.Moved, "unmoved", ss.Unmoved, "overtook", ss.Overtook,
		"seconds", time.Since(start).Seconds(), "itemsPerSecond", r)
	if err != nil {
		app.Fatal(log, "backfill of index shards failed (it is safe to run again)", err)
	}
	// The unsharded keys are empty now: the table says so, and reads may
	// skip them (STORE_SHARDS_BACKFILLED=true).
	kinds, err := st.Upkeep.MarkBackfilled(ctx)
	if err != nil {
		app.Fatal(log, "backfill of index shards", err)
	}
	if len(kinds) > 0 {
		log.Info("the table records the unsharded keys as empty: reads may skip them from now on (STORE_SHARDS_BACKFILLED=true)", "kinds", kinds)
	}
}

// quarantine lists the stored items readers skip because they cannot be
// decoded: one JSON line each on stdout, a summary on stderr; exit status 1
// when there are any.
func quarantine(st *store.Store, c app.Common, args []string) {
	log, segments, ctx, stop := scanCommand(c, "quarantine", args)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	bad := 0
	scanned, err := st.ScanQuarantine(ctx, *segments, func(b store.BadItem) {
		bad++
		_ = enc.Encode(map[string]string{"pk": b.Key.PK, "sk": b.Key.SK, "itemType": b.ItemType, "reason": b.Reason})
	})
	if err != nil {
		app.Fatal(log, "scan failed", err)
	}
	log.Info("quarantine scan done", "scanned", scanned, "undecodable", bad)
	if bad > 0 {
		os.Exit(1)
	}
}
