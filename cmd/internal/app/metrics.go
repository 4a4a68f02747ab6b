package app

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/metrics"
	"github.com/dynastream/dynastream/stream"
)

// Namespace is the CloudWatch namespace of the programs' metrics.
const Namespace = "dynastream"

// EMF is a program's metrics logger (CloudWatch Embedded Metric Format):
// one JSON line per flush on stdout (in Lambda, stdout goes to the
// function's log group, where CloudWatch reads the metrics out of it;
// locally `make run` shows the lines).
func EMF(service string) *metrics.Logger {
	return &metrics.Logger{Namespace: Namespace, Service: service, W: os.Stdout}
}

// instrument flushes one set of metrics per handler call: Records (those
// handed to the handler; one that does not decode is counted in
// DeadLettered instead), FailedRecords (reported in batchItemFailures, or
// all of them when the call failed), Errors, DurationMs, and LagMs (from the oldest record's
// approximate creation time to the answer: what Lambda's IteratorAge
// measures, at the record's one-second precision), and ColdStart on a
// function's first invocation.
func instrument(h stream.Handler, m *metrics.Logger, consumer string) stream.Handler {
	function := lambdaFunction()
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if function != "" {
			_ = m.ColdStart(function)
		}
		start := time.Now()
		resp, err := h(ctx, ev)
		end := time.Now()
		failed, errs := len(resp.BatchItemFailures), 0
		if err != nil {
			failed, errs = len(ev.Records), 1
		}
		s := m.NewSet("consumer", consumer).
			Add("Records", metrics.Count, float64(len(ev.Records))).
			Add("FailedRecords", metrics.Count, float64(failed)).
			Add("Errors", metrics.Count, float64(errs)).
			Add("DurationMs", metrics.Milliseconds, float64(end.Sub(start).Microseconds())/1000)
		var oldest time.Time
		for _, r := range ev.Records {
			if t := r.Change.ApproximateCreationDateTime.Time; !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
				oldest = t
			}
		}
		if !oldest.IsZero() {
			s.Add("LagMs", metrics.Milliseconds, float64(max(end.Sub(oldest), 0).Milliseconds()))
		}
		_ = m.Flush(s)
		return resp, err
	}
}

// lambdaFunction is the function's name under Lambda, "" elsewhere (no
// ColdStart metric).
func lambdaFunction() string {
	if !InLambda() {
		return ""
	}
	return Getenv("AWS_LAMBDA_FUNCTION_NAME", "unknown")
}

// countedDeadLetters flushes DeadLettered (records) for each dead letter
// written.
type countedDeadLetters struct {
	stream.DeadLetters
	m        *metrics.Logger
	consumer string
}

func (c countedDeadLetters) Put(ctx context.Context, dl stream.DeadLetter) error {
	if err := c.DeadLetters.Put(ctx, dl); err != nil {
		return err
	}
	n := len(dl.Event.Records) + len(dl.Unconverted)
	_ = c.m.Flush(c.m.NewSet("consumer", c.consumer).Add("DeadLettered", metrics.Count, float64(max(n, 1))))
	return nil
}

// RequestMetrics flushes Requests and LatencyMs per request, by route and
// status (the writer's api.Server.Observe).
func RequestMetrics(m *metrics.Logger) func(route string, status int, d time.Duration) {
	function := lambdaFunction()
	return func(route string, status int, d time.Duration) {
		if function != "" {
			_ = m.ColdStart(function)
		}
		_ = m.Flush(m.NewSet("route", route, "status", strconv.Itoa(status)).
			Add("Requests", metrics.Count, 1).Add("LatencyMs", metrics.Milliseconds, float64(d.Microseconds())/1000))
	}
}
