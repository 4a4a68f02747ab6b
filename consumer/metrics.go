package consumer

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/emf"
	"github.com/dynastream/dynastream/stream"
)

// Call is one handler call, for a metrics hook.
type Call struct {
	Consumer string
	// Records is how many records the handler got, Failed how many it
	// reported failed (all of them when the call failed).
	Records, Failed int
	// Err is the call's error, if it failed as a whole.
	Err      error
	Duration time.Duration
	// IteratorAge is Lambda's IteratorAge for the call: the age of the
	// batch's newest record (the last one) when the handler got the batch,
	// from its ApproximateCreationDateTime — how far behind the stream's
	// head the consumer reads. It does not include the handler's time.
	// DynamoDB rounds the record's time down to the second, so in Lambda
	// it reads up to that much high; 0 when the records carry no time.
	// Under a stream.Runner it is the Runner's own (stream.IteratorAgeOf),
	// from the creation times it knows best: DynamoDB Local rounds a
	// record's time down to the minute, which alone would read up to 60 s.
	IteratorAge time.Duration
}

// Instrument wraps h so that every call is reported to observe, with the
// same numbers on Lambda and on a stream.Runner.
func Instrument(h stream.Handler, consumer string, observe func(Call)) stream.Handler {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		start := time.Now()
		resp, err := h(ctx, ev)
		c := Call{Consumer: consumer, Records: len(ev.Records), Failed: len(resp.BatchItemFailures), Err: err, Duration: time.Since(start)}
		if err != nil {
			c.Failed = len(ev.Records)
		}
		if age, ok := stream.IteratorAgeOf(ctx); ok {
			c.IteratorAge = age
		} else {
			c.IteratorAge = IteratorAge(ev, start)
		}
		observe(c)
		return resp, err
	}
}

// IteratorAge is what Lambda's IteratorAge metric says of a batch handed
// over at at (stream.IteratorAge), by the records'
// ApproximateCreationDateTime: 0 when no record carries a time.
func IteratorAge(ev events.DynamoDBEvent, at time.Time) time.Duration {
	return stream.IteratorAge(ev.Records, at, stream.ApproximateCreation)
}

// EMF writes each call as one CloudWatch Embedded Metric Format line in
// Namespace, with the dimensions service and consumer: Records,
// FailedRecords, Errors, DurationMs and IteratorAge (milliseconds,
// Lambda's meaning: Call.IteratorAge), and MemoryBytes (the process's
// resident memory, read at most every 10 s: a warm container that keeps
// growing shows it); and ColdStart (dimensions
// service and function_name) on a function's first call. In Lambda, stdout
// goes to the function's log group, where CloudWatch reads the metrics
// out: no PutMetricData call, nothing that can fail the handler.
type EMF struct {
	Namespace string
	// Service is the service dimension; empty: the name of the first
	// consumer this EMF reports (give one EMF per consumer, or set it).
	Service string
	// W defaults to os.Stdout.
	W io.Writer
	// Function is the Lambda function's name, for ColdStart (default
	// $AWS_LAMBDA_FUNCTION_NAME; none outside Lambda).
	Function string

	once sync.Once
	log  *emf.Logger
}

func (e *EMF) logger(consumer string) *emf.Logger {
	e.once.Do(func() {
		w := e.W
		if w == nil {
			w = os.Stdout
		}
		service := e.Service
		if service == "" {
			service = consumer
		}
		if e.Function == "" {
			e.Function = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
		}
		e.log = &emf.Logger{Namespace: e.Namespace, Service: service, W: w}
	})
	return e.log
}

// Observe is the metrics hook (Options.Observe, Instrument).
func (e *EMF) Observe(c Call) {
	m := e.logger(c.Consumer)
	if e.Function != "" {
		_ = m.ColdStart(e.Function)
	}
	errs := 0
	if c.Err != nil {
		errs = 1
	}
	s := m.NewSet("consumer", c.Consumer).
		Add("Records", emf.Count, float64(c.Records)).
		Add("FailedRecords", emf.Count, float64(c.Failed)).
		Add("Errors", emf.Count, float64(errs)).
		Add("DurationMs", emf.Milliseconds, float64(c.Duration.Microseconds())/1000).
		Add(MetricMemoryBytes, emf.Bytes, float64(resident()))
	if c.IteratorAge > 0 {
		s.Add(MetricIteratorAge, emf.Milliseconds, float64(c.IteratorAge.Milliseconds()))
	}
	_ = m.Flush(s)
}

// CountDeadLetters wraps dl so that every dead letter written flushes
// DeadLettered (its records) through e. A nil dl stays nil (no sink).
func (e *EMF) CountDeadLetters(dl stream.DeadLetters, consumer string) stream.DeadLetters {
	if dl == nil {
		return nil
	}
	return countedDeadLetters{DeadLetters: dl, e: e, consumer: consumer}
}

type countedDeadLetters struct {
	stream.DeadLetters
	e        *EMF
	consumer string
}

func (c countedDeadLetters) Put(ctx context.Context, dl stream.DeadLetter) error {
	if err := c.DeadLetters.Put(ctx, dl); err != nil {
		return err
	}
	m := c.e.logger(c.consumer)
	n := len(dl.Event.Records) + len(dl.Unconverted)
	_ = m.Flush(m.NewSet("consumer", c.consumer).Add("DeadLettered", emf.Count, float64(max(n, 1))))
	return nil
}

// MetricMemoryBytes is the process's resident memory, in bytes, each EMF
// line carries.
const MetricMemoryBytes = "MemoryBytes"

// memoryEvery is how often resident reads the memory afresh.
const memoryEvery = 10 * time.Second

var memory struct {
	sync.Mutex
	at    time.Time
	bytes uint64
}

// resident is the process's resident set, from /proc/self/statm (what
// Lambda's Max Memory Used reports; 0 where there is none), read at most
// every memoryEvery. Not the Go heap: reading that (runtime/metrics, or
// runtime.ReadMemStats) would put a consumer's Lambda bootstrap over its
// 10 MiB budget; a leak grows both.
func resident() uint64 {
	memory.Lock()
	defer memory.Unlock()
	if now := time.Now(); memory.at.IsZero() || now.Sub(memory.at) >= memoryEvery {
		memory.at, memory.bytes = now, ResidentMemory()
	}
	return memory.bytes
}

// ResidentMemory is the process's resident set now, from
// /proc/self/statm (Linux; 0 where there is none).
func ResidentMemory() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
