package stream

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
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
// invocations too: these four patterns (a record passes when any one
// matches; a removal has no NewImage, so its PK is absent there), as
// examples/orders/template.yaml in the repository writes them:
//
//	{"dynamodb":{"NewImage":{"PK":{"S":[{"exists":true}]},"derived":{"BOOL":[{"exists":false}]}}}}
//	{"dynamodb":{"NewImage":{"derived":{"BOOL":[false]}}}}
//	{"dynamodb":{"NewImage":{"PK":{"S":[{"exists":false}]}},"OldImage":{"derived":{"BOOL":[{"exists":false}]}}}}
//	{"dynamodb":{"NewImage":{"PK":{"S":[{"exists":false}]}},"OldImage":{"derived":{"BOOL":[false]}}}}
//
// (PK is the table's partition key attribute: put yours). Skip applies the
// guard inside a handler, as a defence where a filter is missing.
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
