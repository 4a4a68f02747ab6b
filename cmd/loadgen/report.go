package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/stream"
)

// Report is the whole run, as written to the JSON file.
type Report struct {
	StartedAt time.Time `json:"startedAt"`
	Machine   struct {
		CPUs int    `json:"cpus"`
		OS   string `json:"os"`
		Go   string `json:"go"`
	} `json:"machine"`
	Config map[string]any `json:"config"`
	// DynamoDBLocalWritesPerSec is DynamoDB Local's raw PutItem rate from
	// 16 concurrent clients, measured before the run.
	DynamoDBLocalWritesPerSec float64       `json:"dynamodbLocalWritesPerSec"`
	Phases                    []PhaseReport `json:"phases"`
	// Knee is the highest rate whose lag p99 stayed within 1 s with nothing
	// missing and the writer keeping up (0: none did); KneeNote says why
	// the next one failed.
	Knee     float64 `json:"kneeWritesPerSec"`
	KneeNote string  `json:"kneeNote,omitempty"`
	// KneeFractionOfRaw is Knee as a fraction of the raw PutItem rate of
	// the same run (DynamoDBLocalWritesPerSec), so that runs on machines
	// of different speeds compare (0: either is unknown).
	KneeFractionOfRaw float64 `json:"kneeFractionOfRaw,omitempty"`
	// LimitedBy names what limited the first phase that did not keep up
	// (PhaseReport.limit): "the writer", "DynamoDB Local", "the machine",
	// or the consumer that fell behind first ("the projector", "the
	// notifier"); "" when every phase kept up.
	LimitedBy string `json:"limitedBy,omitempty"`
	// WriterMax is the highest achieved write rate of a phase in which the
	// writer kept up (at least 95% of its target).
	WriterMax float64 `json:"writerMaxWritesPerSec"`
	// CatchUps are the consumers' catch-ups (-catchup), in the order run.
	CatchUps []CatchUpReport `json:"catchUps,omitempty"`
	// Chat is the chat workload's result (-chat).
	Chat *ChatReport `json:"chat,omitempty"`
	// EMF is what the programs' metric lines said over the whole run
	// (local stack only).
	EMF *EMFReport `json:"emf,omitempty"`
	// Verify is `projector verify` on the table after the run (local
	// stack only).
	Verify *VerifyReport `json:"verify,omitempty"`
	// Scale is every partition key's load projected to -target (scale.go).
	Scale *Scale `json:"scale,omitempty"`
	// Cost is the bill per million user writes on AWS (bill.go).
	Cost *Bill `json:"cost,omitempty"`
	// Soak is each program's memory through -soak's phase (soak.go).
	Soak *SoakReport `json:"soak,omitempty"`
	// AWSLimits is what the programs met behind DynamoDB's limits
	// (-aws-limits: awslimits.go).
	AWSLimits *AWSLimitsReport `json:"awsLimits,omitempty"`
	// Kinesis is what the Kinesis destination carried and injected
	// (-source kinesis).
	Kinesis *KinesisReport `json:"kinesis,omitempty"`
}

// KinesisReport is what -source kinesis's destination did: the changes it
// carried into the Kinesis stream, and of them those it put twice and
// those it put after a later change of their item (Repeat and Reorder are
// the chances it drew them with).
type KinesisReport struct {
	Changes   int     `json:"changes"`
	Repeated  int     `json:"repeated"`
	Reordered int     `json:"reordered"`
	Repeat    float64 `json:"repeat"`
	Reorder   float64 `json:"reorder"`
}

func (k KinesisReport) line() string {
	return fmt.Sprintf("kinesis: %d duplicate and %d reordered records injected over %d records", k.Repeated, k.Reordered, k.Changes)
}

// Dist is a distribution of durations.
type Dist struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

func dist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	return Dist{N: len(ds), P50Ms: msf(percentile(ds, 0.5)), P99Ms: msf(percentile(ds, 0.99)), MaxMs: msf(slices.Max(ds))}
}

