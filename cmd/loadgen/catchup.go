package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/stack"
	"github.com/dynastream/dynastream/stream"
)

// CatchUpReport is one consumer's catch-up (-catchup): paused through its
// admin endpoint while writes went on at the phase's rate, then resumed
// and timed until it was done with as many records as the stream gained
// while it was paused (records handled, filtered out or skipped: see
// recordsDone).
type CatchUpReport struct {
	Consumer              string  `json:"consumer"`
	ParallelizationFactor int     `json:"parallelizationFactor"`
	TargetRate            float64 `json:"targetWritesPerSec"`
	PausedSecs            float64 `json:"pausedSecs"`
	// Backlog is the records the stream gained while the consumer was
	// paused; WrittenPerSec is that over PausedSecs.
	Backlog       int64   `json:"backlogRecords"`
	WrittenPerSec float64 `json:"writtenRecordsPerSec"`
	// DrainSecs is from the resume to the moment the consumer was done
	// with Backlog records; RecordsPerSec is the records it was done with
	// meanwhile, over DrainSecs, and PerShard that over the stream's open
	// shards.
	DrainSecs     float64 `json:"drainSecs"`
	RecordsPerSec float64 `json:"recordsPerSec"`
	Shards        int     `json:"shards"`
	PerShard      float64 `json:"recordsPerSecPerShard"`
	// DrainCPU is how busy the machine and DynamoDB Local were while the
	// consumer caught up (DrainSecs).
	DrainCPU CPUUse `json:"drainCpu"`
	// TimesWriteRate is RecordsPerSec over WrittenPerSec (equally: the
	// backlog's seconds over the seconds it took to read it).
	TimesWriteRate float64 `json:"timesWriteRate"`
	// Phase is the writes sent meanwhile and what they derived (lag here
	// includes the pause).
	Phase PhaseReport `json:"phase"`
	Error string      `json:"error,omitempty"`
}

// line is the catch-up in one line, for scripts:
//
//	catch-up: <consumer> drained a <N> s backlog at <R> records/s, <k>x the write rate (…)
func (c CatchUpReport) line() string {
	if c.Error != "" {
		return fmt.Sprintf("catch-up: %s (ParallelizationFactor %d) did not: %s", c.Consumer, c.ParallelizationFactor, c.Error)
	}
	return fmt.Sprintf("catch-up: %s drained a %.0f s backlog at %.0f records/s, %.1fx the write rate (ParallelizationFactor %d; %d records in %.1f s; %d shard(s): %.0f records/s each; DynamoDB Local %.2f cores, the machine %.0f%% busy; missing %d)",
		c.Consumer, c.PausedSecs, c.RecordsPerSec, c.TimesWriteRate, c.ParallelizationFactor, c.Backlog, c.DrainSecs, c.Shards, c.PerShard, c.DrainCPU.DynamoDBLocalCores, c.DrainCPU.MachineBusyPercent, sum(c.Phase.Missing))
}

// catchUpLimit is how long a resumed consumer gets to read its backlog
// before the catch-up is reported as failed: the pause again, ten times
// over, and at least 2 minutes.
func catchUpLimit(paused time.Duration) time.Duration { return max(10*paused, 2*time.Minute) }

// catchUps measures each consumer's catch-up at each parallelization
// factor: the consumers (c.catchupOf) are restarted with STREAM_PARALLELIZATION_FACTOR
// set, then each in turn is paused for c.catchup while writes go on at
// rate, and resumed with the writes still going on; or, with
// c.catchupBacklog, paused until the stream has gained that many records,
// and resumed with the writes stopped (a consumer started on a backlog).
func catchUps(ctx context.Context, c config, e *engine, st *stack.Stack, rate float64, statsOf func(int) *phaseStats, idx int) []CatchUpReport {
	var out []CatchUpReport
	for _, pf := range c.catchupPF {
		for _, name := range c.catchupOf {
			if err := st.Reconfigure(ctx, name, "STREAM_PARALLELIZATION_FACTOR="+strconv.Itoa(pf)); err != nil {
				return append(out, CatchUpReport{Consumer: name, ParallelizationFactor: pf, Error: err.Error()})
			}
		}
		settle(ctx, e, e.admin, c.drain)
		for _, name := range c.catchupOf {
			if ctx.Err() != nil {
				return out
			}
			r := e.catchUp(ctx, name, st, c.catchup, c.catchupBacklog, rate, idx, statsOf(idx))
			r.ParallelizationFactor = pf
			fmt.Fprintln(e.progress, r.line())
			out = append(out, r)
			idx++
			settle(ctx, e, e.admin, c.drain)
		}
	}
	return out
}

// catchUpPhases is the first catch-up's phase index (the engine's
// phaseStats), far above the measured phases'.
const catchUpPhases = 10000

