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
	// ByKey, with Capacity, sums the capacity by partition key too
	// (keys.go; KeyCounts).
	ByKey bool
	// Indexes are the tables' global secondary indexes, for pricing
	// transactions (txWriteUnits) and naming the index keys a call used.
	Indexes []Index

	mu       sync.Mutex
	total    Usage             // every call
	labels   map[string]*Usage // the calls of each label
	keys     Keys
	seen     seenItems
	attempts int64
}

// Usage is what calls used: how many, by operation, and the capacity.
type Usage struct {
	Calls      int64            `json:"calls"`
	ByOp       map[string]int64 `json:"byOperation"`
	ReadUnits  float64          `json:"readUnits,omitempty"`
	WriteUnits float64          `json:"writeUnits,omitempty"`
}

type labelKey struct{}

// add counts a call of op that used r read and w write units.
func (u *Usage) add(op string, calls int64, r, w float64) {
	if u.ByOp == nil {
		u.ByOp = map[string]int64{}
	}
	u.Calls += calls
	u.ByOp[op] += calls
	u.ReadUnits += r
	u.WriteUnits += w
}

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
			c.record(op, label, 1, 0, 0)
			byKey := c.Capacity && c.ByKey
			if c.Capacity {
				askCapacity(in.Parameters, byKey)
			}
			drop := false
			if byKey {
				in.Parameters, drop = askOld(in.Parameters)
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if c.Capacity && err == nil {
				r, w := units(op, consumed(out.Result))
				if tx, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
					r, w = 0, txWriteUnits(tx, c.Indexes) // AWS's price, not DynamoDB Local's (units.go)
				}
				c.record(op, label, 0, r, w)
				if byKey {
					c.recordKeys(in.Parameters, out.Result)
				}
			}
			if drop && err == nil {
				dropOld(out.Result)
			}
			return out, md, err
		}), middleware.Before)
	if err != nil {
		return err
	}
	return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("dynastream.CountAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			c.attempts++
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// record adds calls and units of op to the total and to label's usage.
func (c *Counter) record(op, label string, calls int64, r, w float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total.add(op, calls, r, w)
	if label == "" {
		return
	}
	if c.labels == nil {
		c.labels = map[string]*Usage{}
	}
	u := c.labels[label]
	if u == nil {
		u = &Usage{}
		c.labels[label] = u
	}
	u.add(op, calls, r, w)
}

// askCapacity sets ReturnConsumedCapacity TOTAL on a DynamoDB input, or
// INDEXES.
func askCapacity(in any, indexes bool) {
	total := types.ReturnConsumedCapacityTotal
	if indexes {
		total = types.ReturnConsumedCapacityIndexes
	}
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

// units is what a call of op consumed: the read and write units where
// DynamoDB says which, otherwise its total as op's kind.
func units(op string, cs []types.ConsumedCapacity) (rcu, wcu float64) {
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
		rcu, wcu = rcu+r, wcu+w
	}
	return rcu, wcu
}

// deref is *p, or T's zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// recordKeys adds what a call used of each key, and learns the index keys
// of the items it read or wrote.
func (c *Counter) recordKeys(params, result any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uses := keyUses(params, result, c.Indexes, c.seen.lookup)
	c.seen.learn(params, result, c.Indexes)
	if c.keys == nil {
		c.keys = Keys{}
	}
	wrote := map[[2]string]bool{}
	for _, u := range uses {
		m := c.keys[u.target]
		if m == nil {
			m = map[string]KeyUnits{}
			c.keys[u.target] = m
		}
		k := m[u.key]
		k.Read += u.read
		k.Write += u.write
		k.Calls++
		if tk := [2]string{u.target, u.key}; u.write > 0 && !wrote[tk] {
			wrote[tk] = true
			k.Writes++
		}
		if u.item != "" && u.item != UnknownKey && u.write > 0 {
			k.AddTop(u.item, u.write)
		}
		m[u.key] = k
	}
}

// KeyCounts returns the capacity used so far by partition key (empty
// without ByKey).
func (c *Counter) KeyCounts() Keys {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Keys, len(c.keys))
	for t, m := range c.keys {
		out[t] = maps.Clone(m)
	}
	return out
}

// Counts returns the counts so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{Calls: c.total.Calls, Attempts: c.attempts, ByOp: maps.Clone(c.total.ByOp),
		ReadUnits: c.total.ReadUnits, WriteUnits: c.total.WriteUnits}
	if out.ByOp == nil {
		out.ByOp = map[string]int64{}
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
