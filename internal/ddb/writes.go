package ddb

import (
	"context"
	"errors"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Whether a run may have changed the table: a keyed request that failed
// with a 5xx is run again, as of its first start when the failed run may
// have written (so what it wrote is the retry's own), as of its own time
// when it surely wrote nothing (so it writes no history in the past).
//
// TrackWrites marks a context; the TrackedWrites middleware, on the
// client, records every call made with it, per attempt (after the SDK's
// retry step); Writes says what it saw.

type writesKey struct{}

type writeLog struct {
	calls   atomic.Int64
	mayHave atomic.Bool
}

// TrackWrites returns ctx marked so that the writing calls made with it
// are recorded by TrackedWrites.
func TrackWrites(ctx context.Context) context.Context {
	return context.WithValue(ctx, writesKey{}, &writeLog{})
}

// Writes reports whether the calls made with a TrackWrites context may
// have changed a table: a writing call's attempt that succeeded, or that
// ended any other way than DynamoDB's 4xx refusal (a 5xx, a lost answer,
// a cancelled call), may have. It is true, not knowing, for a context
// that TrackWrites did not mark or whose client recorded no call at all
// (its client lacks the middleware).
func Writes(ctx context.Context) bool {
	l, ok := ctx.Value(writesKey{}).(*writeLog)
	return !ok || l.calls.Load() == 0 || l.mayHave.Load()
}

// writing names the operations that change a table.
var writing = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true,
	"ExecuteStatement": true, "BatchExecuteStatement": true, "ExecuteTransaction": true,
}

// TrackedWrites is the client middleware TrackWrites needs: add it to a
// DynamoDB client's APIOptions.
func TrackedWrites(s *middleware.Stack) error {
	return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("dynastream.TrackWrites",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			l, ok := ctx.Value(writesKey{}).(*writeLog)
			if !ok {
				return next.HandleFinalize(ctx, in)
			}
			l.calls.Add(1)
			out, md, err := next.HandleFinalize(ctx, in)
			if writing[awsmiddleware.GetOperationName(ctx)] && !refused(err) {
				l.mayHave.Store(true)
			}
			return out, md, err
		}), middleware.After)
}

// refused says whether an attempt's error is DynamoDB's answer that it did
// nothing: a 4xx (a failed condition, a cancelled transaction, a throttle,
// a validation error).
func refused(err error) bool {
	var re *smithyhttp.ResponseError
	return err != nil && errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500
}
