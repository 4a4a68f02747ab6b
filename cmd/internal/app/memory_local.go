//go:build !lambda.norpc

package app

import (
	"runtime"
	"runtime/metrics"

	"github.com/dynastream/dynastream/consumer"
)

// ReadMemory reads the program's memory now.
func ReadMemory() Memory {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	m := Memory{Goroutines: runtime.NumGoroutine(), RSSBytes: consumer.ResidentMemory()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		m.HeapLiveBytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		m.GoBytes = s[1].Value.Uint64()
	}
	return m
}
