package consumer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/stream"
)

// A consumer's Lambda handler, invoked with a payload as Lambda sends it:
// the loop guard (Options.Skip, stream.SkipDerived by default) drops the
// record of the consumer's own derived write before the handler, and the
// answer is the partial batch response (nothing failed: no items).
func ExampleLambda() {
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			fmt.Println("handled", r.EventID, r.Change.Keys["PK"].String())
		}
		return events.DynamoDBEventResponse{}, nil
	}
	fn := consumer.Lambda(h, consumer.Options{Name: "orders"})
	payload := `{"Records":[
{"eventID":"e1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"ORDER#1"}},"NewImage":{"PK":{"S":"ORDER#1"}},"SequenceNumber":"100","StreamViewType":"NEW_AND_OLD_IMAGES"}},
{"eventID":"e2","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"TOTAL#1"}},"NewImage":{"PK":{"S":"TOTAL#1"},"derived":{"BOOL":true}},"SequenceNumber":"200","StreamViewType":"NEW_AND_OLD_IMAGES"}}
]}`
	out, err := fn.Invoke(context.Background(), []byte(payload))
	fmt.Println(string(out), err)
	// Output:
	// handled e1 ORDER#1
	// {"batchItemFailures":null} <nil>
}

// A function's main: Start serves the handler under Lambda's runtime API
// (build with -tags lambda.norpc for provided.al2023). Dead letters and
// metrics are optional; with neither, a record the handler fails is
// retried by the event source mapping and then sent to its on-failure
// destination.
func ExampleStart() {
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" { // under Lambda only
		consumer.Start(h, consumer.Options{Name: "orders", Skip: stream.SkipDerived})
	}
}

// The admin endpoints of a Runner (the local or container way to run a
// consumer): health for a load balancer or supervisor, status, and pause
// and resume for this machine's operator only. Serve it on a loopback
// address.
func ExampleAdmin() {
	r := &stream.Runner{Config: stream.Config{Consumer: "orders"}}
	adm := consumer.Admin(r, consumer.AdminOptions{})

	rec := httptest.NewRecorder()
	adm.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))

	// Pause from another machine: refused.
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/pause", nil)
	req.RemoteAddr = "203.0.113.7:4242"
	adm.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	// Output:
	// 200 {"status":"idle"}
	// 403
}
