//go:build !lambda.norpc

package app

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
)

// ReadMemory reads the program's memory now.
func ReadMemory() Memory {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	m := Memory{Goroutines: runtime.NumGoroutine(), RSSBytes: rssBytes()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		m.HeapLiveBytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		m.GoBytes = s[1].Value.Uint64()
	}
	return m
}

// rssBytes is the resident set from /proc/self/statm (its second field, in
// pages); 0 without it.
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
