package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// Effects are what a phase's writes made beyond the writer's own
// requests, counted by the observer: domain events in the outbox (what
// EventBridge's PutEvents would take), e-mails in the mail folder (what
// SES would send), pushes the mix's chat connections received (messages
// API Gateway would send), and the write units of the derived changes on
// the stream had each been written once, plainly (the design's minimum
// for the consumers' writes).
type Effects struct {
	Events             int64   `json:"events"`
	Emails             int64   `json:"emails"`
	Pushes             int64   `json:"pushes"`
	DerivedChangeUnits float64 `json:"derivedChangeUnits"`
}

// effects reads the observer's counts now.
func (e *engine) effects() Effects {
	var out Effects
	if e.obs == nil {
		return out
	}
	out.Events, out.Emails = e.obs.events.Load(), e.obs.emails.Load()
	e.obs.mu.Lock()
	out.DerivedChangeUnits = e.obs.derivedUnits
	e.obs.mu.Unlock()
	if e.w != nil && e.w.chat != nil {
		out.Pushes = e.w.chat.recv.pushes.Load()
	}
	return out
}

// since is what was counted between two readings.
func (b Effects) since(a Effects) Effects {
	return Effects{Events: b.Events - a.Events, Emails: b.Emails - a.Emails, Pushes: b.Pushes - a.Pushes,
		DerivedChangeUnits: b.DerivedChangeUnits - a.DerivedChangeUnits}
}

// Prices are AWS's public on-demand list prices the bill uses, for one
// region on one date (prices.json; -prices reads a file of the same shape,
// for another region or a later date).
type Prices struct {
	Region string `json:"region"`
	Date   string `json:"date"`
	Source string `json:"source"`
	// DynamoDB on demand, per million request units.
	DynamoDBWriteUnitsPerMillion float64 `json:"dynamodbWriteRequestUnitsPerMillion"`
	DynamoDBReadUnitsPerMillion  float64 `json:"dynamodbReadRequestUnitsPerMillion"`
	// DynamoDB Streams reads by a Lambda trigger are free; the price per
	// million stream read request units applies to other readers.
	StreamReadUnitsPerMillion float64 `json:"streamReadRequestUnitsPerMillion"`
	// Lambda on arm64: requests, and GB-seconds of duration.
	LambdaRequestsPerMillion float64 `json:"lambdaRequestsPerMillion"`
	LambdaGBSecond           float64 `json:"lambdaArm64PerGBSecond"`
	// EventBridge custom events (each up to 64 KB), SES e-mails, API
	// Gateway HTTP API requests and WebSocket messages (each up to 32 KB).
	EventsPerMillion            float64 `json:"eventBridgeEventsPerMillion"`
	EmailsPerThousand           float64 `json:"sesEmailsPerThousand"`
	HTTPRequestsPerMillion      float64 `json:"httpApiRequestsPerMillion"`
	WebSocketMessagesPerMillion float64 `json:"webSocketMessagesPerMillion"`
}

//go:embed prices.json
var defaultPrices []byte

// loadPrices reads path's prices, or the built-in ones when path is "".
func loadPrices(path string) (Prices, error) {
	b := defaultPrices
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return Prices{}, fmt.Errorf("-prices: %w", err)
		}
	}
	var p Prices
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return Prices{}, fmt.Errorf("-prices %s: %w", path, err)
	}
	if p.Region == "" || p.Date == "" {
		return Prices{}, errors.New("-prices: region and date are required")
	}
	return p, nil
}

// The template's settings the bill depends on (infra/template.yaml; a test
// checks them against it): each function's memory and the event source
// mappings' default batch size.
const (
	lambdaMemoryMB   = 256
	mappingBatchSize = 100
)

// Bill is the measured mix's cost per million user writes on AWS, line by
// line, beside the design's minimum for each line.
type Bill struct {
	Prices Prices `json:"prices"`
	// Phase is the target rate of the phase the bill is measured in (the
	// highest that kept up).
	Phase float64    `json:"phaseWritesPerSec"`
	Lines []BillLine `json:"lines"`
	// Total and Minimum are in dollars per million user writes; Ratio is
	// Total over Minimum.
	Total   float64 `json:"total"`
	Minimum float64 `json:"minimum"`
	Ratio   float64 `json:"ratio"`
	// Unpriced names the lines the run measured nothing for (priced at 0,
	// minimum too), so that the total is not read as the whole bill.
	Unpriced []string `json:"unpriced,omitempty"`
}

