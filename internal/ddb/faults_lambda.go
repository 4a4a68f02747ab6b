//go:build lambda.norpc

package ddb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
)

// Faults, in a Lambda bootstrap, injects panics only ("RATE[,seed=N],panic":
// cmd/lambdatest's test of a handler's panic). DYNAMODB_FAULTS is for tests
// against a local DynamoDB (cmd/internal/app refuses it otherwise), and the
// full injector (faults.go) kept the notifier's bootstrap over its 10 MiB
// (cmd/lambdatest's TestBootstrapSizes).
type Faults struct {
	rate     float64
	mu       sync.Mutex
	rnd      *rand.Rand
	requests atomic.Int64
	panics   atomic.Int64
}

// ParseFaults reads "RATE[,seed=N],panic"; any other fault is refused.
func ParseFaults(s string) (*Faults, error) {
	spec, err := parseFaults(s)
	if err != nil {
		return nil, err
	}
	if !spec.panics || spec.after {
		return nil, errors.New("a Lambda bootstrap injects panics only: RATE[,seed=N],panic")
	}
	return &Faults{rate: spec.rate, rnd: rand.New(rand.NewPCG(spec.seed, spec.seed^0x9e3779b97f4a7c15))}, nil
}

// Counts returns the requests and the panics so far.
func (f *Faults) Counts() FaultCounts {
	c := FaultCounts{Requests: f.requests.Load(), Injected: map[string]int64{}}
	if n := f.panics.Load(); n > 0 {
		c.Injected["panic"] = n
	}
	return c
}

// RoundTrip panics in a share of the requests, as a bug would, and sends
// the others.
func (f *Faults) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(atStart{}) == nil {
		f.requests.Add(1)
		f.mu.Lock()
		hit := f.rnd.Float64() < f.rate
		f.mu.Unlock()
		if hit {
			f.panics.Add(1)
			panic(fmt.Sprintf("ddb: injected panic (DYNAMODB_FAULTS) in %s %s", req.Method, req.Header.Get("X-Amz-Target")))
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}