// ConsumerReport is one consumer's work during a phase (its drain included).
type ConsumerReport struct {
	Records int64 `json:"records"`
	// FilteredOut are records the mapping's filter kept from the handler
	// (the projector's own writes; the types the notifier ignores), and
	// Skipped those the loop guard behind it kept.
	FilteredOut int64 `json:"filteredOut"`
	Skipped     int64 `json:"skipped"`
	// DataRequests are DynamoDB calls on the table; CheckpointRequests
	// those on the checkpoint table; StreamRequests DynamoDB Streams calls.
	DataRequests       int64            `json:"dataRequests"`
	CheckpointRequests int64            `json:"checkpointRequests"`
	StreamRequests     int64            `json:"streamRequests"`
	DataByOperation    map[string]int64 `json:"dataRequestsByOperation"`
	DataPerRecord      float64          `json:"dataRequestsPerRecord"`
	// ReadUnitsPerRecord and WriteUnitsPerRecord are the capacity units
	// of its data requests (as DynamoDB Local counts them).
	ReadUnitsPerRecord  float64 `json:"readUnitsPerRecord"`
	WriteUnitsPerRecord float64 `json:"writeUnitsPerRecord"`
	CheckpointPerRec    float64 `json:"checkpointRequestsPerRecord"`
	CPUSecondsPer1000   float64 `json:"cpuSecondsPer1000Records"`
	HandlerCalls        int64   `json:"handlerCalls"`
	FailedCalls         int64   `json:"failedCalls"`
	DeadLettered        int64   `json:"deadLettered"`
	// Status is the consumer's health at the phase's end (stream.Health:
	// idle, ok, paused or stuck) and Reason why, when stuck.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// PhaseReport is one phase's measurements.
type PhaseReport struct {
	// Faults are the DynamoDB faults injected per program (DYNAMODB_FAULTS).
	Faults       map[string]ddb.FaultCounts `json:"faults,omitempty"`
	TargetRate   float64                    `json:"targetWritesPerSec"`
	Duration     string                     `json:"duration"`
	AchievedRate float64                    `json:"achievedWritesPerSec"`
	Writes       int                        `json:"writes"`
	NotSent      int                        `json:"notSent"`
	Errors       int                        `json:"errors"`
	FirstErrors  []string
	Writer       map[string]Dist `json:"writerLatencyByRoute"`
	WriterAll    Dist            `json:"writerLatency"`
	Lag          map[string]Dist `json:"lagByDerivation"`
	// LagP99Ms is the largest p99 over the derivations.
	LagP99Ms float64 `json:"lagP99Ms"`
	// DrainMs is how long after the last write's 2xx the last derived item
	// appeared.
	DrainMs   float64                   `json:"drainMs"`
	Missing   map[string]int            `json:"missing"`
	Consumers map[string]ConsumerReport `json:"consumers"`
	// CPU is how busy the machine and DynamoDB Local were while writes
	// were sent.
	CPU CPUUse `json:"cpu"`
	// Effects are the side effects and derived writes the phase's writes
	// made, counted for the bill (cost.go).
	Effects Effects `json:"effects"`
	// The writer's DynamoDB requests per write and CPU seconds per 1,000
	// writes (from its /metrics), for the budget the stack shares.
	WriterRequestsPerWrite float64          `json:"writerRequestsPerWrite,omitempty"`
	WriterByOperation      map[string]int64 `json:"writerRequestsByOperation,omitempty"`
	WriterCPUPer1000       float64          `json:"writerCpuSecondsPer1000Writes,omitempty"`
	// The writer's capacity units per write (as DynamoDB Local counts them).
	WriterReadUnitsPerWrite  float64 `json:"writerReadUnitsPerWrite,omitempty"`
	WriterWriteUnitsPerWrite float64 `json:"writerWriteUnitsPerWrite,omitempty"`
	// WriterByRoute is the writer's DynamoDB use per write of each route.
	WriterByRoute map[string]RouteCost `json:"writerByRoute,omitempty"`
	// Timeline is the phase second by second (timeline.go).
	Timeline []Window `json:"timeline,omitempty"`

	// keys is the capacity the programs used by partition key over the
	// phase and its drain; sentSecs how long its writes were sent.
	keys        ddb.Keys
	keysMissing []string // programs whose keys either snapshot lacks
	sentSecs    float64
	hotChanges  int // writes that changed the hot recipe's counts
}

func (e *engine) report(idx int, rate float64, d, sent time.Duration, ps *phaseStats, before, after map[string]app.Metrics) PhaseReport {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r := PhaseReport{
		TargetRate: rate, Duration: d.String(), Writes: ps.ops, NotSent: ps.notSent, FirstErrors: ps.firstErrs, hotChanges: ps.hot,
		AchievedRate: float64(ps.ops) / sent.Seconds(), Writer: map[string]Dist{}, Lag: map[string]Dist{},
		Missing: e.missing(idx), Consumers: map[string]ConsumerReport{},
	}
	var all []time.Duration
	for route, ds := range ps.writer {
		r.Writer[route] = dist(ds)
		all = append(all, ds...)
	}
	r.WriterAll = dist(all)
	r.Timeline = timeline(ps.start, d, ps.dones, ps.lagAt)
	for _, n := range ps.errors {
		r.Errors += n
	}
	for k, ds := range ps.lags {
		r.Lag[k] = dist(ds)
		r.LagP99Ms = max(r.LagP99Ms, r.Lag[k].P99Ms)
	}
	if !ps.lastSeen.IsZero() && !ps.lastDone.IsZero() {
		r.DrainMs = msf(max(ps.lastSeen.Sub(ps.lastDone), 0))
	}
	for name, a := range after {
		b := before[name]
		if a.Faults != nil {
			fc := ddb.FaultCounts{Requests: a.Faults.Requests, Injected: map[string]int64{}}
			if b.Faults != nil {
				fc.Requests -= b.Faults.Requests
			}
			for k, n := range a.Faults.Injected {
				if b.Faults != nil {
					n -= b.Faults.Injected[k]
				}
				fc.Injected[k] = n
			}
			if r.Faults == nil {
				r.Faults = map[string]ddb.FaultCounts{}
			}
			r.Faults[name] = fc
		}
		if a.Stream == nil || b.Stream == nil {
			if name == "writer" && ps.ops > 0 {
				r.WriterRequestsPerWrite = float64(a.DataRequests.Calls-b.DataRequests.Calls) / float64(ps.ops)
				r.WriterCPUPer1000 = (a.CPUSeconds - b.CPUSeconds) / float64(ps.ops) * 1000
				r.WriterReadUnitsPerWrite = (a.DataRequests.ReadUnits - b.DataRequests.ReadUnits) / float64(ps.ops)
				r.WriterWriteUnitsPerWrite = (a.DataRequests.WriteUnits - b.DataRequests.WriteUnits) / float64(ps.ops)
				r.WriterByOperation = opsSince(a.DataRequests.ByOp, b.DataRequests.ByOp)
				writes := map[string]int{}
				for route, ds := range ps.writer {
					writes[route] = len(ds)
				}
				r.WriterByRoute = routeCosts(b.DataRequests, a.DataRequests, writes)
			}
			continue
		}
		c := ConsumerReport{
			Records:            a.Stream.RecordsRead - b.Stream.RecordsRead,
			FilteredOut:        a.Stream.FilteredOut - b.Stream.FilteredOut,
			Skipped:            a.Stream.Skipped - b.Stream.Skipped,
			DataRequests:       a.DataRequests.Calls - b.DataRequests.Calls,
			CheckpointRequests: a.CheckpointRequests.Calls - b.CheckpointRequests.Calls,
			StreamRequests:     a.StreamRequests.Calls - b.StreamRequests.Calls,
			HandlerCalls:       a.Stream.HandlerCalls - b.Stream.HandlerCalls,
			FailedCalls:        a.Stream.FailedCalls - b.Stream.FailedCalls,
			DeadLettered:       a.Stream.DeadLettered - b.Stream.DeadLettered,
			DataByOperation:    opsSince(a.DataRequests.ByOp, b.DataRequests.ByOp),
		}
		if a.Health != nil {
			c.Status, c.Reason = a.Health.Status, a.Health.Reason
		}
		if c.Records > 0 {
			c.DataPerRecord = float64(c.DataRequests) / float64(c.Records)
			c.CheckpointPerRec = float64(c.CheckpointRequests) / float64(c.Records)
			c.CPUSecondsPer1000 = (a.CPUSeconds - b.CPUSeconds) / float64(c.Records) * 1000
			c.ReadUnitsPerRecord = (a.DataRequests.ReadUnits - b.DataRequests.ReadUnits) / float64(c.Records)
			c.WriteUnitsPerRecord = (a.DataRequests.WriteUnits - b.DataRequests.WriteUnits) / float64(c.Records)
		}
		r.Consumers[name] = c
	}
	return r
}

// percentile returns the q-quantile of ds (nearest rank).
// keptUp reports whether the writer kept up in the phase: at least 95% of
// its target rate, and every write sent.
func (p *PhaseReport) keptUp() bool { return p.AchievedRate >= 0.95*p.TargetRate && p.NotSent == 0 }

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func msf(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

func fms(v float64) string { return ms(time.Duration(v * float64(time.Millisecond))) }

// print writes the human tables.
func (rep *Report) print(w io.Writer) {
	fmt.Fprintf(w, "\nmachine: %d CPUs, %s, %s; DynamoDB Local raw PutItem rate: %.0f writes/s (16 clients)\n\n",
		rep.Machine.CPUs, rep.Machine.OS, rep.Machine.Go, rep.DynamoDBLocalWritesPerSec)
	defer func() { fmt.Fprintf(w, "\n%s\n", rep.verdict()) }() // after everything else (main adds the scale line)
	if rep.Cost != nil {
		defer rep.Cost.print(w)
	}
	if rep.Soak != nil {
		defer rep.Soak.print(w)
	}
	if rep.Scale != nil {
		defer rep.Scale.print(w)
	}
	if rep.AWSLimits != nil {
		defer rep.AWSLimits.print(w)
	}
	if rep.Verify != nil {
		defer rep.Verify.print(w)
	}
	if rep.EMF != nil {
		defer rep.EMF.print(w)
	}
	if rep.Chat != nil {
		rep.Chat.print(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target/s\tachieved/s\terrors\twriter p50\twriter p99\tlag p50\tlag p99\tlag max\tdrain\tmissing\tCPU busy\tDynamoDB Local\t")
	for _, p := range rep.Phases {
		var p50, mx float64
		for _, d := range p.Lag {
			p50, mx = max(p50, d.P50Ms), max(mx, d.MaxMs)
		}
		ddbCores := "-"
		if p.CPU.DynamoDBLocalCores > 0 {
			ddbCores = fmt.Sprintf("%.2f cores", p.CPU.DynamoDBLocalCores)
		}
		fmt.Fprintf(tw, "%.0f\t%.1f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.0f%%\t%s\t\n", p.TargetRate, p.AchievedRate, p.Errors+p.NotSent,
			fms(p.WriterAll.P50Ms), fms(p.WriterAll.P99Ms), fms(p50), fms(p.LagP99Ms), fms(mx), fms(p.DrainMs), sum(p.Missing),
			p.CPU.MachineBusyPercent, ddbCores)
	}
	tw.Flush()
	fmt.Fprintln(w, "\n(lag columns: the worst derivation's p50, p99 and max; below, each one)")

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "lag p50 / p99 / max\t")
	for _, p := range rep.Phases {
		fmt.Fprintf(tw, "%.0f/s\t", p.TargetRate)
	}
	fmt.Fprintln(tw)
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t", k)
		for _, p := range rep.Phases {
			d := p.Lag[k]
			miss := ""
			if p.Missing[k] > 0 {
				miss = fmt.Sprintf(" (%d missing)", p.Missing[k])
			}
			if d.N == 0 {
				fmt.Fprintf(tw, "-%s\t", miss)
				continue
			}
			fmt.Fprintf(tw, "%s / %s / %s%s\t", fms(d.P50Ms), fms(d.P99Ms), fms(d.MaxMs), miss)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "consumer\ttarget/s\trecords\tdata req/record\tRCU / WCU\tcheckpoint req/record\tCPU s/1000 records\tcalls\tfailed calls\tdead letters\tstatus at end\t")
	for _, name := range []string{"projector", "notifier"} {
		for _, p := range rep.Phases {
			c, ok := p.Consumers[name]
			if !ok {
				continue
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%d\t%.2f\t%.2f / %.2f\t%.3f\t%.2f\t%d\t%d\t%d\t%s\t\n", name, p.TargetRate, c.Records, c.DataPerRecord, c.ReadUnitsPerRecord, c.WriteUnitsPerRecord, c.CheckpointPerRec, c.CPUSecondsPer1000, c.HandlerCalls, c.FailedCalls, c.DeadLettered, c.Status)
		}
	}
	for _, p := range rep.Phases {
		if p.WriterRequestsPerWrite > 0 {
			fmt.Fprintf(tw, "writer\t%.0f\t%d writes\t%.2f per write\t%.2f / %.2f\t\t%.2f per 1000 writes\t\t\t\t\n", p.TargetRate, p.Writes, p.WriterRequestsPerWrite, p.WriterReadUnitsPerWrite, p.WriterWriteUnitsPerWrite, p.WriterCPUPer1000)
		}
	}
	tw.Flush()
	for _, p := range rep.Phases {
		printRouteCosts(w, p.TargetRate, p.WriterByRoute)
	}
	for _, p := range rep.Phases {
		for _, name := range []string{"projector", "notifier"} {
			if c := p.Consumers[name]; c.Status == stream.Stuck {
				fmt.Fprintf(w, "%s was stuck at the end of the %.0f/s phase: %s\n", name, p.TargetRate, c.Reason)
			}
		}
	}
	for _, p := range rep.Phases {
		names := make([]string, 0, len(p.Faults))
		for n := range p.Faults {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fc := p.Faults[n]
			var total int64
			kinds := make([]string, 0, len(fc.Injected))
			for k, c := range fc.Injected {
				total += c
				kinds = append(kinds, fmt.Sprintf("%s %d", k, c))
			}
			sort.Strings(kinds)
			fmt.Fprintf(w, "faults injected at %.0f/s into %s: %d of %d DynamoDB requests (%s)\n", p.TargetRate, n, total, fc.Requests, strings.Join(kinds, ", "))
		}
	}

	if len(rep.Phases) > 0 {
		last := rep.Phases[len(rep.Phases)-1]
		fmt.Fprintf(w, "\nwriter latency by route at %.0f writes/s (p50 / p99):\n", last.TargetRate)
		routes := make([]string, 0, len(last.Writer))
		for r := range last.Writer {
			routes = append(routes, r)
		}
		sort.Strings(routes)
		for _, r := range routes {
			d := last.Writer[r]
			fmt.Fprintf(w, "  %-52s %6d  %s / %s\n", r, d.N, fms(d.P50Ms), fms(d.P99Ms))
		}
	}
	if len(rep.CatchUps) > 0 {
		fmt.Fprintln(w)
		for _, c := range rep.CatchUps {
			fmt.Fprintln(w, c.line())
		}
	}
	for _, p := range rep.Phases {
		for _, e := range p.FirstErrors {
			fmt.Fprintf(w, "error at %.0f/s: %s\n", p.TargetRate, strings.TrimSpace(e))
		}
	}
}

// verdict is the run in one line: how far the writer and the consumers
// kept up, whether anything was missing, and what verify found.
func (rep *Report) verdict() string {
	var b strings.Builder
	b.WriteString("verdict:")
	if rep.Chat != nil {
		b.WriteString(" chat fan-out: see above;")
	}
	if rep.WriterMax > 0 {
		fmt.Fprintf(&b, " the writer kept up to %.0f writes/s;", rep.WriterMax)
	}
	switch {
	case rep.Knee > 0:
		fmt.Fprintf(&b, " knee (lag p99 ≤ 1 s, nothing missing) %.0f writes/s", rep.Knee)
		if rep.KneeFractionOfRaw > 0 {
			fmt.Fprintf(&b, " = %.2f × the raw PutItem rate (%.0f/s)", rep.KneeFractionOfRaw, rep.DynamoDBLocalWritesPerSec)
		}
	case len(rep.Phases) > 0:
		b.WriteString(" no phase kept lag p99 within 1 s with nothing missing")
	}
	if rep.KneeNote != "" {
		fmt.Fprintf(&b, " (%s)", rep.KneeNote)
	}
	if len(rep.Phases) > 0 {
		missing := 0
		for _, p := range rep.Phases {
			missing += sum(p.Missing)
		}
		for _, c := range rep.CatchUps {
			missing += sum(c.Phase.Missing)
		}
		fmt.Fprintf(&b, "; missing derived items: %d", missing)
	}
	switch {
	case rep.Verify == nil:
	case rep.Verify.Error != "":
		b.WriteString("; verify did not run to the end")
	default:
		fmt.Fprintf(&b, "; verify: %d difference(s)", rep.Verify.Differences)
	}
	switch {
	case rep.LimitedBy != "":
		fmt.Fprintf(&b, "; limited by %s", rep.LimitedBy)
	case len(rep.Phases) > 0:
		b.WriteString("; limited by nothing measured (every phase kept up: raise -rates)")
	}
	return b.String()
}

// What counts as busy: DynamoDB Local at 0.95 of a core or more (it
// serves its requests from about one), the machine at 95% of its CPUs.
const (
	ddbLocalBusyCores  = 0.95
	machineBusyPercent = 95
)

// limit names what limited a phase that did not keep up (the writer below
// its target, writes failing, items missing or a lag p99 over kneeLag ms),
// from the phase's own measurements: a busy DynamoDB Local or machine
// first, since everything waits on them; then the writer, when it fell
// short of its target; else the consumer of the derivation that was
// missing, or whose lag p99 was the worst.
func (p *PhaseReport) limit() string {
	switch {
	case p.CPU.DynamoDBLocalCores >= ddbLocalBusyCores:
		return fmt.Sprintf("DynamoDB Local (%.2f cores busy)", p.CPU.DynamoDBLocalCores)
	case p.CPU.MachineBusyPercent >= machineBusyPercent:
		return fmt.Sprintf("the machine (%.0f%% of its CPUs busy)", p.CPU.MachineBusyPercent)
	case !p.keptUp() || p.Errors > 0:
		return "the writer"
	}
	for _, k := range kinds {
		if p.Missing[k] > 0 {
			return consumerOf(k)
		}
	}
	worst, lag := "", 0.0
	for _, k := range kinds {
		if d, ok := p.Lag[k]; ok && d.P99Ms > lag {
			worst, lag = k, d.P99Ms
		}
	}
	if worst == "" {
		return "nothing this run measured"
	}
	return consumerOf(worst)
}

// consumerOf names the consumer that makes a derivation: the projector's
// derived items, the notifier's side effects (in-app notifications of
// collaboration, e-mails, events; a recipe's folded notifications are the
// projector's, but their lag is not measured apart).
func consumerOf(kind string) string {
	switch kind {
	case kindNotification, kindEmail, kindEvent:
		return "the notifier"
	}
	return "the projector"
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
