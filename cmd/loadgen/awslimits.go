package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
)

// AWSLimitsReport is what the programs met behind the Limiter (-aws-limits):
// DynamoDB's per-partition limits at a scale, so that a load of 100 writes
// a second meets at 1/100 what 10,000 a second meets on AWS.
type AWSLimitsReport struct {
	Scale  float64 `json:"scale"`
	Limits string  `json:"limits"`
	// Requests is every request the programs made through it; Throttled
	// those answered with a throttling error, on ThrottledKeys partition
	// keys; Unprocessed the batch keys and items answered unprocessed (and
	// retried by the programs); Conflicts the transactions cancelled and
	// writes refused for a conflict (and retried); StreamLimited the
	// GetRecords calls refused.
	Requests      int64 `json:"requests"`
	Throttled     int64 `json:"throttled"`
	ThrottledKeys int   `json:"throttledKeys"`
	Unprocessed   int64 `json:"unprocessed"`
	Conflicts     int64 `json:"conflicts"`
	StreamLimited int64 `json:"streamLimited"`
	// Keys are the partition keys that met a limit, per operation, most
	// throttled first (at most maxLimitKeys).
	Keys []LimitKey `json:"keys,omitempty"`
	// Steady are the keys that met a limit in the measured phases (from
	// the warm-up's end to the last phase's drained), with those phases'
	// counts; Over those of them that take the growth (a key per month,
	// week, method or item type, or one the workload pins) and were
	// throttled for more than 1% of their requests. Measured says the
	// run reached its drain, so Steady and Over were measured (and empty
	// when nothing met a limit).
	Measured bool       `json:"measured"`
	Steady   []LimitKey `json:"steady,omitempty"`
	Over     []LimitKey `json:"over,omitempty"`
	// Cadence are the keys that met a limit in the measured phases under
	// requests whose rate the consumers' polls set, not the writes (the
	// projector's drains, their nudges and top-10 checks: app/drain,
	// projections.DrainApp), listed apart from Steady: their rate does not
	// shrink with the scale, so at 1/100 they meet 100 times their share
	// of a key's units. Each carries its rate, the same at full scale.
	Cadence []LimitKey `json:"cadence,omitempty"`
	// MeasuredSeconds is how long the measured phases ran, drains
	// included (the rates' denominator).
	MeasuredSeconds float64 `json:"measuredSeconds,omitempty"`
}

// LimitKey is what one operation met on one partition key.
type LimitKey struct {
	Table       string `json:"table"`
	Index       string `json:"index,omitempty"`
	Key         string `json:"key"`
	Op          string `json:"op"`
	Requests    int64  `json:"requests"`
	Throttled   int64  `json:"throttled,omitempty"`
	Unprocessed int64  `json:"unprocessed,omitempty"`
	Conflicts   int64  `json:"conflicts,omitempty"`
	// Pattern and Per are the key's shape (store.ShapeOf); TakesGrowth
	// says its rate grows with the write rate (one key for all, or pinned
	// by the workload) rather than spreading over more keys.
	Pattern     string `json:"pattern,omitempty"`
	Per         string `json:"per,omitempty"`
	TakesGrowth bool   `json:"takesGrowth,omitempty"`
	// App is the caller's application id (ddblocal.KeyCount.App);
	// Cadence says the requests' rate is set by the polls (app/drain),
	// and PerSecond is then their rate in the measured phases, which is
	// the rate they would have at full scale too.
	App       string  `json:"app,omitempty"`
	Cadence   bool    `json:"cadence,omitempty"`
	PerSecond float64 `json:"perSecond,omitempty"`
}

// opName is the operation, with the caller's app when it named one: the
// Limiter counts each caller apart.
func (k LimitKey) opName() string {
	if k.App == "" {
		return k.Op
	}
	return k.Op + " (app/" + k.App + ")"
}

// overShare is the share of a key's requests that may be throttled in
// the steady phases when its rate grows with the write rate.
const overShare = 0.01

// ThrottledShare is the share of the key's requests of Op throttled.
func (k LimitKey) ThrottledShare() float64 {
	if k.Requests == 0 {
		return 0
	}
	return float64(k.Throttled) / float64(k.Requests)
}

