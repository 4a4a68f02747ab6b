package app

import (
	"os"
	"strconv"
	"time"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/emf"
)

// Namespace is the CloudWatch namespace of the programs' metrics.
const Namespace = "dynastream"

// EMF is a program's metrics logger (CloudWatch Embedded Metric Format):
// one JSON line per flush on stdout (in Lambda, stdout goes to the
// function's log group, where CloudWatch reads the metrics out of it;
// locally `make run` shows the lines).
func EMF(service string) *emf.Logger {
	return &emf.Logger{Namespace: Namespace, Service: service, W: os.Stdout}
}

// ConsumerMetrics is a consumer's metrics hook: one EMF line per handler
// call (consumer.EMF: Records, FailedRecords, Errors, DurationMs, IteratorAge, and
// ColdStart on a function's first invocation) and DeadLettered per dead
// letter, in this project's namespace.
func ConsumerMetrics(name string) *consumer.EMF {
	return &consumer.EMF{Namespace: Namespace, Service: name, W: os.Stdout, Function: lambdaFunction()}
}

// lambdaFunction is the function's name under Lambda, "" elsewhere (no
// ColdStart metric).
func lambdaFunction() string {
	if !InLambda() {
		return ""
	}
	return Getenv("AWS_LAMBDA_FUNCTION_NAME", "unknown")
}

// RequestMetrics flushes Requests and LatencyMs per request, by route and
// status (the writer's api.Server.Observe).
func RequestMetrics(m *emf.Logger) func(route string, status int, d time.Duration) {
	function := lambdaFunction()
	return func(route string, status int, d time.Duration) {
		if function != "" {
			_ = m.ColdStart(function)
		}
		_ = m.Flush(m.NewSet("route", route, "status", strconv.Itoa(status)).
			Add("Requests", emf.Count, 1).Add("LatencyMs", emf.Milliseconds, float64(d.Microseconds())/1000))
	}
}
