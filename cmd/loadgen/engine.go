package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
)

// engine drives phases of load and matches each write to what it derives.
type engine struct {
	w       *world
	obs     *observer
	events  bool              // the outbox is watched: domain events are expected
	admin   map[string]string // consumer → admin base URL
	workers int
	// skip are write kinds left out of the mix (-skip); criteriaShare,
	// above 0, the share of criteria versions (-mix).
	skip          map[string]bool
	criteriaShare float64
	drain         time.Duration
	seed          uint64
	log           *slog.Logger
	progress      io.Writer
	tty           bool
	// ddbCPU reads DynamoDB Local's CPU seconds (nil: not known, as for a
	// stack loadgen did not start).
	ddbCPU func() (float64, error)

	mu      sync.Mutex
	pending []*op
	recent  []sample // completed ops' worst lag, for the progress line
}

type sample struct {
	at  time.Time
	lag time.Duration
}

// phaseStats is what one phase measured.
type phaseStats struct {
	mu        sync.Mutex
	lags      map[string][]time.Duration
	writer    map[string][]time.Duration
	errors    map[string]int
	firstErrs []string
	ops       int
	hot       int // writes that changed the hot recipe's counts
	notSent   int
	lastDone  time.Time // the last write's 2xx
	lastSeen  time.Time // the last derived item seen
	// For the timeline: when the phase started, each write's answer and
	// latency, and each complete write's lags, at its answer.
	start time.Time
	dones []timed
	// stop, when set, ends the phase's writes when it is closed (before
	// its duration, which -catchup sets long).
	stop chan struct{}
	// drain, when above 0, is the phase's drain time instead of -drain
	// (nanoseconds: -catchup sets it while the phase runs).
	drain atomic.Int64
	lagAt []lagged
}

type timed struct {
	at time.Time
	d  time.Duration
}

type lagged struct {
	at  time.Time
	lag map[string]time.Duration
}

func newPhaseStats() *phaseStats {
	return &phaseStats{lags: map[string][]time.Duration{}, writer: map[string][]time.Duration{}, errors: map[string]int{}}
}

// check returns what an op still waits for, by kind ("write" while its
// own core record has not been seen), and when the last of what it waited
// for was seen. Lags are recorded in o.lag as they are found.
func (e *engine) check(o *op) (open []string, seen time.Time) {
	if !o.linked {
		l, ok := e.obs.claim(o.key, o.change)
		if !ok {
			return []string{"write"}, time.Time{}
		}
		o.link, o.linked = l, true
	}
	if o.lag == nil {
		o.lag = map[string]time.Duration{}
	}
	at := func(kind string, t time.Time, ok bool) {
		if !ok {
			if !slices.Contains(open, kind) {
				open = append(open, kind)
			}
			return
		}
		o.lag[kind] = max(o.lag[kind], max(t.Sub(o.done), 0))
		if t.After(seen) {
			seen = t
		}
	}
	look := func(kind, key string) {
		t, ok := e.obs.seen[key]
		at(kind, t, ok)
	}
	if o.combined != "" {
		look(kindCombined, o.combined)
	}
	if o.compat != "" {
		look(kindCompatibility, o.compat)
	}
	if o.activity {
		look(kindActivity, "act:"+o.link.eventID)
	}
	if o.counts {
		look(kindCounts, "cnt:"+o.link.eventID)
	}
	if o.cookCounts {
		look(kindCookingCounts, "ckc:"+o.link.eventID)
	}
	if o.notes > 0 {
		n := e.obs.notes[o.link.eventID]
		at(kindNotification, n.lastOr(), n != nil && len(n.users) >= o.notes)
	}
	for _, f := range o.mails {
		look(kindEmail, "mail:"+fmt.Sprintf(f, o.link.eventID))
	}
	if e.events && o.link.hasEvents {
		look(kindEvent, "evt:"+o.link.eventID)
	}
	return open, seen
}

func (n *noteCount) lastOr() time.Time {
	if n == nil {
		return time.Time{}
	}
	return n.last
}

// match checks the pending ops every few milliseconds until ctx ends.
func (e *engine) match(ctx context.Context, phases func(int) *phaseStats) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.sweep(phases)
	}
}

