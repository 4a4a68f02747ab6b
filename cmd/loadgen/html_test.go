package main

import (
	"bytes"
	"context"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sampleReport is a run of two phases: 100 writes/s within the knee, 150
// beyond it (its lag growing), every derivation present.
func sampleReport() *Report {
	rep := &Report{StartedAt: time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC), DynamoDBLocalWritesPerSec: 900, Knee: 100}
	rep.Machine.CPUs, rep.Machine.OS, rep.Machine.Go = 2, "linux/amd64", "go1.26.8"
	for i, rate := range []float64{100, 150} {
		p := PhaseReport{TargetRate: rate, AchievedRate: rate - float64(i)*20, Missing: map[string]int{}}
		for s := range 20 {
			w := Window{T: float64(s), Writes: int(rate) - i*20 - s%3, WriterP50Ms: 20 + float64(i*200), WriterP99Ms: 90 + float64(i*400+s), LagP99Ms: map[string]float64{}}
			for k, kind := range kinds {
				w.LagP99Ms[kind] = 100 + float64(k*40) + float64(i*s*300)
			}
			p.Timeline = append(p.Timeline, w)
		}
		p.LagP99Ms = 400 + float64(i*6000)
		p.WriterByRoute = map[string]RouteCost{"PUT /rooms/{roomId}/criteria": {Writes: 100, RequestsPerWrite: 1, WriteUnitsPerWrite: 8, Minimum: &Minimum{Read: 2, Write: 4}, Ratio: 1.33}}
		rep.Phases = append(rep.Phases, p)
	}
	return rep
}

// The page stands alone (no script, nothing fetched) and has its four
// charts: a line per derivation, the rate against its target, the
// writer's p50 and p99, a bar per phase.
func TestHTMLReportIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().html(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "src=", "<link", "http:", "https:", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q: it must stand alone", bad)
		}
	}
	if n := strings.Count(page, "<svg"); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
	if n := strings.Count(page, "<polyline"); n != len(kinds)+4 {
		t.Errorf("%d lines, want %d", n, len(kinds)+4)
	}
	if !strings.Contains(page, "<td>PUT /rooms/{roomId}/criteria</td>") || !strings.Contains(page, "<td>2 + 4</td>") {
		t.Error("the page has no row for the route's cost")
	}
	if n := strings.Count(page, `<rect x=`); n < 2 {
		t.Errorf("%d bars and swatches, want the two phases' bars at least", n)
	}
}

// The report as a browser draws it: headless Chromium takes a screenshot
// of the page, and every chart's colours are on it (each derivation's
// line, the achieved and target rates, the writer's p50 and p99, a bar
// within the knee and one beyond).
func TestHTMLReportInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not on PATH (apt-get install chromium): the report was not drawn in a browser")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := writeHTML(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=1200,1800", "--screenshot="+shot, "file://"+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"achieved": colorAchieved, "target": colorTarget, "p50": colorP50, "p99": colorP99, "within the knee": colorPass, "beyond it": colorFail}
	for _, k := range kinds {
		want[k] = kindColors[k]
	}
	for name, hex := range want {
		if n := pixels(img, hex); n < 30 {
			t.Errorf("%s (%s): %d pixels on the screenshot, want a line or bar drawn", name, hex, n)
		}
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "loadgen-report-shot.png")
		if b, err := os.ReadFile(shot); err == nil && os.WriteFile(keep, b, 0o644) == nil {
			t.Logf("the screenshot: %s", keep)
		}
	}
}

// pixels counts the pixels of img within a few steps of the colour hex.
func pixels(img image.Image, hex string) int {
	v, _ := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	want := [3]int{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
	const tolerance = 6
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			got := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
			ok := true
			for i := range got {
				if d := got[i] - want[i]; d > tolerance || d < -tolerance {
					ok = false
				}
			}
			if ok {
				n++
			}
		}
	}
	return n
}

