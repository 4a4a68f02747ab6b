package main

import (
	"math"
	"regexp"
	"testing"
)

// A soak's growth is the least-squares slope of its samples, per hour: a
// program whose memory rises 0.3 MB a minute grows 18 MB/h, one that
// swings around a flat line about 0; the line has the shape scripts read.
func TestSoakGrowth(t *testing.T) {
	s := &soakSampler{samples: map[string][]MemorySample{}}
	for i := range 61 {
		m := float64(i) // minutes
		s.samples["projector"] = append(s.samples["projector"], MemorySample{T: 60 * m, RSSMB: 25 + 0.3*m, HeapMB: 5 + 0.3*m})
		s.samples["writer"] = append(s.samples["writer"], MemorySample{T: 60 * m, RSSMB: 31 + 2*float64(i%2), HeapMB: 4})
		s.samples["DynamoDB Local"] = append(s.samples["DynamoDB Local"], MemorySample{T: 60 * m, RSSMB: 400 + m})
	}
	r := s.report(soakEvery(0))
	got := map[string]SoakProgram{}
	for _, p := range r.Programs {
		got[p.Program] = p
	}
	if p := got["projector"]; math.Abs(p.GrowthMBPerHour-18) > 1e-9 || math.Abs(p.HeapGrowthMBPerHour-18) > 1e-9 || p.StartMB != 25 || p.EndMB != 43 || p.Minutes != 60 {
		t.Errorf("projector %+v", p)
	}
	if p := got["writer"]; math.Abs(p.GrowthMBPerHour) > 0.1 || p.HeapGrowthMBPerHour != 0 {
		t.Errorf("writer %+v", p)
	}
	if r.Programs[len(r.Programs)-1].Program != "DynamoDB Local" {
		t.Errorf("DynamoDB Local is not last: %+v", r.Programs)
	}
	line := regexp.MustCompile(`^soak: projector 25\.0 MB → 43\.0 MB over 60 min \(\+18\.0 MB/h\)`)
	if l := got["projector"].line(); !line.MatchString(l) {
		t.Errorf("line %q", l)
	}
}
