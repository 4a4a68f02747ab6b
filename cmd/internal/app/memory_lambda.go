//go:build lambda.norpc

package app

import "runtime"

// ReadMemory: a Lambda bootstrap serves no /metrics (its heap goes out on
// the consumers' EMF lines), and runtime/metrics' tables would weigh on
// it (memory_local.go has the whole reading).
func ReadMemory() Memory { return Memory{Goroutines: runtime.NumGoroutine()} }