// A phase's timeline has a window per second of its duration; a write
// answered after it counts in the last one, and a lag in the second its
// write was answered.
func TestTimeline(t *testing.T) {
	start := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	dones := []timed{{at(0.2), 10 * time.Millisecond}, {at(0.7), 30 * time.Millisecond}, {at(2.5), 20 * time.Millisecond}, {at(3.4), 50 * time.Millisecond}}
	lags := []lagged{{at(0.7), map[string]time.Duration{kindActivity: 300 * time.Millisecond}}, {at(3.4), map[string]time.Duration{kindEvent: 2 * time.Second}}}
	got := timeline(start, 3*time.Second, dones, lags)
	if len(got) != 3 {
		t.Fatalf("%d windows, want 3: %+v", len(got), got)
	}
	if got[0].Writes != 2 || got[0].WriterP99Ms != 30 || got[0].LagP99Ms[kindActivity] != 300 {
		t.Errorf("second 0: %+v", got[0])
	}
	if got[1].Writes != 0 || got[1].LagP99Ms != nil {
		t.Errorf("second 1: %+v, want empty", got[1])
	}
	if got[2].Writes != 2 || got[2].WriterP50Ms != 20 || got[2].LagP99Ms[kindEvent] != 2000 {
		t.Errorf("second 2 (with the late answer): %+v", got[2])
	}
}

// A bar chart's labels never lie on top of each other: short ones stand
// level under their bars with room between them; ones wider than their
// bar (partition keys) are slanted, in parallel lines at least a line's
// height apart, and the chart grows to hold the longest.
func TestBarLabelsAreReadable(t *testing.T) {
	label := regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)" [^>]*text-anchor="(middle|end)"( transform="rotate\(-([0-9.]+) [^"]*\)")?>([^<]*)</text>`)
	height := regexp.MustCompile(`viewBox="0 0 [0-9.]+ ([0-9.]+)"`)
	for _, labels := range [][]string{
		{"100/s", "125/s", "150/s", "175/s"},
		{"GSI3 TRENDING#2026-W01#1 per week", "GSI3 RECENT#2026-01 per month", "table RECIPE#01JABCDEFGHJKMNPQRSTVWXYZ0 per recipe",
			"GSI2 METHOD#bake#3 per method", "table USER#user-123 per user", "GSI1 CHATROOM#global per room", "table LOCATION#… per location",
			"GSI3 TRENDING#2026-W01#2 per week", "table ROOM#r-01JABCDEFGH per room", "GSI1 INGREDIENT#SEARCH pinned"},
	} {
		c := chart{title: "t", xLabel: "x", yLabel: "y"}
		for i, l := range labels {
			c.bars, c.barColors, c.barLabels = append(c.bars, float64(10*(i+1))), append(c.barColors, colorPass), append(c.barLabels, l)
		}
		svg := string(c.svg())
		h, _ := strconv.ParseFloat(height.FindStringSubmatch(svg)[1], 64)
		type text struct {
			x, y, slant float64
			s           string
		}
		var got []text
		for _, m := range label.FindAllStringSubmatch(svg, -1) {
			if !slices.Contains(labels, html.UnescapeString(m[6])) {
				continue
			}
			x, _ := strconv.ParseFloat(m[1], 64)
			y, _ := strconv.ParseFloat(m[2], 64)
			slant, _ := strconv.ParseFloat(m[5], 64)
			got = append(got, text{x, y, slant, html.UnescapeString(m[6])})
		}
		if len(got) != len(labels) {
			t.Fatalf("%d of %d labels drawn:\n%s", len(got), len(labels), svg)
		}
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			if a.slant == 0 {
				if gap := b.x - a.x - (labelWidth(a.s)+labelWidth(b.s))/2; gap < 4 {
					t.Errorf("level labels %q and %q overlap (gap %.1f px)", a.s, b.s, gap)
				}
				continue
			}
			if d := (b.x - a.x) * math.Sin(a.slant*math.Pi/180); d < 14 {
				t.Errorf("slanted labels %q and %q are %.1f px apart, less than a line", a.s, b.s, d)
			}
		}
		for _, l := range got {
			rad := l.slant * math.Pi / 180
			if bottom := l.y + labelWidth(l.s)*math.Sin(rad); bottom > h {
				t.Errorf("label %q reaches y %.0f, below the chart's %.0f", l.s, bottom, h)
			}
			if left := l.x - labelWidth(l.s)*math.Cos(rad); l.slant > 0 && left < 0 {
				t.Errorf("label %q starts at x %.0f, left of the chart", l.s, left)
			}
		}
	}
}