func (e *engine) sweep(phases func(int) *phaseStats) {
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.pending[:0]
	for _, o := range e.pending {
		open, seen := e.check(o)
		if len(open) > 0 {
			kept = append(kept, o)
			continue
		}
		ps := phases(o.phase)
		ps.mu.Lock()
		worst := time.Duration(0)
		for k, d := range o.lag {
			ps.lags[k] = append(ps.lags[k], d)
			worst = max(worst, d)
		}
		ps.lagAt = append(ps.lagAt, lagged{o.done, o.lag})
		if seen.After(ps.lastSeen) {
			ps.lastSeen = seen
		}
		ps.mu.Unlock()
		e.recent = append(e.recent, sample{seen, worst})
	}
	clear(e.pending[len(kept):])
	e.pending = kept
	if cut := time.Now().Add(-5 * time.Second); len(e.recent) > 0 && e.recent[0].at.Before(cut) {
		i := sort.Search(len(e.recent), func(i int) bool { return !e.recent[i].at.Before(cut) })
		e.recent = slices.Delete(e.recent, 0, i)
	}
}

// pendingOf counts the ops of a phase still waiting for something.
func (e *engine) pendingOf(phase int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, o := range e.pending {
		if o.phase == phase {
			n++
		}
	}
	return n
}

// missing lists what a phase's ops still lack, by kind ("write" for a
// write whose own stream record never came).
func (e *engine) missing(phase int) map[string]int {
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for _, o := range e.pending {
		if o.phase == phase {
			open, _ := e.check(o)
			for _, k := range open {
				out[k]++
			}
		}
	}
	return out
}

// consumerMetrics reads each consumer's /metrics.
func (e *engine) consumerMetrics(ctx context.Context) map[string]app.Metrics {
	out := map[string]app.Metrics{}
	for name, base := range e.admin {
		m, err := readMetrics(ctx, base)
		if err != nil {
			e.log.Warn("loadgen: read metrics", "consumer", name, "err", err)
			continue
		}
		out[name] = m
	}
	return out
}

// readMetrics is one program's GET /metrics.
func readMetrics(ctx context.Context, base string) (app.Metrics, error) {
	return getJSON[app.Metrics](ctx, base+"/metrics")
}

// getJSON is a GET of an admin endpoint's JSON: an answer other than 200,
// or a body that does not decode, is an error naming the URL.
func getJSON[T any](ctx context.Context, url string) (T, error) {
	var v T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return v, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return v, fmt.Errorf("GET %s: %w", url, err)
	}
	return v, nil
}

// job is one scheduled write.
type job struct {
	name string
	pick uint64
}

// runPhase sends writes at rate for d, then waits up to the drain time for
// everything they derive.
func (e *engine) runPhase(ctx context.Context, idx int, rate float64, d time.Duration, ps *phaseStats) PhaseReport {
	before := e.consumerMetrics(ctx)
	eff0 := e.effects()
	keys0 := e.keyCounts(ctx)
	cpu0 := e.sampleCPU()
	rng := rand.New(rand.NewPCG(e.seed, uint64(1000+idx)))
	others := 0
	for _, m := range mix {
		if m.name != "criteria" && !e.skip[m.name] {
			others += m.weight
		}
	}
	weight := func(name string, w int) int {
		switch {
		case e.skip[name]:
			return 0
		case name == "criteria" && e.criteriaShare > 0: // share s of all: s/(1-s) times the others
			return int(float64(others) * e.criteriaShare / (1 - e.criteriaShare))
		}
		return w
	}
	total := 0
	for _, m := range mix {
		total += weight(m.name, m.weight)
	}
	jobs := make(chan job, max(int(rate), 10)*2)
	var wg sync.WaitGroup
	for range e.workers {
		wg.Go(func() {
			for j := range jobs {
				o, err := e.w.run(ctx, j.name, j.pick)
				if o == nil {
					o = &op{route: j.name}
				}
				ps.mu.Lock()
				if err != nil {
					ps.errors[o.route]++
					if len(ps.firstErrs) < 5 {
						ps.firstErrs = append(ps.firstErrs, fmt.Sprintf("%s: %v", o.route, err))
					}
					ps.mu.Unlock()
					continue
				}
				ps.ops++
				if o.hot {
					ps.hot++
				}
				ps.writer[o.route] = append(ps.writer[o.route], o.done.Sub(o.sent))
				ps.dones = append(ps.dones, timed{o.done, o.done.Sub(o.sent)})
				if o.done.After(ps.lastDone) {
					ps.lastDone = o.done
				}
				ps.mu.Unlock()
				if o.untracked {
					continue
				}
				o.phase = idx
				e.mu.Lock()
				e.pending = append(e.pending, o)
				e.mu.Unlock()
			}
		})
	}
	start := time.Now()
	ps.mu.Lock()
	ps.start = start
	ps.mu.Unlock()
	interval := time.Duration(float64(time.Second) / rate)
	stopProgress := e.startProgress(ctx, idx, rate, d, start, ps)
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d || ctx.Err() != nil || closed(ps.stop) {
			break
		}
		if wait := time.Until(at); wait > 0 {
			sleep(ctx, wait)
		}
		n := rng.IntN(total)
		var name string
		for _, m := range mix {
			if n < weight(m.name, m.weight) {
				name = m.name
				break
			}
			n -= weight(m.name, m.weight)
		}
		select {
		case jobs <- job{name, rng.Uint64()}:
		default:
			ps.mu.Lock()
			ps.notSent++ // the writer is not keeping up: the queue is full
			ps.mu.Unlock()
		}
	}
	close(jobs)
	wg.Wait()
	sent := time.Since(start)
	cpu1 := e.sampleCPU()
	drainStart := time.Now()
	drain := e.drain
	if d := time.Duration(ps.drain.Load()); d > 0 {
		drain = d
	}
	for e.pendingOf(idx) > 0 && time.Since(drainStart) < drain && ctx.Err() == nil {
		sleep(ctx, 20*time.Millisecond)
	}
	e.sweep(func(int) *phaseStats { return ps })
	stopProgress()
	after := e.consumerMetrics(ctx)
	if closed(ps.stop) {
		d = min(d, sent) // ended early: the phase lasted what it sent
	}
	r := e.report(idx, rate, d, sent, ps, before, after)
	r.CPU = cpu1.since(cpu0)
	r.Effects = e.effects().since(eff0)
	r.keys, r.keysMissing = keysSince(e.keyCounts(ctx), keys0, slices.Collect(maps.Keys(e.admin)))
	r.sentSecs = sent.Seconds()
	return r
}

