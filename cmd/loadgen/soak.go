package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// SoakReport is -soak's memory record: each program's memory sampled
// through one long phase at a steady rate, after the warm-up.
type SoakReport struct {
	Every    string        `json:"every"`
	Programs []SoakProgram `json:"programs"`
	// Unread are the programs with readings that told no memory (their
	// /metrics did not answer, or had no resident set), so that none is
	// left out silently.
	Unread []UnreadProgram `json:"unread,omitempty"`
}

// UnreadProgram is a program of which Missed of Readings told no memory.
type UnreadProgram struct {
	Program  string `json:"program"`
	Missed   int    `json:"missed"`
	Readings int    `json:"readings"`
}

// SoakProgram is one program's memory over the soak: its resident set
// (what the table and a machine see) and the Go heap's live bytes
// (what a leak grows), sampled at T seconds from the phase's start.
type SoakProgram struct {
	Program string         `json:"program"`
	Samples []MemorySample `json:"samples"`
	// StartMB and EndMB are the resident set's first and last samples;
	// GrowthMBPerHour the least-squares slope of the last two thirds of
	// them (after the program's own warm-up), and HeapGrowthMBPerHour
	// that of the live heap (none for DynamoDB Local,
	// a JVM, whose resident set holds the table).
	StartMB             float64 `json:"startMB"`
	EndMB               float64 `json:"endMB"`
	Minutes             float64 `json:"minutes"`
	GrowthMBPerHour     float64 `json:"growthMBPerHour"`
	HeapGrowthMBPerHour float64 `json:"heapGrowthMBPerHour,omitempty"`
	// AnonGrowthMBPerHour is the slope of the resident set's anonymous
	// part (what the program allocated), FileGrowthMBPerHour that of its
	// file-backed part (its binary's and shared libraries' pages, bounded
	// by their size), GoGrowthMBPerHour that of all the Go runtime holds;
	// Split says the program told the parts (Linux).
	Split               bool    `json:"split,omitempty"`
	AnonGrowthMBPerHour float64 `json:"anonGrowthMBPerHour,omitempty"`
	FileGrowthMBPerHour float64 `json:"fileGrowthMBPerHour,omitempty"`
	GoGrowthMBPerHour   float64 `json:"goGrowthMBPerHour,omitempty"`
}

// MemorySample is one reading.
type MemorySample struct {
	T      float64 `json:"t"`
	RSSMB  float64 `json:"rssMB"`
	HeapMB float64 `json:"heapMB,omitempty"`
	AnonMB float64 `json:"anonMB,omitempty"`
	FileMB float64 `json:"fileMB,omitempty"`
	GoMB   float64 `json:"goMB,omitempty"`
}

// soakSampler reads every program's memory (their /metrics, and DynamoDB
// Local's resident set) every period until stopped.
type soakSampler struct {
	mu       sync.Mutex
	samples  map[string][]MemorySample
	readings int
	missed   map[string]int // readings with no memory, by program
}

const mb = 1 << 20

// ddbLocal is DynamoDB Local's name among a soak's programs.
const ddbLocal = "DynamoDB Local"

// soakEvery is how often a soak samples: 60 times over it, every 5 to 30 s.
func soakEvery(d time.Duration) time.Duration { return min(max(d/60, 5*time.Second), 30*time.Second) }

