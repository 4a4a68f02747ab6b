package ddbtest

import (
	"runtime"
	"runtime/metrics"
)

// LiveHeap is the Go heap's live bytes after a full collection, from
// runtime/metrics: what a test looking for a leak reads as it goes
// (it asserts memory, never time).
func LiveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
