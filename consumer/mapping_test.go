package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/emf"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// A Runner's counters come out under the event source mapping's metric
// names ("Event source mapping metrics",
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html):
// four records polled, one filtered out, one given up on and delivered to
// the on-failure destination (the dead-letter sink), so not dropped
// ("Dropped events also excludes events that you send to an on-failure
// destination"); then an empty poll, which Lambda emits as
// PolledEventCount 0.
func TestMappingMetrics(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	for _, pk := range []string{"A", "SKIPME", "POISON", "B"} {
		if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: pk}, "SK": &ddbtypes.AttributeValueMemberS{Value: "X"}}}); err != nil {
			t.Fatal(err)
		}
	}
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if r.Change.Keys["PK"].String() == "POISON" {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	r := &stream.Runner{Config: stream.Config{StreamARN: tbl.StreamARN, Consumer: "orders", MaxRetries: stream.Retries(0),
		PollInterval: 20 * time.Millisecond, RetryBackoff: time.Millisecond, Skip: stream.SkipNone,
		Filter: filter.MustCriteria(`{"dynamodb":{"Keys":{"PK":{"S":[{"anything-but":["SKIPME"]}]}}}}`)},
		API: tbl.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: &stream.MemoryDeadLetters{}}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx, h) }()
	for deadline := time.Now().Add(30 * time.Second); r.Stats().DeadLettered == 0 || r.Stats().RecordsHandled < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", r.Stats())
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m := &consumer.Mapping{EMF: &consumer.EMF{Namespace: "shop", W: &out}, Consumer: "orders", Runner: r}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(); err != nil { // nothing moved: no line
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || emf.Validate([]byte(lines[0])) != nil {
		t.Fatalf("EMF lines:\n%s", out.String())
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	for name, want := range map[string]float64{
		consumer.MetricPolled: 4, consumer.MetricFilteredOut: 1, consumer.MetricDropped: 0, consumer.MetricOnFailureDelivered: 1,
		consumer.MetricDestinationDeliveryFailures: 0,
		consumer.MetricInvoked:                     float64(st.InvokedEvents), consumer.MetricFailedInvoke: float64(st.FailedInvokeEvents),
	} {
		if doc[name] != want {
			t.Errorf("%s = %v, want %v (line %s)", name, doc[name], want, lines[0])
		}
	}
	if st.InvokedEvents < 3 || st.FailedInvokeEvents < 1 {
		t.Errorf("stats %+v", st)
	}

	// the runner again, on the same checkpoints: it polls and finds nothing
	rctx, stop = context.WithCancel(ctx)
	go func() { done <- r.Run(rctx, h) }()
	for deadline := time.Now().Add(30 * time.Second); r.Stats().Polls == st.Polls; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no poll")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	doc = nil
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc[consumer.MetricPolled] != 0.0 {
		t.Errorf("after an empty poll: %s (%v), want PolledEventCount 0", out.String(), err)
	}
}

// Under a Runner, Instrument's IteratorAge (the EMF lines' IteratorAge) is
// the Runner's own, from the creation times it knows best: on DynamoDB
// Local, which rounds a record's ApproximateCreationDateTime down to the
// minute, a consumer that keeps up reads within a poll of its records,
// not up to 60 s behind (Lambda's IteratorAge, "the age of the last
// record in the event",
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
func TestInstrumentTakesTheRunnersIteratorAge(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	var mu sync.Mutex
	var calls []consumer.Call
	var batches []stream.BatchStats
	h := consumer.Instrument(func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}, "ages", func(c consumer.Call) { mu.Lock(); calls = append(calls, c); mu.Unlock() })
	r := &stream.Runner{Config: stream.Config{StreamARN: tbl.StreamARN, Consumer: "ages", PollInterval: 20 * time.Millisecond, Skip: stream.SkipNone},
		API: tbl.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: &stream.MemoryDeadLetters{}}
	r.OnBatch = func(b stream.BatchStats) { mu.Lock(); batches = append(batches, b); mu.Unlock() }
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx, h) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); r.Stats().Polls < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no poll")
		}
	}
	if s := time.Now().Second(); s < 3 { // the rounding would hide little: wait for it to matter
		time.Sleep(time.Duration(3-s) * time.Second)
	}
	for i := range 3 {
		if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint("P", i)}, "SK": &ddbtypes.AttributeValueMemberS{Value: "X"}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := min(len(calls), len(batches))
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, c := range calls {
		// a poll is 20 ms here; a second leaves room for a slow machine,
		// and the rounded creation times alone would say 3 s or more
		if c.IteratorAge != batches[i].IteratorAge || c.IteratorAge < 0 || c.IteratorAge > time.Second {
			t.Errorf("call %d: Instrument's iterator age %s, the Runner's %s; want the Runner's, within a second", i, c.IteratorAge, batches[i].IteratorAge)
		}
	}
}
