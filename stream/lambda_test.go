package stream_test

import (
	"context"
	"encoding/json"
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
		if _, err := stream.LambdaHandler(h, dl, "projector", nil)(context.Background(), json.RawMessage(p)); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}
