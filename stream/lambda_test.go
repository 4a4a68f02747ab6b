package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

func lambdaRecord(seq, keys string) string {
	return `{"eventID":"e` + seq + `","eventName":"INSERT","eventSource":"aws:dynamodb","eventSourceARN":"arn:aws:dynamodb:eu-west-1:1:table/t/stream/x",
		"dynamodb":{"Keys":` + keys + `,"NewImage":` + keys + `,"SequenceNumber":"` + seq + `","SizeBytes":10,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`
}

// A record aws-lambda-go cannot decode ({} is no attribute value) goes to
// the dead letters with its raw JSON; the others reach the handler; the
// invocation succeeds.
func TestLambdaHandlerIsolatesUndecodableRecords(t *testing.T) {
	payload := `{"Records":[` + lambdaRecord("100", `{"PK":{"S":"a"}}`) + `,` + lambdaRecord("200", `{"PK":{}}`) + `,` + lambdaRecord("300", `{"PK":{"S":"b"}}`) + `]}`
	var got []string
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			got = append(got, r.Change.SequenceNumber)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	dl := &stream.MemoryDeadLetters{}
	resp, err := stream.LambdaHandler(h, dl, "projector", nil)(context.Background(), json.RawMessage(payload))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if strings.Join(got, ",") != "100,300" {
		t.Errorf("handler got %v", got)
	}
	all := dl.All()
	if len(all) != 1 || all[0].FirstSequenceNumber != "200" || len(all[0].Unconverted) != 1 || !strings.Contains(all[0].Error, "e200") ||
		all[0].Consumer != "projector" || !strings.Contains(all[0].StreamARN, "table/t/stream") || !json.Valid(all[0].Unconverted[0]) {
		t.Errorf("dead letters %+v", all)
	}

	// Without a sink, the record is reported failed (Lambda retries it, then
	// sends it to the on-failure destination).
	resp, err = stream.LambdaHandler(h, nil, "projector", nil)(context.Background(), json.RawMessage(payload))
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "200" {
		t.Errorf("without a sink: %+v %v", resp, err)
	}

	// Not a stream event, or nothing to report a bad record by: the
	// invocation fails.
	for _, p := range []string{`[]`, `{"Records":[{"dynamodb":{"Keys":{"PK":{}}}}]}`} {
		if _, err := stream.LambdaHandler(h, dl, "projector", nil)(context.Background(), json.RawMessage(p)); !errors.Is(err, stream.ErrNotStreamEvent) {
			t.Errorf("%s: %v, want ErrNotStreamEvent", p, err)
		}
	}
}

// A payload of another event source (or of none) fails the invocation
// with an error that says so, and the handler is not called: {} and
// {"hello":"world"} decode to an empty batch, which Lambda never sends; an
// SQS event's records decode as DynamoDB records with nothing in them.
func TestLambdaHandlerRefusesOtherEvents(t *testing.T) {
	called := false
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		called = true
		return events.DynamoDBEventResponse{}, nil
	}
	sqs := `{"Records":[{"messageId":"059f36b4-87a3-44ab-83d2-661975830a7d","receiptHandle":"AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",` +
		`"body":"test","attributes":{"ApproximateReceiveCount":"1"},"messageAttributes":{},"md5OfBody":"098f6bcd4621d373cade4e832627b4f6",` +
		`"eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-2:123456789012:my-queue","awsRegion":"us-east-2"}]}`
	kinesis := `{"Records":[{"kinesis":{"partitionKey":"1","data":"SGVsbG8=","sequenceNumber":"4959"},"eventSource":"aws:kinesis","eventID":"shardId-000000000006:4959"}]}`
	for name, p := range map[string]string{"{}": `{}`, "hello": `{"hello":"world"}`, "null": `null`, "empty batch": `{"Records":[]}`,
		"SQS": sqs, "Kinesis": kinesis, "no sequence number": `{"Records":[{"eventID":"x","eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"a"}}}}]}`} {
		_, err := stream.LambdaHandler(h, nil, "c", nil)(context.Background(), json.RawMessage(p))
		if !errors.Is(err, stream.ErrNotStreamEvent) {
			t.Errorf("%s: %v, want ErrNotStreamEvent", name, err)
		}
		if err != nil && name == "SQS" && !strings.Contains(err.Error(), `"aws:sqs"`) {
			t.Errorf("SQS: %v does not name the event source", err)
		}
	}
	if called {
		t.Error("the handler was called with a payload that is no stream event")
	}
	// A record without eventSource (made by hand in a test) passes.
	if _, err := stream.LambdaHandler(h, nil, "c", nil)(context.Background(), json.RawMessage(`{"Records":[{"eventID":"e1","eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"a"}},"SequenceNumber":"1"}}]}`)); err != nil || !called {
		t.Errorf("a record without eventSource: %v (called %v)", err, called)
	}
}