// catchUp pauses one consumer under load and times its catch-up.
func (e *engine) catchUp(ctx context.Context, name string, st *stack.Stack, pause time.Duration, backlog int64, rate float64, idx int, ps *phaseStats) (r CatchUpReport) {
	r = CatchUpReport{Consumer: name, TargetRate: rate}
	base := e.admin[name]
	ps.stop = make(chan struct{})
	// What the writes derived is waited for as long as the catch-up may
	// take, and -drain after it.
	ps.drain.Store(int64(catchUpLimit(pause) + e.drain))
	stopWrites := sync.OnceFunc(func() { close(ps.stop) })
	phase := make(chan PhaseReport, 1)
	go func() { phase <- e.runPhase(ctx, idx, rate, 24*time.Hour, ps) }()
	defer func() {
		stopWrites()
		r.Phase = <-phase
	}()
	// A few seconds of writes first, so that the pause starts from a
	// consumer that keeps up.
	sleep(ctx, 3*time.Second)
	if err := adminPost(ctx, base+"/pause"); err != nil {
		r.Error = err.Error()
		return r
	}
	// However the catch-up ends, the consumer is not left paused.
	resumed := false
	defer func() {
		if !resumed {
			_ = adminPost(context.WithoutCancel(ctx), base+"/resume")
		}
	}()
	pausedAt, o0 := time.Now(), e.obs.records.Load()
	c0, err := recordsDone(ctx, base)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	lastGained, lastGrowth := int64(0), pausedAt
	for next := pausedAt.Add(5 * time.Second); ctx.Err() == nil; sleep(ctx, 100*time.Millisecond) {
		gained := e.obs.records.Load() - o0
		if (backlog > 0 && gained >= backlog) || (backlog <= 0 && time.Since(pausedAt) >= pause) {
			break
		}
		if gained > lastGained {
			lastGained, lastGrowth = gained, time.Now()
		} else if time.Since(lastGrowth) > time.Minute {
			r.Error = fmt.Sprintf("the stream gained no record for a minute (%d of %d while paused): are the writes failing?", gained, backlog)
			return r
		}
		if time.Now().After(next) {
			fmt.Fprintf(e.progress, "catch-up: %s paused %.0f s, %d records behind\n", name, time.Since(pausedAt).Seconds(), gained)
			next = time.Now().Add(5 * time.Second)
		}
	}
	resumedAt := time.Now()
	r.Backlog = e.obs.records.Load() - o0
	r.PausedSecs = resumedAt.Sub(pausedAt).Seconds()
	r.WrittenPerSec = float64(r.Backlog) / r.PausedSecs
	if shards, err := stream.Shards(ctx, st.Clients.Streams, st.StreamARN); err == nil {
		for _, s := range shards {
			if s.SequenceNumberRange == nil || s.SequenceNumberRange.EndingSequenceNumber == nil {
				r.Shards++
			}
		}
	}
	r.Shards = max(r.Shards, 1)
	if backlog > 0 {
		// A consumer started on a backlog: it drains it alone (ps.drain
		// is read once the writes stop).
		ps.drain.Store(int64(catchUpLimit(resumedAt.Sub(pausedAt)) + e.drain))
		stopWrites()
	}
	cpu0 := e.sampleCPU()
	if err := adminPost(ctx, base+"/resume"); err != nil {
		r.Error = err.Error()
		return r
	}
	resumed = true
	if r.Backlog == 0 {
		r.Error = "the stream gained no record while the consumer was paused: nothing to catch up"
		return r
	}
	deadline := resumedAt.Add(catchUpLimit(resumedAt.Sub(pausedAt)))
	for ctx.Err() == nil {
		n, err := recordsDone(ctx, base)
		if err == nil && n-c0 >= r.Backlog {
			r.DrainSecs = time.Since(resumedAt).Seconds()
			r.DrainCPU = e.sampleCPU().since(cpu0)
			r.RecordsPerSec = float64(n-c0) / r.DrainSecs
			r.PerShard = r.RecordsPerSec / float64(r.Shards)
			r.TimesWriteRate = r.RecordsPerSec / r.WrittenPerSec
			return r
		}
		if time.Now().After(deadline) {
			r.Error = fmt.Sprintf("done with %d of %d records after %s", n-c0, r.Backlog, catchUpLimit(resumedAt.Sub(pausedAt)))
			return r
		}
		sleep(ctx, 50*time.Millisecond)
	}
	r.Error = context.Cause(ctx).Error()
	return r
}

// adminPost sends an empty POST to a consumer's admin endpoint (pause,
// resume), wanting a 2xx.
func adminPost(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, b)
	}
	return nil
}

// recordsDone is a consumer's count of records it is done with (its
// /metrics): handled by a handler call, or kept from the handler by its
// filter or Skip. Records read count only once handled: a Runner reads a
// whole batch (up to 1,000 records) long before its handler is through
// with it.
func recordsDone(ctx context.Context, base string) (int64, error) {
	m, err := readMetrics(ctx, base)
	if err != nil {
		return 0, err
	}
	if m.Stream == nil {
		return 0, fmt.Errorf("GET %s/metrics: no stream counts", base)
	}
	return m.Stream.RecordsHandled + m.Stream.FilteredOut + m.Stream.Skipped, nil
}
