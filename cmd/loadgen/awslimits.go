package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dynastream/dynastream/ddblocal"
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
}

// ThrottledShare is the share of the key's requests of Op throttled.
func (k LimitKey) ThrottledShare() float64 {
	if k.Requests == 0 {
		return 0
	}
	return float64(k.Throttled) / float64(k.Requests)
}

const maxLimitKeys = 50

// awsLimitsOf reads a Limiter's counts into the report.
func awsLimitsOf(l *ddblocal.Limiter) *AWSLimitsReport {
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
			r.Keys = append(r.Keys, LimitKey{Table: k.Table, Index: k.Index, Key: k.Key, Op: k.Op, Requests: k.Requests,
				Throttled: k.Throttled, Unprocessed: k.Unprocessed, Conflicts: k.Conflicts})
		}
	}
	r.ThrottledKeys = len(throttled)
	return r
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
	if len(r.Keys) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  table\tindex\tkey\toperation\trequests\tthrottled\tunprocessed\tconflicts\t")
	for i, k := range r.Keys {
		if i == 20 {
			fmt.Fprintf(tw, "  … %d more in the JSON report\n", len(r.Keys)-i)
			break
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d (%.1f%%)\t%d\t%d\t\n", k.Table, k.Index, k.Key, k.Op, k.Requests, k.Throttled, 100*k.ThrottledShare(), k.Unprocessed, k.Conflicts)
	}
	tw.Flush()
}