// closed reports whether c is closed (a nil c never is).
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// startProgress prints a progress line every two seconds until stopped.
func (e *engine) startProgress(ctx context.Context, idx int, rate float64, d time.Duration, start time.Time, ps *phaseStats) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				if e.tty {
					fmt.Fprintln(e.progress)
				}
				return
			case <-t.C:
			}
			ps.mu.Lock()
			ops, errs := ps.ops, 0
			for _, n := range ps.errors {
				errs += n
			}
			ps.mu.Unlock()
			e.mu.Lock()
			var lags []time.Duration
			cut := time.Now().Add(-2 * time.Second)
			for _, s := range e.recent {
				if s.at.After(cut) {
					lags = append(lags, s.lag)
				}
			}
			pending := len(e.pending)
			e.mu.Unlock()
			el := time.Since(start)
			stage := fmt.Sprintf("%s/%s", el.Truncate(time.Second), d)
			if el > d {
				stage = "draining " + (el - d).Truncate(time.Second).String()
			}
			name := fmt.Sprintf("phase %d", idx+1)
			switch {
			case idx < 0:
				name = "warm-up"
			case idx >= catchUpPhases:
				// until the catch-up ends it: no duration to give
				name, stage = fmt.Sprintf("catch-up %d", idx-catchUpPhases+1), el.Truncate(time.Second).String()
			}
			line := fmt.Sprintf("%s: %.0f writes/s  %s  writes %d (%.1f/s)  errors %d  waiting %d  lag p99 (2 s) %s",
				name, rate, stage, ops, float64(ops)/min(el, d).Seconds(), errs, pending, ms(percentile(lags, 0.99)))
			if e.tty {
				fmt.Fprintf(e.progress, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(e.progress, line)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// cpuSample is the machine's and DynamoDB Local's CPU time at one moment.
type cpuSample struct {
	at               time.Time
	busy, total, ddb float64 // jiffies busy and in all; DynamoDB Local's seconds (-1: unknown)
}

func (e *engine) sampleCPU() cpuSample {
	s := cpuSample{at: time.Now(), ddb: -1}
	s.busy, s.total = machineJiffies()
	if e.ddbCPU != nil {
		if v, err := e.ddbCPU(); err == nil {
			s.ddb = v
		}
	}
	return s
}

// machineJiffies reads the machine's busy and total CPU time (/proc/stat).
func machineJiffies() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// CPUUse is how busy the machine was while a phase sent its writes.
type CPUUse struct {
	// MachineBusyPercent is the share of all CPUs in use.
	MachineBusyPercent float64 `json:"machineBusyPercent"`
	// DynamoDBLocalCores is how many cores DynamoDB Local used on average
	// (0 when not known).
	DynamoDBLocalCores float64 `json:"dynamodbLocalCores"`
}

func (b cpuSample) since(a cpuSample) CPUUse {
	var u CPUUse
	if b.total > a.total {
		u.MachineBusyPercent = math.Round(1000*(b.busy-a.busy)/(b.total-a.total)) / 10
	}
	if a.ddb >= 0 && b.ddb >= 0 {
		if el := b.at.Sub(a.at).Seconds(); el > 0 {
			u.DynamoDBLocalCores = math.Round(100*(b.ddb-a.ddb)/el) / 100
		}
	}
	return u
}
