package main

import (
	"strings"
	"testing"
)

// The verdict names what limited the first phase that did not keep up,
// from that phase's own measurements: a busy DynamoDB Local or machine
// first, then the writer, then the consumer that fell behind (missing
// items before lag); and says so when no phase fell short.
func TestVerdictSaysWhatLimited(t *testing.T) {
	ok := PhaseReport{TargetRate: 50, AchievedRate: 50, Lag: map[string]Dist{kindCombined: {P99Ms: 300}}, CPU: CPUUse{MachineBusyPercent: 50, DynamoDBLocalCores: 0.5}}
	for _, c := range []struct {
		name  string
		phase func(p *PhaseReport)
		want  string
	}{
		{"DynamoDB Local busy", func(p *PhaseReport) { p.CPU.DynamoDBLocalCores = 0.97; p.AchievedRate = 70 }, "DynamoDB Local (0.97 cores busy)"},
		{"the machine busy", func(p *PhaseReport) { p.CPU.MachineBusyPercent = 98; p.AchievedRate = 70 }, "the machine (98% of its CPUs busy)"},
		{"the writer short of its target", func(p *PhaseReport) { p.AchievedRate = 70 }, "the writer"},
		{"the writer failing", func(p *PhaseReport) { p.Errors = 3 }, "the writer"},
		{"an e-mail missing", func(p *PhaseReport) {
			p.Missing = map[string]int{kindEmail: 2}
			p.Lag = map[string]Dist{kindCombined: {P99Ms: 3000}}
		}, "the notifier"},
		{"the projector's lag", func(p *PhaseReport) {
			p.Lag = map[string]Dist{kindCombined: {P99Ms: 1800}, kindEvent: {P99Ms: 900}}
		}, "the projector"},
		{"the notifier's lag", func(p *PhaseReport) {
			p.Lag = map[string]Dist{kindCookingCounts: {P99Ms: 400}, kindEvent: {P99Ms: 1500}}
		}, "the notifier"},
	} {
		p := ok
		p.TargetRate, p.AchievedRate = 100, 100
		c.phase(&p)
		rep := &Report{Phases: []PhaseReport{ok, p}, Knee: 50, LimitedBy: p.limit()}
		if rep.LimitedBy != c.want || !strings.HasSuffix(rep.verdict(), "; limited by "+c.want) {
			t.Errorf("%s: %q, verdict %q; want %q", c.name, rep.LimitedBy, rep.verdict(), c.want)
		}
	}
	if v := (&Report{Phases: []PhaseReport{ok}, Knee: 50}).verdict(); !strings.HasSuffix(v, "; limited by nothing measured (every phase kept up: raise -rates)") {
		t.Errorf("every phase kept up: %q", v)
	}
}
