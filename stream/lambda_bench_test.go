package stream_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// lambdaBatch is a 10,000-record invocation payload: the INSERT fixture
// (every attribute type) again and again.
func lambdaBatch(b *testing.B) []byte {
	b.Helper()
	raw, err := os.ReadFile("testdata/lambda/insert.json")
	if err != nil {
		b.Fatal(err)
	}
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatal(err)
	}
	recs := make([]string, 10_000)
	for i := range recs {
		recs[i] = string(ev.Records[0])
	}
	return []byte(`{"Records":[` + strings.Join(recs, ",") + `]}`)
}

// BenchmarkLambdaDecode: what aws-lambda-go does for a handler of
// events.DynamoDBEvent; the same event decoded by DecodeLambdaEvent (one
// pass over jsontext's tokens); and what a consumer's Lambda invocation does
// (stream.LambdaHandler with a handler that does nothing).
func BenchmarkLambdaDecode(b *testing.B) {
	payload := lambdaBatch(b)
	b.Run("aws-lambda-go", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			var ev events.DynamoDBEvent
			if err := json.Unmarshal(payload, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeLambdaEvent", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			ev, bad, err := stream.DecodeLambdaEvent(payload)
			if err != nil || len(bad) > 0 || len(ev.Records) != 10_000 {
				b.Fatal(err, bad)
			}
		}
	})
	h := stream.LambdaHandler(func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}, nil, "bench", nil)
	b.Run("LambdaHandler", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			// The payload as the programs' lambda.Handler (app.StartLambda)
			// gets it from aws-lambda-go: not decoded.
			if _, err := h(context.Background(), payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}
