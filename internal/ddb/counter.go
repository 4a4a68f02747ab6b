package ddb

import (
	"context"
	"maps"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the requests a client makes, by operation: calls (one per
// API call, as the caller sees them) and attempts (HTTP requests sent,
// retries included). Attach it to a client with Middleware; it is safe for
// concurrent use.
//
// With Capacity set it also asks DynamoDB for the capacity each call
// consumed (ReturnConsumedCapacity TOTAL, set on the call's input) and sums
// it, read and write units apart.
//
// A call made with a context that WithLabel marked is also counted under
// its label (the writer labels each request's calls with its route), so
// a program's requests and capacity can be told apart by what made them.
type Counter struct {
	Capacity bool
	// IndexPKs are the partition-key attributes of the tables' global
	// secondary indexes, for pricing transactions (txWriteUnits).
	IndexPKs []string

	mu       sync.Mutex
	calls    map[string]int64
	attempts map[string]int64
	rcu, wcu float64
	labels   map[string]*Usage
}

// Usage is what the calls under one label used.
type Usage struct {
	Calls      int64            `json:"calls"`
	ByOp       map[string]int64 `json:"byOperation"`
	ReadUnits  float64          `json:"readUnits,omitempty"`
	WriteUnits float64          `json:"writeUnits,omitempty"`
}

type labelKey struct{}

// WithLabel marks ctx: the calls made with it are counted under label too.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

func labelOf(ctx context.Context) string {
	l, _ := ctx.Value(labelKey{}).(string)
	return l
}

// Counts is a Counter's snapshot.
type Counts struct {
	Calls    int64            `json:"calls"`
	Attempts int64            `json:"attempts"`
	ByOp     map[string]int64 `json:"byOperation"` // calls per operation
	// ReadUnits and WriteUnits are the capacity units DynamoDB reported
	// (Counter.Capacity): a unit where it says which, otherwise the
	// operation's kind.
	ReadUnits  float64 `json:"readUnits,omitempty"`
	WriteUnits float64 `json:"writeUnits,omitempty"`
	// ByLabel is the usage of the calls made with a WithLabel context.
	ByLabel map[string]Usage `json:"byLabel,omitempty"`
}

// Middleware counts every call at the start of the client's middleware
// stack and every attempt after its retry step. Use it in a client's
// APIOptions.
func (c *Counter) Middleware(s *middleware.Stack) error {
	err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("dynastream.CountCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op, label := awsmiddleware.GetOperationName(ctx), labelOf(ctx)
			c.add(&c.calls, op)
			if label != "" {
				c.addLabel(label, op)
			}
			if c.Capacity {
				askCapacity(in.Parameters)
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if c.Capacity && err == nil {
				cs := consumed(out.Result)
				if tx, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
					// AWS's price, not DynamoDB Local's (units.go)
					w := txWriteUnits(tx, c.IndexPKs)
					cs = []types.ConsumedCapacity{{WriteCapacityUnits: &w, ReadCapacityUnits: new(float64)}}
				}
				c.addCapacity(op, label, cs)
			}
			return out, md, err
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

func (c *Counter) addLabel(label, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.labels == nil {
		c.labels = map[string]*Usage{}
	}
	u := c.labels[label]
	if u == nil {
		u = &Usage{ByOp: map[string]int64{}}
		c.labels[label] = u
	}
	u.Calls++
	u.ByOp[op]++
}

// askCapacity sets ReturnConsumedCapacity TOTAL on a DynamoDB input.
func askCapacity(in any) {
	const total = types.ReturnConsumedCapacityTotal
	switch v := in.(type) {
	case *dynamodb.GetItemInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.ScanInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.BatchGetItemInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.TransactGetItemsInput:
		v.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		v.ReturnConsumedCapacity = total
	}
}

// consumed is the capacity a DynamoDB output reports.
func consumed(out any) []types.ConsumedCapacity {
	one := func(c *types.ConsumedCapacity) []types.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []types.ConsumedCapacity{*c}
	}
	switch v := out.(type) {
	case *dynamodb.GetItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return v.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		return v.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return v.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		return v.ConsumedCapacity
	}
	return nil
}

// addCapacity adds what a call of op consumed: the read and write units
// where DynamoDB says which, otherwise its total as op's kind.
func (c *Counter) addCapacity(op, label string, cs []types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	write := strings.HasPrefix(op, "Put") || strings.HasPrefix(op, "Update") || strings.HasPrefix(op, "Delete") ||
		op == "BatchWriteItem" || op == "TransactWriteItems"
	for _, cc := range cs {
		r, w := deref(cc.ReadCapacityUnits), deref(cc.WriteCapacityUnits)
		if r == 0 && w == 0 {
			if write {
				w = deref(cc.CapacityUnits)
			} else {
				r = deref(cc.CapacityUnits)
			}
		}
		c.rcu += r
		c.wcu += w
		if u := c.labels[label]; u != nil {
			u.ReadUnits += r
			u.WriteUnits += w
		}
	}
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// Counts returns the counts so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{ByOp: maps.Clone(c.calls), ReadUnits: c.rcu, WriteUnits: c.wcu}
	if out.ByOp == nil {
		out.ByOp = map[string]int64{}
	}
	for _, n := range c.calls {
		out.Calls += n
	}
	for _, n := range c.attempts {
		out.Attempts += n
	}
	if len(c.labels) > 0 {
		out.ByLabel = make(map[string]Usage, len(c.labels))
		for l, u := range c.labels {
			v := *u
			v.ByOp = maps.Clone(u.ByOp)
			out.ByLabel[l] = v
		}
	}
	return out
}
