//go:build !lambda.norpc

package app

import (
	"os"
	"runtime"
	"testing"
)

// Memory profiling stays off unless GODEBUG asks for it with
// memprofilerate, read as the runtime reads it (the runtime package's
// Environment Variables, https://pkg.go.dev/runtime#hdr-Environment_Variables:
// name=value entries split at commas, an integer value): its buckets are
// kept for good and grew a soak's programs 1.2 to 2.2 MB an hour.
func TestMemoryProfilingIsOffUnlessAsked(t *testing.T) {
	for _, c := range []struct {
		godebug    string
		rate, want int // the runtime's rate after GODEBUG, the one kept
	}{
		{"", 512 << 10, 0},
		{"gctrace=1", 512 << 10, 0},
		{"xmemprofilerate=1", 512 << 10, 0},
		{"memprofilerate", 512 << 10, 0},              // no value: the runtime ignores it
		{"memprofilerate=x", 512 << 10, 0},            // not an integer: ignored too
		{"gctrace=1, memprofilerate=1", 512 << 10, 0}, // " memprofilerate" is another name
		{"memprofilerate=524288", 512 << 10, 512 << 10},
		{"gctrace=1,memprofilerate=1", 1, 1},
		{"memprofilerate=0", 0, 0},
	} {
		if got := memProfileRate(c.godebug, c.rate); got != c.want {
			t.Errorf("GODEBUG=%q: rate %d, want %d", c.godebug, got, c.want)
		}
	}
	if memProfileRate(os.Getenv("GODEBUG"), 1) == 0 && runtime.MemProfileRate != 0 {
		t.Errorf("MemProfileRate %d in a program that did not ask for it", runtime.MemProfileRate)
	}
}
