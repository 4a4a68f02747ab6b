package ddbtest

import (
	"runtime"
	"runtime/metrics"
)

// LiveHeap is the Go heap's live bytes after a full collection, from
// runtime/metrics: what a test that looks for a leak compares before and
// after a long run (never a time).
func LiveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