const maxLimitKeys = 50

// awsLimitsOf reads a Limiter's counts into the report: the whole run's,
// and the measured phases' (steady: the key counts at their start and
// end, secs apart) with each key's shape (pins: the keys the workload
// pins, and why).
func awsLimitsOf(l *ddblocal.Limiter, steady [2][]ddblocal.KeyCount, secs float64, pins map[string]string) *AWSLimitsReport {
	c := l.Counts()
	r := &AWSLimitsReport{Scale: l.Limits().Scale, Limits: l.Limits().String(), Requests: c.Requests, Throttled: c.Throttled,
		Unprocessed: c.Unprocessed, Conflicts: c.Conflicts, StreamLimited: c.StreamLimited}
	type where struct{ table, index, key string }
	throttled := map[where]bool{}
	for _, k := range c.Keys {
		if k.Throttled > 0 && k.Index != "stream" { // a shard's refused reads are StreamLimited
			throttled[where{k.Table, k.Index, k.Key}] = true
		}
		if len(r.Keys) < maxLimitKeys {
			r.Keys = append(r.Keys, limitKey(k, pins))
		}
	}
	r.ThrottledKeys = len(throttled)
	if steady[1] == nil {
		return r
	}
	r.Measured, r.MeasuredSeconds = true, secs
	type keyOp struct{ table, index, key, op, app string }
	before := map[keyOp]ddblocal.KeyCount{}
	for _, k := range steady[0] {
		before[keyOp{k.Table, k.Index, k.Key, k.Op, k.App}] = k
	}
	for _, k := range steady[1] {
		b := before[keyOp{k.Table, k.Index, k.Key, k.Op, k.App}]
		if !k.Since.Equal(b.Since) { // forgotten while idle: counted anew since
			b = ddblocal.KeyCount{}
		}
		k.Requests, k.Throttled, k.Unprocessed, k.Conflicts = k.Requests-b.Requests, k.Throttled-b.Throttled, k.Unprocessed-b.Unprocessed, k.Conflicts-b.Conflicts
		if k.Throttled == 0 && k.Unprocessed == 0 && k.Conflicts == 0 {
			continue
		}
		lk := limitKey(k, pins)
		if lk.Cadence {
			if secs > 0 {
				lk.PerSecond = float64(lk.Requests) / secs
			}
			r.Cadence = append(r.Cadence, lk)
			continue
		}
		r.Steady = append(r.Steady, lk)
		if lk.TakesGrowth && lk.ThrottledShare() > overShare {
			r.Over = append(r.Over, lk)
		}
	}
	busiest := func(a, b LimitKey) int {
		return cmp.Or(cmp.Compare(b.ThrottledShare(), a.ThrottledShare()), cmp.Compare(b.Throttled, a.Throttled), cmp.Compare(b.Unprocessed, a.Unprocessed),
			cmp.Compare(b.Conflicts, a.Conflicts), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Op, b.Op))
	}
	slices.SortFunc(r.Steady, busiest)
	slices.SortFunc(r.Over, busiest)
	slices.SortFunc(r.Cadence, busiest)
	if len(r.Steady) > maxLimitKeys {
		r.Steady = r.Steady[:maxLimitKeys]
	}
	if len(r.Cadence) > maxLimitKeys {
		r.Cadence = r.Cadence[:maxLimitKeys]
	}
	return r
}

// limitKey is a key's counts with its shape.
func limitKey(k ddblocal.KeyCount, pins map[string]string) LimitKey {
	lk := LimitKey{Table: k.Table, Index: k.Index, Key: k.Key, Op: k.Op, Requests: k.Requests,
		Throttled: k.Throttled, Unprocessed: k.Unprocessed, Conflicts: k.Conflicts, App: k.App, Cadence: k.App == projections.DrainApp}
	if k.Index == "stream" {
		lk.Pattern, lk.Per = "shard", "shard of the table's stream (readers, not writes)"
		return lk
	}
	shape := store.ShapeOf(k.Key)
	lk.Pattern, lk.Per, lk.TakesGrowth = shape.Pattern, shape.Per, !shape.Grows
	if why := pins[k.Key]; why != "" {
		lk.Per, lk.TakesGrowth = why, true
	}
	if lk.Cadence { // set by the polls: the same rate at any write rate
		lk.TakesGrowth = false
	}
	return lk
}

