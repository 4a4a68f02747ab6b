//go:build !lambda.norpc

package app

import (
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Memory profiling is off unless it is asked for. Linking net/http/pprof
// turns it on (a Go program that cannot read a memory profile has it off),
// and the runtime then keeps a bucket per sampled call stack and size for
// good (runtime.MemStats.BuckHashSys): in a soak, the writer's, the
// projector's and the notifier's grew 1.5, 2.2 and 1.2 MB an hour, with
// their live heaps flat (issue 52). A Lambda build links no profiles, so
// the linker has it off there too. To turn it on, for a heap profile that
// names what allocated, start the program with
//
//	GODEBUG=memprofilerate=524288
//
// (Go's default rate). Every program linking this package has it off,
// loadgen and the commands' test binaries too: `go test -memprofile`
// needs -memprofilerate as well.
func init() { runtime.MemProfileRate = memProfileRate(os.Getenv("GODEBUG"), runtime.MemProfileRate) }

// memProfileRate is the rate to keep: rate, as the runtime set it, when
// godebug sets memprofilerate as the runtime reads it (an entry
// memprofilerate=<integer>, entries split at commas; the runtime package's
// Environment Variables); otherwise 0.
func memProfileRate(godebug string, rate int) int {
	for _, kv := range strings.Split(godebug, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if _, err := strconv.Atoi(v); ok && k == "memprofilerate" && err == nil {
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
