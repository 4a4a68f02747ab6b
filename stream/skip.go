package stream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/filter"
)

// SkipFunc says whether a consumer leaves a record alone. Its main use is
// the loop guard: a consumer that writes derived items into the table it
// reads sees its own writes come back on the stream, and must not handle
// them (or it writes again, and again).
type SkipFunc func(events.DynamoDBEventRecord) bool

// SkipDerived is the default loop guard (Config.Skip): it skips records of
// items that carry derived = true — the new image's, or for a removal the
// old image's. Mark what your consumer writes that way, or give the Runner
// a SkipFunc of your own (SkipNone to see every record). In Lambda the
// same guard is the event source mapping's FilterCriteria, which saves the
// invocations too: LoopGuard writes it, and keeps exactly the records
// SkipDerived does not skip. Skip applies the guard inside a handler, as a
// defence where a filter is missing.
func SkipDerived(r events.DynamoDBEventRecord) bool {
	img := r.Change.NewImage
	if len(img) == 0 {
		img = r.Change.OldImage
	}
	v, ok := img["derived"]
	return ok && v.DataType() == events.DataTypeBoolean && v.Boolean()
}

// SkipNone skips nothing: for a consumer that must see every record, its
// own writes included (one that derives nothing into the table it reads).
func SkipNone(events.DynamoDBEventRecord) bool { return false }

// Skip returns a Handler that hands h only the records skip does not
// skip; a batch with none left succeeds without calling h. A nil skip is
// SkipDerived.
func Skip(skip SkipFunc, h Handler) Handler {
	if skip == nil {
		skip = SkipDerived
	}
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		kept := ev.Records[:0:0]
		for _, r := range ev.Records {
			if !skip(r) {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			return events.DynamoDBEventResponse{}, nil
		}
		if len(kept) == len(ev.Records) {
			return h(ctx, ev)
		}
		return h(ctx, events.DynamoDBEvent{Records: kept})
	}
}

// LoopGuard is the loop guard as an event source mapping's filter: the
// records of items without derived = true (or with derived = false), the
// new image's, or for a removal the old image's — what SkipDerived keeps.
// partitionKey names the table's partition key attribute, a string (S)
// key: a removal has no new image, which a filter can only see as the key
// being absent there. Put the patterns in the mapping's FilterCriteria
// (Criteria.Patterns, or its JSON) and set the same value as the Runner's
// Config.Filter; a test can then hold the template to it:
//
//	{"dynamodb":{"NewImage":{"PK":{"S":[{"exists":true}]},"derived":{"BOOL":[{"exists":false}]}}}}
//	{"dynamodb":{"NewImage":{"derived":{"BOOL":[false]}}}}
//	{"dynamodb":{"NewImage":{"PK":{"S":[{"exists":false}]}},"OldImage":{"derived":{"BOOL":[{"exists":false}]}}}}
//	{"dynamodb":{"NewImage":{"PK":{"S":[{"exists":false}]}},"OldImage":{"derived":{"BOOL":[false]}}}}
//
// (for partitionKey "PK"; a record is kept when any one pattern matches).
func LoopGuard(partitionKey string) filter.Criteria {
	k, _ := json.Marshal(partitionKey)
	return filter.MustCriteria(
		fmt.Sprintf(`{"dynamodb":{"NewImage":{%s:{"S":[{"exists":true}]},"derived":{"BOOL":[{"exists":false}]}}}}`, k),
		`{"dynamodb":{"NewImage":{"derived":{"BOOL":[false]}}}}`,
		fmt.Sprintf(`{"dynamodb":{"NewImage":{%s:{"S":[{"exists":false}]}},"OldImage":{"derived":{"BOOL":[{"exists":false}]}}}}`, k),
		fmt.Sprintf(`{"dynamodb":{"NewImage":{%s:{"S":[{"exists":false}]}},"OldImage":{"derived":{"BOOL":[false]}}}}`, k),
	)
}

// Filter returns a Handler that hands h only the records c matches, as
// the event source mapping applies its FilterCriteria: in a Lambda
// function, a defence for a mapping whose filter is missing or older than
// the code. A batch with none left succeeds without calling h. Empty
// criteria keep every record.
func Filter(c filter.Criteria, h Handler) Handler {
	if len(c) == 0 {
		return h
	}
	return Skip(func(r events.DynamoDBEventRecord) bool { return !c.Match(r) }, h)
}