// BillLine is one service's share: units per user write, measured and
// the design's minimum, and what a million user writes cost at the price.
type BillLine struct {
	Name            string  `json:"name"`
	Unit            string  `json:"unit"`
	PerWrite        float64 `json:"perWrite"`
	MinimumPerWrite float64 `json:"minimumPerWrite"`
	// PricePerUnit is in dollars.
	PricePerUnit float64 `json:"pricePerUnit"`
	Cost         float64 `json:"cost"`
	MinimumCost  float64 `json:"minimumCost"`
	Note         string  `json:"note,omitempty"`
}

// chatRoute is the route the mix's chat messages are counted under.
const chatRoute = "WS sendMessage (frame written)"

// billOf prices the highest phase that kept up (else the last), with the
// whole run's EMF durations for Lambda's. Nil without a phase.
func billOf(rep *Report, prices Prices) *Bill {
	var p *PhaseReport
	for i := range rep.Phases {
		if q := &rep.Phases[i]; p == nil || (q.keptUp() && q.TargetRate > p.TargetRate) || !p.keptUp() {
			p = q
		}
	}
	if p == nil || p.Writes == 0 {
		return nil
	}
	w := float64(p.Writes)
	b := &Bill{Prices: prices, Phase: p.TargetRate}
	line := func(name, unit string, per, min, price float64, note string) {
		b.Lines = append(b.Lines, BillLine{Name: name, Unit: unit, PerWrite: per, MinimumPerWrite: min, PricePerUnit: price,
			Cost: per * price * 1e6, MinimumCost: min * price * 1e6, Note: note})
	}

	// DynamoDB: the writer's units per write and each consumer's (their
	// checkpoints are the local Runner's: Lambda's mapping keeps its
	// position itself, unbilled).
	wcu, rcu := p.WriterWriteUnitsPerWrite, p.WriterReadUnitsPerWrite
	// Routes with no minimum count as measured, and so do the units no
	// route's label names (the chat's WebSocket frames).
	minW, minR := 0.0, 0.0
	labelledW, labelledR := 0.0, 0.0
	unpriced := 0
	for _, rc := range p.WriterByRoute {
		share := float64(rc.Writes) / w
		labelledW, labelledR = labelledW+rc.WriteUnitsPerWrite*share, labelledR+rc.ReadUnitsPerWrite*share
		if rc.Minimum != nil {
			minW += rc.Minimum.Write * share
			minR += rc.Minimum.Read * share
			continue
		}
		minW += rc.WriteUnitsPerWrite * share
		minR += rc.ReadUnitsPerWrite * share
		unpriced += rc.Writes
	}
	minW += max(wcu-labelledW, 0)
	minR += max(rcu-labelledR, 0)
	var consumerW, consumerR, calls, handled float64
	for _, c := range p.Consumers {
		consumerW += c.WriteUnitsPerRecord * float64(c.Records) / w
		consumerR += c.ReadUnitsPerRecord * float64(c.Records) / w
		calls += float64(c.HandlerCalls) / w
		handled += float64(c.Records-c.FilteredOut-c.Skipped) / w
	}
	derived := p.Effects.DerivedChangeUnits / w
	if wcu == 0 && rcu == 0 {
		// no program reported consumed capacity (DYNAMODB_CAPACITY=false
		// turns the reporting off): priced at 0 would read as free
		const why = "not priced: the programs reported no consumed capacity (DYNAMODB_CAPACITY=false?); the minimum left out too"
		line("DynamoDB writes", "write request unit", 0, 0, prices.DynamoDBWriteUnitsPerMillion/1e6, why)
		line("DynamoDB reads", "read request unit", 0, 0, prices.DynamoDBReadUnitsPerMillion/1e6, why)
		b.Unpriced = append(b.Unpriced, "DynamoDB writes", "DynamoDB reads")
	} else {
		line("DynamoDB writes", "write request unit", wcu+consumerW, minW+derived, prices.DynamoDBWriteUnitsPerMillion/1e6,
			fmt.Sprintf("writer %.2f + consumers %.2f per write; minimum: the writer's per route (minimum.go; %d writes of routes without one, and %.2f units no route names, as measured) and each derived change written once, plainly (%.2f)", wcu, consumerW, unpriced, max(wcu-labelledW, 0), derived))
		line("DynamoDB reads", "read request unit", rcu+consumerR, minR+consumerR, prices.DynamoDBReadUnitsPerMillion/1e6,
			fmt.Sprintf("writer %.2f + consumers %.2f per write; minimum: the writer's per route; the consumers' reads (the state a derivation needs) as measured: the design sets no minimum for them", rcu, consumerR))
	}
	line("DynamoDB Streams reads", "stream read request unit", 0, 0, prices.StreamReadUnitsPerMillion/1e6,
		"free: the consumers are Lambda triggers")

	// Lambda: the writer is invoked once per user write (HTTP API or a
	// WebSocket message); the consumers per handler call. The minimum
	// batches every handled record into full batches.
	gbPerMs := float64(lambdaMemoryMB) / 1024 / 1000
	var gbs, minGBs float64
	if e := rep.EMF; e != nil {
		if e.Writer.Requests > 0 {
			gbs += e.Writer.BilledMs / float64(e.Writer.Requests) * gbPerMs
		}
		for name, ec := range e.Consumers {
			if ec.Calls > 0 {
				perCall := ec.BilledMs / float64(ec.Calls)
				c := p.Consumers[name]
				gbs += perCall * float64(c.HandlerCalls) / w * gbPerMs
			}
		}
	}
	minGBs = gbs
	line("Lambda requests", "invocation", 1+calls, 1+handled/mappingBatchSize, prices.LambdaRequestsPerMillion/1e6,
		fmt.Sprintf("the writer 1 per write, the consumers %.2f handler calls per write; minimum: %.2f records per write reaching a handler, in full batches of %d", calls, handled, mappingBatchSize))
	durationNote := fmt.Sprintf("at %d MB (the template's), from the EMF durations, each rounded up to the millisecond; minimum as measured: the design sets none", lambdaMemoryMB)
	if rep.EMF == nil {
		durationNote = "not priced: no EMF lines were read (a running stack, -writer, keeps its log)"
		b.Unpriced = append(b.Unpriced, "Lambda duration")
	}
	line("Lambda duration", "GB-second", gbs, minGBs, prices.LambdaGBSecond, durationNote)

	// Side effects: each is the product the design promises, so the
	// minimum is what was measured.
	line("EventBridge events", "event", float64(p.Effects.Events)/w, float64(p.Effects.Events)/w, prices.EventsPerMillion/1e6, "the domain events published (the outbox's lines)")
	line("SES e-mails", "e-mail", float64(p.Effects.Emails)/w, float64(p.Effects.Emails)/w, prices.EmailsPerThousand/1e3, "the e-mails sent")
	chat := float64(p.Writer[chatRoute].N) / w // the messages sent (their frames' latencies)
	line("API Gateway HTTP requests", "request", 1-chat, 1-chat, prices.HTTPRequestsPerMillion/1e6, "one per user write but the chat's")
	ws := chat + float64(p.Effects.Pushes)/w
	line("API Gateway WebSocket messages", "message", ws, ws, prices.WebSocketMessagesPerMillion/1e6,
		fmt.Sprintf("the chat's messages in (%.3f per write) and the pushes out (%.3f)", chat, float64(p.Effects.Pushes)/w))

	for _, l := range b.Lines {
		b.Total += l.Cost
		b.Minimum += l.MinimumCost
	}
	if b.Minimum > 0 {
		b.Ratio = b.Total / b.Minimum
	}
	return b
}

