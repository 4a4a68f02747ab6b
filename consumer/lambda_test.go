package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/emf"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// payload is what Lambda hands a stream consumer: one good record, one
// whose attribute value no decoder can read ({}), one of the consumer's
// own derived writes, one the handler fails.
const payload = `{"Records":[
{"eventID":"e1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":1795241100,"Keys":{"PK":{"S":"A"}},"NewImage":{"PK":{"S":"A"},"n":{"N":"1"}},"SequenceNumber":"100","SizeBytes":10,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026"},
{"eventID":"e2","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"B"}},"NewImage":{"PK":{"S":"B"},"bad":{}},"SequenceNumber":"200","SizeBytes":10,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026"},
{"eventID":"e3","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"C"}},"NewImage":{"PK":{"S":"C"},"derived":{"BOOL":true}},"SequenceNumber":"300","SizeBytes":10,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026"},
{"eventID":"e4","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"D"}},"NewImage":{"PK":{"S":"D"}},"SequenceNumber":"400","SizeBytes":10,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026"}
]}`

func TestLambda(t *testing.T) {
	var got []string
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			got = append(got, r.EventID)
			if r.EventID == "e4" {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	dl := &stream.MemoryDeadLetters{}
	var lines bytes.Buffer
	m := &consumer.EMF{Namespace: "shop", W: &lines, Function: "orders-fn"}
	fn := consumer.Lambda(h, consumer.Options{Name: "orders", DeadLetters: m.CountDeadLetters(dl, "orders"), Observe: m.Observe})
	out, err := fn.Invoke(context.Background(), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"batchItemFailures":[{"itemIdentifier":"400"}]}` {
		t.Errorf("answer %s", out)
	}
	if strings.Join(got, ",") != "e1,e4" {
		t.Errorf("the handler got %v (the derived and the undecodable records must not reach it)", got)
	}
	if all := dl.All(); len(all) != 1 || all[0].FirstSequenceNumber != "200" || len(all[0].Unconverted) != 1 {
		t.Errorf("dead letters %+v", all)
	}
	text := lines.String()
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if err := emf.Validate([]byte(l)); err != nil {
			t.Errorf("not EMF: %v: %s", err, l)
		}
	}
	for _, want := range []string{`"ColdStart":1`, `"function_name":"orders-fn"`, `"DeadLettered":1`, `"Records":2`, `"FailedRecords":1`, `"consumer":"orders"`, `"IteratorAge":`, `"Namespace":"shop"`} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
	// the process's resident memory, in bytes (Linux: /proc/self/statm)
	if runtime.GOOS == "linux" && !regexp.MustCompile(`"MemoryBytes":[1-9][0-9]{5,}`).MatchString(text) {
		t.Errorf("metrics lack the resident memory:\n%s", text)
	}

	// a payload that is no stream event fails the invocation
	if _, err := fn.Invoke(context.Background(), []byte(`[1,2]`)); err == nil {
		t.Error("a payload that is no event was accepted")
	}
}

// Options.Filter drops what the mapping's filter would have, before the
// handler and before the loop guard: here only items whose PK is not D.
func TestLambdaFilter(t *testing.T) {
	var got []string
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			got = append(got, r.EventID)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	notD := filter.MustCriteria(`{"dynamodb":{"Keys":{"PK":{"S":[{"anything-but":["D"]}]}}}}`)
	fn := consumer.Lambda(h, consumer.Options{Name: "orders", DeadLetters: &stream.MemoryDeadLetters{}, Filter: notD, Skip: stream.SkipNone})
	out, err := fn.Invoke(context.Background(), []byte(payload))
	if err != nil || string(out) != `{"batchItemFailures":null}` {
		t.Fatalf("answer %s, %v", out, err)
	}
	if strings.Join(got, ",") != "e1,e3" {
		t.Errorf("the handler got %v, want e1,e3 (e2 does not decode, e4 is filtered out)", got)
	}
}

// LambdaWindows hands a windowed function its window, state and records
// (filtered), and answers with the state; an event without a window fails.
func TestLambdaWindows(t *testing.T) {
	var got events.DynamoDBTimeWindowEvent
	h := func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		got = ev
		return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"n": fmt.Sprint(len(ev.Records))}}}, nil
	}
	notD := filter.MustCriteria(`{"dynamodb":{"Keys":{"PK":{"S":[{"anything-but":["D"]}]}}}}`)
	fn := consumer.LambdaWindows(h, consumer.Options{Filter: notD, Skip: stream.SkipNone})
	payload := `{"Records":[` +
		`{"eventID":"e1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"A"}},"SequenceNumber":"100"}},` +
		`{"eventID":"e4","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"D"}},"SequenceNumber":"400"}}],` +
		`"window":{"start":"2026-11-27T10:00:00Z","end":"2026-11-27T10:01:00Z"},"state":{"n":"3"},"shardId":"s-1","eventSourceARN":"arn","isFinalInvokeForWindow":false,"isWindowTerminatedEarly":false}`
	out, err := fn.Invoke(context.Background(), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"state":{"n":"1"},"batchItemFailures":null}` {
		t.Errorf("answer %s", out)
	}
	if len(got.Records) != 1 || got.State["n"] != "3" || got.ShardID != "s-1" || got.Window.Start.UTC().Hour() != 10 {
		t.Errorf("the handler got %+v", got)
	}
	if _, err := fn.Invoke(context.Background(), []byte(`{"Records":[]}`)); err == nil || !strings.Contains(err.Error(), "TumblingWindowInSeconds") {
		t.Errorf("no window: %v", err)
	}
}
