package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/stream"
)

// TestShortLoad runs loadgen as `make load` does — the real binaries on a
// local stack it starts — for a few seconds at a low rate, and checks that
// every kind of derivation was timed, nothing is missing, and the
// consumers' request counts came back. Then -catchup restarts each
// consumer with ParallelizationFactor 1, pauses it through its admin
// endpoint while writes go on, and times its catch-up.
func TestShortLoad(t *testing.T) {
	bin, err := buildPrograms()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	c, err := parseFlags([]string{"-rates", "30", "-duration", "4s", "-rooms", "6", "-resources", "4", "-locations", "2",
		"-bin", bin, "-local-dir", t.TempDir(), "-out", filepath.Join(t.TempDir(), "report.json"), "-raw", "500ms", "-warmup", "1s",
		"-catchup", "2s", "-catchup-pf", "1"})
	if err != nil {
		t.Fatal(err)
	}
	rep, p := runOnePhase(t, c, 4*time.Minute)
	if len(rep.CatchUps) != 2 {
		t.Errorf("%d catch-ups, want the projector's and the notifier's", len(rep.CatchUps))
	}
	for i, cu := range rep.CatchUps {
		if cu.Consumer != []string{"projector", "notifier"}[i] || cu.ParallelizationFactor != 1 || cu.Error != "" || cu.Backlog <= 0 ||
			cu.PausedSecs < 2 || cu.DrainSecs <= 0 || cu.TimesWriteRate <= 0 || cu.Phase.Writes == 0 || sum(cu.Phase.Missing) != 0 {
			t.Errorf("catch-up %d: %+v", i, cu)
		}
		if l := cu.line(); !strings.HasPrefix(l, "catch-up: "+cu.Consumer+" drained a 2 s backlog at ") || !strings.Contains(l, "x the write rate") {
			t.Errorf("catch-up line %q", l)
		}
	}
	if rep.Verify == nil || rep.Verify.Error != "" || rep.Verify.Differences != 0 {
		t.Errorf("verify after the catch-ups: %+v", rep.Verify)
	}
	// the bill: its side effects counted in the phase, and priced
	if p.Effects.Events == 0 || p.Effects.Emails == 0 || p.Effects.DerivedChangeUnits <= 0 {
		t.Errorf("effects %+v", p.Effects)
	}
	if b := rep.Cost; b == nil || len(b.Lines) != 9 || b.Total <= 0 || b.Minimum <= 0 || b.Phase != p.TargetRate {
		t.Errorf("bill %+v", b)
	}
	if p.Writes < 60 {
		t.Errorf("%d writes, want at least 60", p.Writes)
	}
	for _, k := range kinds {
		if d := p.Lag[k]; d.N == 0 || d.P50Ms < 0 || d.MaxMs < d.P99Ms || d.P99Ms < d.P50Ms {
			t.Errorf("lag of %s: %+v", k, d)
		}
	}
	for _, name := range []string{"projector", "notifier"} {
		cr, ok := p.Consumers[name]
		if !ok || cr.Records == 0 || cr.DataRequests == 0 || cr.CheckpointRequests == 0 || cr.StreamRequests == 0 {
			t.Errorf("%s's metrics: %+v (ok %v)", name, cr, ok)
		}
	}
	if p.CPU.MachineBusyPercent <= 0 || p.CPU.DynamoDBLocalCores <= 0 || p.WriterRequestsPerWrite <= 0 {
		t.Errorf("CPU %+v, writer requests per write %v", p.CPU, p.WriterRequestsPerWrite)
	}
	if rep.DynamoDBLocalWritesPerSec <= 0 {
		t.Errorf("raw write rate %v", rep.DynamoDBLocalWritesPerSec)
	}
	if rep.Knee > 0 && math.Abs(rep.KneeFractionOfRaw-rep.Knee/rep.DynamoDBLocalWritesPerSec) > 1e-9 {
		t.Errorf("knee %v at raw %v: fraction %v", rep.Knee, rep.DynamoDBLocalWritesPerSec, rep.KneeFractionOfRaw)
	}
	if v := rep.verdict(); rep.Knee > 0 && !strings.Contains(v, "× the raw PutItem rate") {
		t.Errorf("the verdict does not give the knee as a fraction of the raw rate: %s", v)
	}
	// The programs' EMF lines, read back from the stack's log, cover the
	// same work as their counters (more: the set-up and warm-up too).
	if e := rep.EMF; e == nil || e.Lines == 0 || e.Invalid != 0 {
		t.Errorf("EMF %+v", e)
	} else {
		for _, name := range []string{"projector", "notifier"} {
			ec, cr := e.Consumers[name], p.Consumers[name]
			t.Logf("%s: EMF %d calls, %d records; counters %d calls, %d records (%d filtered out, %d skipped); status %s", name, ec.Calls, ec.Records, cr.HandlerCalls, cr.Records, cr.FilteredOut, cr.Skipped, cr.Status)
			if cr.Status != stream.Idle && cr.Status != stream.OK {
				t.Errorf("%s's health at the end: %s %s", name, cr.Status, cr.Reason)
			}
			if ec.Calls < cr.HandlerCalls || ec.Records < cr.Records-cr.FilteredOut-cr.Skipped || ec.Duration.N != int(ec.Calls) {
				t.Errorf("%s: EMF %+v, counters %+v", name, ec, cr)
			}
		}
		if e.Writer.Requests < int64(p.Writes) || e.Writer.Latency.N != int(e.Writer.Requests) {
			t.Errorf("writer EMF %+v, %d writes", e.Writer, p.Writes)
		}
	}
	if err := writeJSON(c.out, rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.out)
	var back Report
	if err == nil {
		err = json.Unmarshal(b, &back)
	}
	if err != nil || len(back.Phases) != 1 || back.Phases[0].Writes != p.Writes {
		t.Errorf("JSON report read back: %v, %+v", err, back.Phases)
	}
	// the HTML report: a second per window, the writes all in them
	written := 0
	for _, w := range p.Timeline {
		written += w.Writes
	}
	if len(p.Timeline) == 0 || written != p.Writes {
		t.Errorf("timeline of %d windows holds %d writes, want %d", len(p.Timeline), written, p.Writes)
	}
	if err := writeHTML(htmlPath(c.out), rep); err != nil {
		t.Fatal(err)
	}
	if page, err := os.ReadFile(htmlPath(c.out)); err != nil || strings.Count(string(page), "<polyline") < 4 {
		t.Errorf("HTML report: %v, %d lines", err, strings.Count(string(page), "<polyline"))
	}
}