// run samples until ctx ends, from start.
func (s *soakSampler) run(ctx context.Context, e *engine, ddbRSS func() (uint64, error), start time.Time, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		at := time.Since(start).Seconds()
		ms := e.consumerMetrics(ctx) // every program with an admin endpoint
		s.mu.Lock()
		if s.samples == nil {
			s.samples, s.missed = map[string][]MemorySample{}, map[string]int{}
		}
		s.readings++
		for name := range e.admin {
			if m, ok := ms[name]; !ok || m.Memory.RSSBytes == 0 {
				s.missed[name]++
			}
		}
		for name, m := range ms {
			if m.Memory.RSSBytes > 0 {
				s.samples[name] = append(s.samples[name], MemorySample{T: at, RSSMB: float64(m.Memory.RSSBytes) / mb,
					HeapMB: float64(m.Memory.HeapLiveBytes) / mb, AnonMB: float64(m.Memory.RSSAnonBytes) / mb,
					FileMB: float64(m.Memory.RSSFileBytes) / mb, GoMB: float64(m.Memory.GoBytes) / mb})
			}
		}
		if ddbRSS != nil {
			if b, err := ddbRSS(); err == nil {
				s.samples[ddbLocal] = append(s.samples[ddbLocal], MemorySample{T: at, RSSMB: float64(b) / mb})
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// report is what the samples say, programs in name order (DynamoDB Local
// last).
func (s *soakSampler) report(every time.Duration) *SoakReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &SoakReport{Every: every.String()}
	for name, ss := range s.samples {
		if len(ss) == 0 {
			continue
		}
		p := SoakProgram{Program: name, Samples: ss, StartMB: ss[0].RSSMB, EndMB: ss[len(ss)-1].RSSMB,
			Minutes: (ss[len(ss)-1].T - ss[0].T) / 60}
		// the growth after the programs' own warm-up (the runtime sizing
		// its heap, code pages touched for the first time): the slope of
		// the last two thirds of the samples
		settled := ss[len(ss)/3:]
		p.GrowthMBPerHour = 3600 * slope(settled, func(m MemorySample) float64 { return m.RSSMB })
		// a program tells its resident set's parts in every sample or none
		p.Split = name != ddbLocal && !slices.ContainsFunc(ss, func(m MemorySample) bool { return m.AnonMB == 0 })
		if name != ddbLocal {
			p.HeapGrowthMBPerHour = 3600 * slope(settled, func(m MemorySample) float64 { return m.HeapMB })
			p.GoGrowthMBPerHour = 3600 * slope(settled, func(m MemorySample) float64 { return m.GoMB })
		}
		if p.Split {
			p.AnonGrowthMBPerHour = 3600 * slope(settled, func(m MemorySample) float64 { return m.AnonMB })
			p.FileGrowthMBPerHour = 3600 * slope(settled, func(m MemorySample) float64 { return m.FileMB })
		}
		out.Programs = append(out.Programs, p)
	}
	last := func(p SoakProgram) int { // DynamoDB Local after the programs
		if p.Program == ddbLocal {
			return 1
		}
		return 0
	}
	slices.SortFunc(out.Programs, func(a, b SoakProgram) int {
		return cmp.Or(last(a)-last(b), strings.Compare(a.Program, b.Program))
	})
	for name, n := range s.missed {
		if n > 0 {
			out.Unread = append(out.Unread, UnreadProgram{Program: name, Missed: n, Readings: s.readings})
		}
	}
	slices.SortFunc(out.Unread, func(a, b UnreadProgram) int { return strings.Compare(a.Program, b.Program) })
	return out
}

// slope is the least-squares slope of v over the samples' T (per second).
func slope(ss []MemorySample, v func(MemorySample) float64) float64 {
	if len(ss) < 2 {
		return 0
	}
	var st, sv float64
	for _, s := range ss {
		st, sv = st+s.T, sv+v(s)
	}
	n := float64(len(ss))
	mt, mv := st/n, sv/n
	var num, den float64
	for _, s := range ss {
		num += (s.T - mt) * (v(s) - mv)
		den += (s.T - mt) * (s.T - mt)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// line is one program's soak, for scripts:
//
//	soak: <program> <start> MB → <end> MB over <minutes> min (<growth> MB/h)
func (p SoakProgram) line() string {
	l := fmt.Sprintf("soak: %s %.1f MB → %.1f MB over %.0f min (%+.1f MB/h)", p.Program, p.StartMB, p.EndMB, p.Minutes, p.GrowthMBPerHour)
	if p.Program == ddbLocal {
		return l + " (the JVM holding the table: apart)"
	}
	if !p.Split {
		return l + fmt.Sprintf(" (Go runtime %+.1f MB/h, live heap %+.1f)", p.GoGrowthMBPerHour, p.HeapGrowthMBPerHour)
	}
	return l + fmt.Sprintf(" (anonymous %+.1f MB/h, file-backed %+.1f, Go runtime %+.1f, live heap %+.1f)",
		p.AnonGrowthMBPerHour, p.FileGrowthMBPerHour, p.GoGrowthMBPerHour, p.HeapGrowthMBPerHour)
}

func (s *SoakReport) print(w io.Writer) {
	fmt.Fprintf(w, "\nmemory through the soak (resident set, sampled every %s; least-squares growth):\n", s.Every)
	for _, p := range s.Programs {
		fmt.Fprintln(w, p.line())
	}
	for _, u := range s.Unread {
		fmt.Fprintf(w, "no memory from %s in %d of %d readings: its /metrics did not answer or told no resident set (Linux's /proc)\n",
			u.Program, u.Missed, u.Readings)
	}
}
