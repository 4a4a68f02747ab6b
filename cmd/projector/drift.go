//go:build !lambda.norpc

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/drift"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// driftOptions are verify's and rebuild's flags.
type driftOptions struct {
	segments int
	recheck  time.Duration
	examples int
	json     bool
	dryRun   bool
	announce bool
	workers  int
	journal  string
	fresh    bool
}

func parseDrift(name string, args []string, defaultJournal string) (driftOptions, error) {
	var o driftOptions
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.journal, "journal", defaultJournal, "keep the scan's pages in this file, so that a scan cut off goes on where it was when run again (removed once the scan is complete); empty: no journal")
	fs.BoolVar(&o.fresh, "fresh", false, "start the scan anew even if the journal holds an interrupted one")
	fs.IntVar(&o.segments, "segments", 4, "parallel scan segments")
	fs.DurationVar(&o.recheck, "recheck", 2*time.Second, "scan again after this long and keep only the differences found both times (changes still in the stream are not drift); 0: one scan")
	fs.IntVar(&o.examples, "examples", 3, "examples printed per kind of difference")
	fs.BoolVar(&o.json, "json", false, "print every difference as a JSON line instead of the summary")
	if name == "rebuild" {
		fs.BoolVar(&o.dryRun, "dry-run", false, "find the differences and write nothing (as verify)")
		fs.BoolVar(&o.announce, "announce", false, "let the notifier announce the repairs as domain events (by default a repair is no news)")
		fs.IntVar(&o.workers, "workers", 8, "repairs written at the same time")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.segments < 1 || o.segments > 1000 {
		return o, fmt.Errorf("-segments %d: want 1..1000", o.segments)
	}
	if o.workers == 0 {
		o.workers = 1
	}
	if o.recheck < 0 || o.examples < 0 || o.workers < 0 {
		return o, errors.New("-recheck and -examples cannot be negative")
	}
	return o, nil
}

// find scans the table (twice with a recheck) and returns the differences
// found, with the items scanned and the scan rate in items per second.
func find(ctx context.Context, log *slog.Logger, st *store.Store, o driftOptions) ([]drift.Difference, int64, float64, error) {
	total := itemCount(ctx, st)
	scan := func(what string, journalled bool) (*drift.Facts, float64, error) {
		var (
			j       *journal
			pages   []store.ScanPage
			add     func(store.ScanPage) error
			resumed int64 // items the journal's pages read
		)
		if journalled && o.journal != "" {
			var err error
			if j, pages, err = openJournal(o.journal, st.Table, o.segments, o.fresh); err != nil {
				return nil, 0, err
			}
			add = j.add
			for _, p := range pages {
				resumed += int64(p.Read)
			}
			if len(pages) > 0 {
				log.Info("going on with an interrupted scan (-fresh starts anew)", "journal", o.journal, "pages", len(pages), "itemsScanned", resumed)
			}
		}
		p := newProgress(log, what, total)
		f, err := st.Upkeep.ScanFactsFrom(ctx, o.segments, 0, pages, func(n int64) { p.set(n) }, projections.ExpectedActivities, add)
		if j != nil {
			j.end(log, err)
		}
		if err != nil {
			return nil, 0, err
		}
		f.Snapshot = projections.Snapshot
		f.ActivitiesSince = store.Timestamp(time.Now().Add(-room.ActivityTTL)) // older entries have expired
		// the rate of this run's own reading
		return f, p.finish(f.Scanned - resumed), nil
	}
	f, r, err := scan("scanning", true)
	if err != nil {
		return nil, 0, 0, err
	}
	diffs := drift.Check(f)
	log.Info("scan done", "scanned", f.Scanned, "itemsPerSecond", r, "differences", len(diffs))
	if len(diffs) == 0 || o.recheck == 0 {
		return diffs, f.Scanned, r, nil
	}
	log.Info("scanning again to leave out changes still in the stream", "after", o.recheck.String())
	select {
	case <-ctx.Done():
		return nil, 0, 0, ctx.Err()
	case <-time.After(o.recheck):
	}
	f2, _, err := scan("rescanning", false)
	if err != nil {
		return nil, 0, 0, err
	}
	again := drift.Recheck(diffs, drift.Check(f2))
	log.Info("rescan done", "differences", len(again), "transient", len(diffs)-len(again))
	return again, f.Scanned, r, nil
}