// runOnePhase runs loadgen with c (one measured phase), logs its report,
// and checks what every run must give: no failed write, nothing still
// missing after the drain, progress lines.
func runOnePhase(t *testing.T, c config, limit time.Duration) (*Report, PhaseReport) {
	t.Helper()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	rep, err := run(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil)), &progress)
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	var out bytes.Buffer
	rep.print(&out)
	t.Log(out.String())
	if len(rep.Phases) != 1 {
		t.Fatalf("%d phases, want 1", len(rep.Phases))
	}
	p := rep.Phases[0]
	if p.Errors != 0 || p.Writes == 0 {
		t.Errorf("writer: %d errors in %d writes: %v", p.Errors, p.Writes, p.FirstErrors)
	}
	if p.NotSent != 0 {
		// The writer did not keep up with the rate on this machine (a busy
		// one: the other test binaries run beside this one). That is a
		// speed, which make load measures and the tests do not assert;
		// every check here is of the writes that were made.
		t.Logf("%d writes not sent: the writer fell behind the target rate on this machine", p.NotSent)
	}
	if n := sum(p.Missing); n != 0 {
		t.Errorf("%d derived items or effects still missing %s after the load: %v", n, c.drain, p.Missing)
	}
	if !strings.Contains(progress.String(), "phase 1: ") {
		t.Errorf("no progress lines:\n%s", progress.String())
	}
	// The derived items drift covers equal what the core items say, faults
	// and crashes or not.
	if v := rep.Verify; v == nil || v.Error != "" || v.Differences != 0 || v.Scanned == 0 {
		t.Errorf("projector verify after the run: %s", v)
	}
	return rep, p
}
