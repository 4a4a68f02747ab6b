package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// Options configure a consumer's Lambda entry point.
type Options struct {
	// Name is the consumer's name, in dead letters and metrics.
	Name string
	// DeadLetters receives the records that do not decode (with their raw
	// JSON) and the ones the handler dead-letters itself; nil: such a
	// record is reported failed, so the event source mapping retries it
	// and, after its retries, sends it to the on-failure destination.
	DeadLetters stream.DeadLetters
	// Filter is the event source mapping's FilterCriteria, applied again
	// in the function as a defence: records it does not match are dropped
	// before the handler (and before Skip). Give it the value the
	// template's FilterCriteria is written from; the mapping filters first,
	// and saves the invocation.
	Filter filter.Criteria
	// Skip is the loop guard (nil: stream.SkipDerived, items written with
	// derived = true; stream.SkipNone to get every record). The event
	// source mapping's filter should drop the same records before the
	// invocation; this catches what it lets through.
	Skip stream.SkipFunc
	// Observe, when set, is told about every handler call (see Instrument
	// and EMF).
	Observe func(Call)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Lambda is the lambda.Handler of a stream consumer: the payload is handed
// over as it came (aws-lambda-go would first decode it into the handler's
// argument) to stream.LambdaHandler, which decodes each record on its own
// with the fast decoder, and the answer (the partial batch response) is
// encoded as aws-lambda-go encodes answers. Turn ReportBatchItemFailures on
// in the event source mapping.
func Lambda(h stream.Handler, o Options) lambda.Handler {
	if o.Observe != nil {
		h = Instrument(h, o.Name, o.Observe)
	}
	return Raw(stream.LambdaHandler(stream.Filter(o.Filter, stream.Skip(o.Skip, h)), o.DeadLetters, o.Name, o.Logger))
}

// Start serves Lambda(h, o) under Lambda's runtime API; it never returns.
// Build the function with -tags lambda.norpc (the provided.al2023 runtime
// needs no RPC server).
func Start(h stream.Handler, o Options) {
	lambda.Start(Lambda(h, o))
}

// Raw is a lambda.Handler that hands fn the payload as it came: given a
// function of a json.RawMessage, aws-lambda-go would first decode the
// payload into one (a validating copy of up to 6 MB) before fn decodes it
// again. The answer is encoded as aws-lambda-go encodes answers (no HTML
// escaping). Lambda uses it; so can any function that decodes its own
// payload.
func Raw[T any](fn func(context.Context, json.RawMessage) (T, error)) lambda.Handler {
	return invoker[T](fn)
}

type invoker[T any] func(context.Context, json.RawMessage) (T, error)

func (f invoker[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := f(ctx, payload)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as aws-lambda-go encodes answers
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// LambdaWindows is the lambda.Handler of a consumer of tumbling windows
// (the event source mapping's TumblingWindowInSeconds): the payload is a
// DynamoDB time-window event, whose records Options.Filter and Options.Skip
// thin as Lambda does for Lambda; the answer carries the state for the
// window's next call. Options.Observe and DeadLetters are not used: a
// windowed call fails whole, and the mapping retries it with the state it
// had. A payload without a window (a mapping without TumblingWindowInSeconds)
// fails the invocation, saying so.
func LambdaWindows(h stream.WindowHandler, o Options) lambda.Handler {
	skip := o.Skip
	if skip == nil {
		skip = stream.SkipDerived
	}
	return Raw(func(ctx context.Context, payload json.RawMessage) (events.DynamoDBTimeWindowEventResponse, error) {
		var ev events.DynamoDBTimeWindowEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return events.DynamoDBTimeWindowEventResponse{}, fmt.Errorf("consumer: not a DynamoDB time-window event: %w", err)
		}
		if ev.Window.Start.IsZero() {
			return events.DynamoDBTimeWindowEventResponse{}, errors.New("consumer: the event has no window: is TumblingWindowInSeconds set on the event source mapping?")
		}
		kept := ev.Records[:0:0]
		for _, r := range ev.Records {
			if o.Filter.Match(r) && !skip(r) {
				kept = append(kept, r)
			}
		}
		ev.Records = kept
		return h(ctx, ev)
	})
}