// itemCount is the table's item count as DescribeTable has it (AWS
// updates it every few hours: an estimate), or -1.
func itemCount(ctx context.Context, st *store.Store) int64 {
	out, err := st.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(st.Table)})
	if err != nil || out.Table.ItemCount == nil || *out.Table.ItemCount == 0 {
		return -1
	}
	return *out.Table.ItemCount
}

// printDiffs writes the differences: by kind with examples, or (-json)
// one JSON line each.
func printDiffs(w io.Writer, diffs []drift.Difference, o driftOptions) {
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, d := range diffs {
			_ = enc.Encode(d)
		}
		return
	}
	for _, s := range drift.Summarize(diffs, o.examples) {
		fmt.Fprintf(w, "%s: %d difference(s)\n", s.Kind, s.Count)
		for _, d := range s.Examples {
			fmt.Fprintf(w, "  %s: want %s, got %s\n", d.Key, d.Want, d.Got)
		}
	}
}

// scanned is what a verify or rebuild run found.
type scanned struct {
	log     *slog.Logger
	o       driftOptions
	ctx     context.Context
	diffs   []drift.Difference
	summary string
}

// scanFor parses name's flags, finds the differences and prints them; the
// caller stops the returned context's signals.
func scanFor(st *store.Store, c app.Common, name string, args []string) (scanned, context.CancelFunc) {
	log := app.Logger(c, name)
	o, err := parseDrift(name, args, filepath.Join(c.LocalDir, "projector-scan-"+st.Table+".jsonl"))
	if err != nil {
		app.Fatal(log, "bad arguments", err)
	}
	ctx, stop := app.SignalContext()
	diffs, n, r, err := find(ctx, log, st, o)
	if err != nil {
		stop()
		app.Fatal(log, name+" failed (it is safe to run again)", err)
	}
	printDiffs(os.Stdout, diffs, o)
	return scanned{log: log, o: o, ctx: ctx, diffs: diffs,
		summary: fmt.Sprintf("%d difference(s) in %d items scanned (%.0f items/s)", len(diffs), n, r)}, stop
}

// verify prints how the derived items differ from what the core items
// say; exit status 1 when they do.
func verify(st *store.Store, c app.Common, args []string) {
	sc, stop := scanFor(st, c, "verify", args)
	stop()
	fmt.Println(sc.summary)
	if len(sc.diffs) > 0 {
		os.Exit(1)
	}
}

// rebuild repairs the differences verify finds; exit status 1 when some
// could not be repaired (changed meanwhile: run it again).
func rebuild(st *store.Store, c app.Common, args []string) {
	sc, stop := scanFor(st, c, "rebuild", args)
	defer stop()
	log, o, ctx, diffs := sc.log, sc.o, sc.ctx, sc.diffs
	if o.dryRun || len(diffs) == 0 {
		fmt.Printf("%s%s\n", sc.summary, map[bool]string{true: "; nothing written (-dry-run)"}[o.dryRun])
		if len(diffs) > 0 {
			os.Exit(1)
		}
		return
	}
	run := ""
	if !o.announce {
		run = "rebuild-" + time.Now().UTC().Format("20060102T150405Z")
	}
	p := newProgress(log, "repairing", int64(len(diffs)))
	var (
		mu                      sync.Mutex
		done, repaired, changed int
		failed                  error
		wg                      sync.WaitGroup
	)
	work := make(chan drift.Difference)
	for range o.workers {
		wg.Go(func() {
			for d := range work {
				err := st.Upkeep.Repair(ctx, d, run)
				mu.Lock()
				switch {
				case errors.Is(err, store.ErrChangedMeanwhile):
					changed++
					log.Warn("changed since the scan; left as it is", "kind", d.Kind, "key", d.Key)
				case err != nil:
					failed = cmp.Or(failed, err)
				default:
					repaired++
				}
				done++
				p.set(int64(done), "repaired", repaired, "changedMeanwhile", changed)
				mu.Unlock()
			}
		})
	}
	for _, d := range diffs {
		work <- d
	}
	close(work)
	wg.Wait()
	if failed != nil {
		app.Fatal(log, "rebuild failed (it is safe to run again)", failed)
	}
	wr := p.finish(int64(len(diffs)))
	fmt.Printf("%s: %d repaired (%.0f/s), %d changed meanwhile (run again)\n", sc.summary, repaired, wr, changed)
	if changed > 0 {
		os.Exit(1)
	}
}
