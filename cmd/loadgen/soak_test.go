package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
)

// A soak's growth is the least-squares slope of its samples, per hour: a
// program whose memory rises 0.3 MB a minute grows 18 MB/h, one that
// swings around a flat line about 0; the line has the shape scripts read.
func TestSoakGrowth(t *testing.T) {
	s := &soakSampler{samples: map[string][]MemorySample{}}
	for i := range 61 {
		m := float64(i) // minutes
		s.samples["projector"] = append(s.samples["projector"], MemorySample{T: 60 * m, RSSMB: 25 + 0.3*m, HeapMB: 5 + 0.3*m,
			AnonMB: 10 + 0.2*m, FileMB: 15 + 0.1*m, GoMB: 12 + 0.3*m})
		s.samples["writer"] = append(s.samples["writer"], MemorySample{T: 60 * m, RSSMB: 31 + 2*float64(i%2), HeapMB: 4})
		s.samples["DynamoDB Local"] = append(s.samples["DynamoDB Local"], MemorySample{T: 60 * m, RSSMB: 400 + m})
	}
	r := s.report(soakEvery(0))
	got := map[string]SoakProgram{}
	for _, p := range r.Programs {
		got[p.Program] = p
	}
	if p := got["projector"]; math.Abs(p.GrowthMBPerHour-18) > 1e-9 || math.Abs(p.HeapGrowthMBPerHour-18) > 1e-9 || p.StartMB != 25 || p.EndMB != 43 || p.Minutes != 60 ||
		math.Abs(p.AnonGrowthMBPerHour-12) > 1e-9 || math.Abs(p.FileGrowthMBPerHour-6) > 1e-9 || math.Abs(p.GoGrowthMBPerHour-18) > 1e-9 {
		t.Errorf("projector %+v", p)
	}
	if p := got["writer"]; math.Abs(p.GrowthMBPerHour) > 0.1 || p.HeapGrowthMBPerHour != 0 || p.Split {
		t.Errorf("writer %+v", p)
	}
	// a program that does not tell its resident set's parts: none claimed
	if l := got["writer"].line(); !strings.HasSuffix(l, "(Go runtime +0.0 MB/h, live heap +0.0)") {
		t.Errorf("writer's line %q", l)
	}
	if r.Programs[len(r.Programs)-1].Program != "DynamoDB Local" {
		t.Errorf("DynamoDB Local is not last: %+v", r.Programs)
	}
	line := regexp.MustCompile(`^soak: projector 25\.0 MB → 43\.0 MB over 60 min \(\+18\.0 MB/h\) \(anonymous \+12\.0 MB/h, file-backed \+6\.0, Go runtime \+18\.0, live heap \+18\.0\)$`)
	if l := got["projector"].line(); !line.MatchString(l) {
		t.Errorf("line %q", l)
	}
}

// The report draws a soak twice: every program's resident set, DynamoDB
// Local's with them; then what each of the programs allocated (the
// anonymous part, the live heap beside it), without DynamoDB Local's.
func TestSoakCharts(t *testing.T) {
	s := &soakSampler{samples: map[string][]MemorySample{}}
	for i := range 10 {
		s.samples["projector"] = append(s.samples["projector"], MemorySample{T: float64(60 * i), RSSMB: 30, HeapMB: 3, AnonMB: 12, FileMB: 18, GoMB: 20})
		s.samples[ddbLocal] = append(s.samples[ddbLocal], MemorySample{T: float64(60 * i), RSSMB: 400})
	}
	rep := &Report{Soak: s.report(soakEvery(10 * time.Minute))}
	var rss, anon *chart
	for _, c := range rep.charts() {
		switch {
		case strings.Contains(c.title, "resident set") && !strings.Contains(c.title, "anonymous"):
			rss = &c
		case strings.Contains(c.title, "anonymous"):
			anon = &c
		}
	}
	if rss == nil || len(rss.series) != 2 {
		t.Fatalf("resident-set chart %+v", rss)
	}
	if anon == nil || len(anon.series) != 2 || anon.series[0].name != "projector" || anon.series[0].points[0].y != 12 ||
		anon.series[1].points[0].y != 3 || !anon.series[1].dashed {
		t.Fatalf("anonymous chart %+v", anon)
	}
}

// A soak leaves no program out silently: one whose /metrics does not
// answer, or tells no resident set, is named with how many readings
// missed, and still has no line of its own.
func TestSoakSaysWhatItCouldNotRead(t *testing.T) {
	serve := func(m app.Memory) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(app.Metrics{Memory: m})
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	e := &engine{log: slog.New(slog.DiscardHandler), admin: map[string]string{
		"projector": serve(app.Memory{RSSBytes: 30 << 20, HeapLiveBytes: 3 << 20}).URL,
		"notifier":  serve(app.Memory{HeapLiveBytes: 3 << 20}).URL, // no /proc
		"writer":    gone.URL,
	}}
	var s soakSampler
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s.run(ctx, e, nil, time.Now(), time.Hour) // one reading, then waits out ctx
	r := s.report(time.Second)
	if len(r.Programs) != 1 || r.Programs[0].Program != "projector" || r.Programs[0].StartMB != 30 {
		t.Errorf("programs %+v", r.Programs)
	}
	want := []UnreadProgram{{Program: "notifier", Missed: 1, Readings: 1}, {Program: "writer", Missed: 1, Readings: 1}}
	if !slices.Equal(r.Unread, want) {
		t.Errorf("unread %+v, want %+v", r.Unread, want)
	}
	var out strings.Builder
	r.print(&out)
	if !strings.Contains(out.String(), "no memory from writer in 1 of 1 readings") {
		t.Errorf("printed %q", out.String())
	}
}
