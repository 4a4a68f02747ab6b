package ddb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

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

// faultSpec is DYNAMODB_FAULTS read: "RATE[,seed=N][,after|,panic]".
type faultSpec struct {
	rate          float64
	seed          uint64
	after, panics bool
}

func parseFaults(s string) (faultSpec, error) {
	parts := strings.Split(s, ",")
	rate, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	if err != nil || rate < 0 || rate > 1 {
		return faultSpec{}, fmt.Errorf("fault rate %q: want a number in 0..1", parts[0])
	}
	f := faultSpec{rate: rate, seed: 1}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		switch {
		case p == "after":
			f.after = true
		case p == "panic":
			f.panics = true
		case strings.HasPrefix(p, "seed="):
			if f.seed, err = strconv.ParseUint(strings.TrimPrefix(p, "seed="), 10, 64); err != nil {
				return faultSpec{}, fmt.Errorf("fault seed %q: %w", p, err)
			}
		default:
			return faultSpec{}, fmt.Errorf("fault option %q: want seed=N, after or panic", p)
		}
	}
	return f, nil
}
