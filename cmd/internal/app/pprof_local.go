//go:build !lambda.norpc

package app

import (
	"net/http"
	"net/http/pprof"
)

// profiles serves Go's profiles (heap, allocs, goroutine, a CPU profile,
// a trace) on the admin endpoint, for this machine only, as pause and
// resume: `go tool pprof http://127.0.0.1:<port>/debug/pprof/heap`. It
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