// line is the bill in one line, for scripts.
func (b *Bill) line() string {
	l := fmt.Sprintf("cost: $%.2f per million user writes on AWS (the design's minimum $%.2f: %.2fx)", b.Total, b.Minimum, b.Ratio)
	if len(b.Unpriced) > 0 {
		l += "; not priced: " + strings.Join(b.Unpriced, ", ")
	}
	return l
}

// print writes the bill's table and its line.
func (b *Bill) print(w io.Writer) {
	fmt.Fprintf(w, "\nthe bill per million user writes (the phase at %.0f/s; %s on-demand prices of %s, %s):\n", b.Phase, b.Prices.Region, b.Prices.Date, "cmd/loadgen/prices.json or -prices")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  line\tper write\tminimum\tcost\tminimum cost\tratio\t")
	for _, l := range b.Lines {
		ratio := "-"
		if l.MinimumCost > 0 {
			ratio = fmt.Sprintf("%.2fx", l.Cost/l.MinimumCost)
		}
		fmt.Fprintf(tw, "  %s\t%.3f\t%.3f\t$%.2f\t$%.2f\t%s\t\n", l.Name, l.PerWrite, l.MinimumPerWrite, l.Cost, l.MinimumCost, ratio)
	}
	tw.Flush()
	for _, l := range b.Lines {
		fmt.Fprintf(w, "  %s: %s\n", l.Name, l.Note)
	}
	fmt.Fprintln(w, b.line())
}
