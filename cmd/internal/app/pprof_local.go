//go:build !lambda.norpc

package app

import (
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strings"
)

// Memory profiling is off unless it is asked for. Linking net/http/pprof
// turns it on (a Go program that cannot read a memory profile has it off),
// and the runtime then keeps the call stack of every sampled allocation
// for good (runtime.MemStats.BuckHashSys): a soak's programs grew 1.3 to
// 2.3 MB an hour that way, with their live heaps flat (issue 52). A Lambda
// build links no profiles, so it has it off too. GODEBUG=memprofilerate=
// 524288 (Go's default rate) turns it on, for a heap profile that shows
// what allocated.
func init() { runtime.MemProfileRate = memProfileRate(os.Getenv("GODEBUG"), runtime.MemProfileRate) }

// memProfileRate is the rate to keep: rate, as the runtime set it, when
// godebug sets memprofilerate; otherwise 0.
func memProfileRate(godebug string, rate int) int {
	for _, kv := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(kv), "="); k == "memprofilerate" {
			return rate
		}
	}
	return 0
}

// profiles serves Go's profiles (heap, allocs, goroutine, a CPU profile,
// a trace) on the admin endpoint, for this machine only, as pause and
// resume: `go tool pprof http://127.0.0.1:<port>/debug/pprof/heap` (its
// allocations when memory profiling is on, see init). It
// returns the paths for the log. Not in a Lambda build (its bootstrap has
// no admin endpoint, and net/http/pprof would weigh on it).
func profiles(mux *http.ServeMux) string {
	mux.Handle("/debug/pprof/", fromLoopback(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", fromLoopback(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", fromLoopback(http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", fromLoopback(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", fromLoopback(http.HandlerFunc(pprof.Trace)))
	return " /debug/pprof/"
}
