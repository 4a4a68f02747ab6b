package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/dynastream/dynastream/emf"
)

// EMFReport is what the programs' metric lines (CloudWatch Embedded Metric
// Format, the lines CloudWatch reads in AWS) in the stack's log say about
// the whole run: set-up, warm-up, every phase and its drain. It is the
// same work the phases' consumer counters measure, seen as CloudWatch
// would show it.
type EMFReport struct {
	// Lines is how many EMF lines were read; Invalid how many of them break
	// the specification (emf.Validate), which CloudWatch would drop.
	Lines     int                    `json:"lines"`
	Invalid   int                    `json:"invalid"`
	Consumers map[string]EMFConsumer `json:"consumers"`
	Writer    EMFWriter              `json:"writer"`
}

// EMFConsumer sums one consumer's per-invocation metrics.
type EMFConsumer struct {
	Calls         int64 `json:"calls"`
	Records       int64 `json:"records"`
	FailedRecords int64 `json:"failedRecords"`
	Errors        int64 `json:"errors"`
	DeadLettered  int64 `json:"deadLettered"`
	Duration      Dist  `json:"durationMs"`
	// BilledMs is the calls' durations as Lambda bills them: each rounded
	// up to the millisecond, summed.
	BilledMs float64 `json:"billedMs"`
	// IteratorAge is Lambda's: the newest record's age at each call.
	IteratorAge Dist `json:"iteratorAgeMs"`
}

// EMFWriter sums the writer's per-request metrics.
type EMFWriter struct {
	Requests int64            `json:"requests"`
	ByStatus map[string]int64 `json:"byStatus"`
	Latency  Dist             `json:"latencyMs"`
	// BilledMs is the requests' latencies rounded up to the millisecond
	// and summed: the writer's Lambda duration, near enough (the time
	// before and after the handler is not in it).
	BilledMs float64 `json:"billedMs"`
}

// readEMF reads the EMF lines of a log (other lines are skipped).
func readEMF(r io.Reader) (*EMFReport, error) {
	rep := &EMFReport{Consumers: map[string]EMFConsumer{}, Writer: EMFWriter{ByStatus: map[string]int64{}}}
	durations, ages := map[string][]time.Duration{}, map[string][]time.Duration{}
	var latencies []time.Duration
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !emf.IsEMF(line) {
			continue
		}
		rep.Lines++
		if emf.Validate(line) != nil {
			rep.Invalid++
			continue
		}
		var doc map[string]any
		if json.Unmarshal(line, &doc) != nil {
			continue
		}
		service, _ := doc["service"].(string)
		for name, v := range doc {
			vs := values(v)
			if vs == nil {
				continue
			}
			switch name {
			case "Records", "FailedRecords", "Errors", "DeadLettered", "DurationMs", "IteratorAge":
				c := rep.Consumers[service]
				for _, x := range vs {
					switch name {
					case "Records":
						c.Calls++
						c.Records += int64(x)
					case "FailedRecords":
						c.FailedRecords += int64(x)
					case "Errors":
						c.Errors += int64(x)
					case "DeadLettered":
						c.DeadLettered += int64(x)
					case "DurationMs":
						durations[service] = append(durations[service], msDuration(x))
						c.BilledMs += math.Ceil(x)
					case "IteratorAge":
						ages[service] = append(ages[service], msDuration(x))
					}
				}
				rep.Consumers[service] = c
			case "Requests":
				status, _ := doc["status"].(string)
				for _, x := range vs {
					rep.Writer.Requests += int64(x)
					rep.Writer.ByStatus[status] += int64(x)
				}
			case "LatencyMs":
				for _, x := range vs {
					latencies = append(latencies, msDuration(x))
					rep.Writer.BilledMs += math.Ceil(x)
				}
			}
		}
	}
	for service, c := range rep.Consumers {
		c.Duration, c.IteratorAge = dist(durations[service]), dist(ages[service])
		rep.Consumers[service] = c
	}
	rep.Writer.Latency = dist(latencies)
	return rep, sc.Err()
}

// readEMFFile is readEMF of a file.
func readEMFFile(path string) (*EMFReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readEMF(f)
}

// values is a metric's value (a number, or an array of them); nil for any
// other member.
func values(v any) []float64 {
	switch x := v.(type) {
	case float64:
		return []float64{x}
	case []any:
		out := make([]float64, 0, len(x))
		for _, e := range x {
			f, ok := e.(float64)
			if !ok {
				return nil
			}
			out = append(out, f)
		}
		return out
	}
	return nil
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// print writes the EMF summary.
func (e *EMFReport) print(w io.Writer) {
	fmt.Fprintf(w, "\nEMF metrics in the stack's log (the whole run, as CloudWatch would read them): %d lines, %d invalid\n", e.Lines, e.Invalid)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "consumer\tcalls\trecords\tfailed\terrors\tdead-lettered\tduration p50\tduration p99\titerator age p99\t")
	for _, name := range slices.Sorted(maps.Keys(e.Consumers)) {
		c := e.Consumers[name]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", name, c.Calls, c.Records, c.FailedRecords, c.Errors, c.DeadLettered,
			fms(c.Duration.P50Ms), fms(c.Duration.P99Ms), fms(c.IteratorAge.P99Ms))
	}
	tw.Flush()
	fmt.Fprintln(w, "(EMF's IteratorAge, Lambda's: the newest record's age when its batch reached the handler; locally the\n"+
		"Runner's, from the creation times it knows best, since DynamoDB Local rounds ApproximateCreationDateTime down to\n"+
		"the minute. The lag table above counts from each write's answer to its derived item.)")
	fmt.Fprintf(w, "writer: %d requests", e.Writer.Requests)
	for _, s := range slices.Sorted(maps.Keys(e.Writer.ByStatus)) {
		fmt.Fprintf(w, ", %s: %d", s, e.Writer.ByStatus[s])
	}
	fmt.Fprintf(w, "; latency p50 %s, p99 %s\n", fms(e.Writer.Latency.P50Ms), fms(e.Writer.Latency.P99Ms))
}
