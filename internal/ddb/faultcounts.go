package ddb

import "context"

// FaultCounts is how many requests went through and how many of each
// kind of fault were injected.
type FaultCounts struct {
	Requests int64            `json:"requests"`
	Injected map[string]int64 `json:"injected"`
}

// atStart marks a context whose requests Faults lets through.
type atStart struct{}

// AtStart returns a context whose requests no Faults fails: a program's
// checks before it serves (the table's record of its write shards), which
// the fault tests do not test and which a panic would turn into a failed
// start instead of the handler's failure under test.
func AtStart(ctx context.Context) context.Context { return context.WithValue(ctx, atStart{}, true) }
