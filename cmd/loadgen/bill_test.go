package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The bill prices what a phase measured: each line is its units per write
// times the price, a million times, beside the design's minimum.
func TestBill(t *testing.T) {
	prices, err := loadPrices("")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{
		Phases: []PhaseReport{{
			TargetRate: 100, AchievedRate: 100, Writes: 1000,
			WriterReadUnitsPerWrite: 1, WriterWriteUnitsPerWrite: 6,
			WriterByRoute: map[string]RouteCost{
				"PUT /rooms/{roomId}/criteria": {Writes: 900, ReadUnitsPerWrite: 1, WriteUnitsPerWrite: 6, Minimum: &Minimum{Read: 2, Write: 4}},
			},
			Writer: map[string]Dist{"PUT /rooms/{roomId}/criteria": {N: 900}, chatRoute: {N: 100}}, // the chat's frames make no DynamoDB call the writer's counter labels
			Consumers: map[string]ConsumerReport{
				"projector": {Records: 3000, FilteredOut: 1000, ReadUnitsPerRecord: 0.5, WriteUnitsPerRecord: 1, HandlerCalls: 200},
				"notifier":  {Records: 3000, FilteredOut: 2000, ReadUnitsPerRecord: 0.1, WriteUnitsPerRecord: 0.2, HandlerCalls: 100},
			},
			Effects: Effects{Events: 500, Emails: 20, Pushes: 2000, DerivedChangeUnits: 1500},
		}},
		EMF: &EMFReport{
			Writer:    EMFWriter{Requests: 100, BilledMs: 1000},
			Consumers: map[string]EMFConsumer{"projector": {Calls: 10, BilledMs: 500}, "notifier": {Calls: 10, BilledMs: 100}},
		},
	}
	b := billOf(rep, prices)
	if b == nil {
		t.Fatal("no bill")
	}
	got := map[string]BillLine{}
	for _, l := range b.Lines {
		got[l.Name] = l
	}
	near := func(name string, per, min float64) {
		t.Helper()
		l := got[name]
		if math.Abs(l.PerWrite-per) > 1e-9 || math.Abs(l.MinimumPerWrite-min) > 1e-9 || math.Abs(l.Cost-per*l.PricePerUnit*1e6) > 1e-9 {
			t.Errorf("%s: %+v, want %v per write, minimum %v", name, l, per, min)
		}
	}
	// writes: 6 + (3000*1 + 3000*0.2)/1000 = 9.6; minimum 0.9*4, the
	// 0.6 no route names (6 - 0.9*6) as measured, and 1.5 derived
	near("DynamoDB writes", 9.6, 3.6+0.6+1.5)
	// reads: 1 + (1500 + 300)/1000 = 2.8; minimum 0.9*2, 0.1 unnamed, and
	// the consumers' 1.8 as measured
	near("DynamoDB reads", 2.8, 1.8+0.1+1.8)
	near("DynamoDB Streams reads", 0, 0)
	// calls: 0.3 per write; handled (2000 + 1000)/1000 = 3, in batches of 100
	near("Lambda requests", 1.3, 1+3.0/mappingBatchSize)
	// the writer 10 ms a request, the projector 50 ms a call (0.2 calls a
	// write), the notifier 10 ms (0.1): 10 + 10 + 1 = 21 ms at 0.25 GB
	near("Lambda duration", 21*0.25/1000, 21*0.25/1000)
	near("EventBridge events", 0.5, 0.5)
	near("SES e-mails", 0.02, 0.02)
	near("API Gateway HTTP requests", 0.9, 0.9)
	near("API Gateway WebSocket messages", 2.1, 2.1)
	total, minimum := 0.0, 0.0
	for _, l := range b.Lines {
		total, minimum = total+l.Cost, minimum+l.MinimumCost
	}
	if math.Abs(b.Total-total) > 1e-9 || math.Abs(b.Minimum-minimum) > 1e-9 || math.Abs(b.Ratio-total/minimum) > 1e-9 {
		t.Errorf("totals %v / %v = %v, lines %v / %v", b.Total, b.Minimum, b.Ratio, total, minimum)
	}
	if !regexp.MustCompile(`^cost: \$[0-9]+\.[0-9]{2} per million user writes on AWS \(the design's minimum \$[0-9]+\.[0-9]{2}: [0-9]+\.[0-9]{2}x\)$`).MatchString(b.line()) {
		t.Errorf("line %q", b.line())
	}
	if billOf(&Report{}, prices) != nil {
		t.Error("a bill without a phase")
	}

	// A run whose programs reported no consumed capacity
	// (DYNAMODB_CAPACITY=false), nor EMF lines, prices neither at 0 as
	// if free: the lines say so, the minimum leaves them out too, and the
	// line for scripts names them.
	rep.Phases[0].WriterReadUnitsPerWrite, rep.Phases[0].WriterWriteUnitsPerWrite = 0, 0
	rep.EMF = nil
	b = billOf(rep, prices)
	for _, l := range b.Lines {
		if l.Name == "DynamoDB writes" && (l.Cost != 0 || l.MinimumCost != 0 || !strings.HasPrefix(l.Note, "not priced")) {
			t.Errorf("unmeasured DynamoDB writes: %+v", l)
		}
	}
	if want := "; not priced: DynamoDB writes, DynamoDB reads, Lambda duration"; !strings.HasSuffix(b.line(), want) {
		t.Errorf("line %q, want it to end %q", b.line(), want)
	}
}

// prices.json is the built-in price list; -prices reads one of the same
// shape, and refuses a misspelt field rather than pricing it at 0.
func TestPrices(t *testing.T) {
	p, err := loadPrices("")
	if err != nil || p.Region != "us-east-1" || p.Date == "" || p.DynamoDBWriteUnitsPerMillion <= 0 || p.LambdaGBSecond <= 0 {
		t.Fatalf("built-in prices %+v: %v", p, err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"region":"eu-west-1","date":"2026-12-01","dynamodbWriteUnitsPerMilion":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadPrices(bad); err == nil || !strings.Contains(err.Error(), "dynamodbWriteUnitsPerMilion") {
		t.Errorf("a misspelt field: %v", err)
	}
	if _, err := parseFlags([]string{"-prices", filepath.Join(dir, "none.json")}); err == nil {
		t.Error("-prices of a missing file was taken")
	}
}

// The template's settings the bill assumes are the template's.
func TestBillTemplateSettings(t *testing.T) {
	b, err := os.ReadFile("../../infra/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tpl := string(b)
	mem := regexp.MustCompile(`MemorySize: (\d+)`).FindAllStringSubmatch(tpl, -1)
	if len(mem) < 3 {
		t.Fatalf("%d functions' MemorySize in the template, want 3", len(mem))
	}
	for _, m := range mem {
		if m[1] != "256" || lambdaMemoryMB != 256 {
			t.Errorf("MemorySize %s in the template, %d in the bill", m[1], lambdaMemoryMB)
		}
	}
	if m := regexp.MustCompile(`(?s)\n  BatchSize:\n.*?Default: (\d+)`).FindStringSubmatch(tpl); m == nil || m[1] != "100" || mappingBatchSize != 100 {
		t.Errorf("BatchSize default %v in the template, %d in the bill", m, mappingBatchSize)
	}
}
