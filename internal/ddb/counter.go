package ddb

import (
	"context"
	"maps"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the requests a client makes, by operation: calls (one per
// API call, as the caller sees them) and attempts (HTTP requests sent,
// retries included). Attach it to a client with Middleware; it is safe for
// concurrent use.
type Counter struct {
	mu       sync.Mutex
	calls    map[string]int64
	attempts map[string]int64
}

// Counts is a Counter's snapshot.
type Counts struct {
	Calls    int64            `json:"calls"`
	Attempts int64            `json:"attempts"`
	ByOp     map[string]int64 `json:"byOperation"` // calls per operation
}

// Middleware counts every call at the start of the client's middleware
// stack and every attempt after its retry step. Use it in a client's
// APIOptions.
func (c *Counter) Middleware(s *middleware.Stack) error {
	err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("dynastream.CountCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.add(&c.calls, awsmiddleware.GetOperationName(ctx))
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	if err != nil {
		return err
	}
	return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("dynastream.CountAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.add(&c.attempts, awsmiddleware.GetOperationName(ctx))
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (c *Counter) add(m *map[string]int64, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[op]++
}

// Counts returns the counts so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{ByOp: maps.Clone(c.calls)}
	if out.ByOp == nil {
		out.ByOp = map[string]int64{}
	}
	for _, n := range c.calls {
		out.Calls += n
	}
	for _, n := range c.attempts {
		out.Attempts += n
	}
	return out
}
