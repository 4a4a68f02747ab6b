package main

import (
	"math"
	"time"
)

// Window is one second of a phase: the writes answered in it, their
// latency, and the lag p99 of what they derived, per derivation (a write
// counts in the second its answer came).
type Window struct {
	// T is the window's start, in seconds since the phase started.
	T           float64            `json:"t"`
	Writes      int                `json:"writes"`
	WriterP50Ms float64            `json:"writerP50Ms,omitempty"`
	WriterP99Ms float64            `json:"writerP99Ms,omitempty"`
	LagP99Ms    map[string]float64 `json:"lagP99Ms,omitempty"`
}

// timeline cuts a phase of duration d that started at start into one-second
// windows; the answers that came after d (the writes still in flight when
// sending stopped) count in the last.
func timeline(start time.Time, d time.Duration, dones []timed, lags []lagged) []Window {
	if start.IsZero() || d <= 0 {
		return nil
	}
	n := int(math.Ceil(d.Seconds()))
	lat := make([][]time.Duration, n)
	lag := make([]map[string][]time.Duration, n)
	at := func(t time.Time) int { return min(max(int(t.Sub(start)/time.Second), 0), n-1) }
	for _, x := range dones {
		i := at(x.at)
		lat[i] = append(lat[i], x.d)
	}
	for _, x := range lags {
		i := at(x.at)
		if lag[i] == nil {
			lag[i] = map[string][]time.Duration{}
		}
		for k, v := range x.lag {
			lag[i][k] = append(lag[i][k], v)
		}
	}
	out := make([]Window, n)
	for i := range out {
		w := Window{T: float64(i), Writes: len(lat[i])}
		if len(lat[i]) > 0 {
			w.WriterP50Ms, w.WriterP99Ms = msf(percentile(lat[i], 0.5)), msf(percentile(lat[i], 0.99))
		}
		if len(lag[i]) > 0 {
			w.LagP99Ms = map[string]float64{}
			for k, ds := range lag[i] {
				w.LagP99Ms[k] = msf(percentile(ds, 0.99))
			}
		}
		out[i] = w
	}
	return out
}