// steadyLine says whether a key that takes the growth was throttled for
// more than 1% of its requests in the measured phases.
func (r *AWSLimitsReport) steadyLine() string {
	if !r.Measured {
		return ""
	}
	if len(r.Over) == 0 {
		return fmt.Sprintf("aws limits, measured phases: %d keys met a limit; no key whose rate grows with the write rate was throttled for more than 1%% of its requests%s", len(r.Steady), r.cadenceNote())
	}
	var names []string
	for _, k := range r.Over {
		names = append(names, fmt.Sprintf("%s %s %s (%.1f%%, %s)", k.Index, k.Key, k.Op, 100*k.ThrottledShare(), k.Per))
	}
	return fmt.Sprintf("aws limits, measured phases: %d keys whose rate grows with the write rate were throttled for more than 1%% of their requests: %s%s", len(r.Over), strings.Join(names, "; "), r.cadenceNote())
}

// cadenceNote is the steady line's word on the keys set by the polls.
func (r *AWSLimitsReport) cadenceNote() string {
	if len(r.Cadence) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d met a limit under requests set by the polls, not the writes (listed apart)", len(r.Cadence))
}

// line is the run's one line of what the limits did.
func (r *AWSLimitsReport) line() string {
	return fmt.Sprintf("aws limits: %s: %d throttled requests on %d keys, %d unprocessed keys retried, %d transaction conflicts retried",
		r.Limits, r.Throttled, r.ThrottledKeys, r.Unprocessed, r.Conflicts)
}

func (r *AWSLimitsReport) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s", r.line())
	if r.StreamLimited > 0 {
		fmt.Fprintf(w, "; %d GetRecords calls refused", r.StreamLimited)
	}
	fmt.Fprintln(w)
	if l := r.steadyLine(); l != "" {
		fmt.Fprintln(w, l)
	}
	keys, what := r.Keys, "the whole run"
	if r.Measured {
		keys, what = r.Steady, "the measured phases"
	}
	defer r.printCadence(w)
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(w, "  the keys that met a limit in %s, most throttled first:\n", what)
	printKeys(w, "table\tindex\tkey\toperation\trequests\tthrottled\tunprocessed\tconflicts\tone per", keys, func(k LimitKey) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d (%.1f%%)\t%d\t%d\t%s", k.Table, k.Index, k.Key, k.opName(), k.Requests, k.Throttled, 100*k.ThrottledShare(), k.Unprocessed, k.Conflicts, k.Per)
	})
}

// printKeys prints a table of keys, a row each (the first 20; the JSON
// report has them all).
func printKeys(w io.Writer, head string, keys []LimitKey, row func(LimitKey) string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\t\n", head)
	for i, k := range keys {
		if i == 20 {
			fmt.Fprintf(tw, "  … %d more in the JSON report\n", len(keys)-i)
			break
		}
		fmt.Fprintf(tw, "  %s\t\n", row(k))
	}
	tw.Flush()
}

// printCadence lists the keys that met a limit under requests set by the
// polls, with their rate: the same at full scale, where a key takes
// 1/Scale times the units it takes here.
func (r *AWSLimitsReport) printCadence(w io.Writer) {
	if len(r.Cadence) == 0 {
		return
	}
	fmt.Fprintf(w, "  set by the polls, not the writes (app/%s: the projector's drains, their nudges and top-10 checks): their rate is the same at full scale,\n  where each key takes %.0f times the units it takes here:\n", projections.DrainApp, 1/r.Scale)
	printKeys(w, "table\tindex\tkey\toperation\trequests/s (here and at full scale)\tthrottled here\tone per", r.Cadence, func(k LimitKey) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%.1f\t%d (%.1f%%)\t%s", k.Table, k.Index, k.Key, k.Op, k.PerSecond, k.Throttled, 100*k.ThrottledShare(), k.Per)
	})
}
