package onfailure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dynastream/dynastream/consumer/onfailure"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/ddblocal/moto"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) {
	if _, err := ddblocal.Setup(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "ddblocal: cannot start DynamoDB Local:", err)
		os.Exit(1)
	}
	code := m.Run()
	motoServer.s.Stop()
	ddblocal.Teardown()
	os.Exit(code)
}

// motoServer is one moto_server for the package's tests (each makes
// queues, topics and buckets of its own names).
var motoServer struct {
	once sync.Once
	s    *moto.Server
	err  error
	n    atomic.Int32
}

// unique is a name no other test of the run uses.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, motoServer.n.Add(1)) }

// localMoto is moto_server, started on first use, as AWS configuration
// (its SQS, SNS and S3 are real APIs); the test is skipped, saying so,
// where moto_server is not installed.
func localMoto(t *testing.T) aws.Config {
	t.Helper()
	motoServer.once.Do(func() { motoServer.s, motoServer.err = moto.Start(context.Background()) })
	if errors.Is(motoServer.err, moto.ErrNotInstalled) {
		t.Skip("NOTE: the on-failure destination test did not run: " + motoServer.err.Error())
	}
	if motoServer.err != nil {
		t.Fatal(motoServer.err)
	}
	return motoServer.s.Config()
}

// localSQS is moto_server's SQS and a new queue's URL.
func localSQS(t *testing.T) (*sqs.Client, string) {
	t.Helper()
	return newQueue(t, sqs.NewFromConfig(localMoto(t)), unique("on-failure"))
}

func newQueue(t *testing.T, c *sqs.Client, name string) (*sqs.Client, string) {
	t.Helper()
	q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return c, aws.ToString(q.QueueUrl)
}

// A Runner gives up on a poison record and sends the mapping's on-failure
// record to a real SQS queue; Redrive reads it, reads the record back from
// the stream, hands it to the (fixed) handler and deletes the message. A
// message naming records the stream does not have is reported lost and
// kept, and one that is no failure record is kept as unreadable.
// peekRecord reads the queue's one message as a failure record and leaves
// it there, visible again.
func peekRecord(t *testing.T, q *sqs.Client, queueURL string) stream.FailureRecord {
	t.Helper()
	ctx := context.Background()
	peek, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), VisibilityTimeout: 0})
	if err != nil || len(peek.Messages) != 1 {
		t.Fatalf("queue: %v, %v", peek, err)
	}
	if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queueURL),
		ReceiptHandle: peek.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	var fr stream.FailureRecord
	if err := json.Unmarshal([]byte(aws.ToString(peek.Messages[0].Body)), &fr); err != nil {
		t.Fatal(err)
	}
	return fr
}

// What the runner gives up on reaches the queue as the mapping's failure
// record (shard, sequence range, condition RetryAttemptsExhausted), as
// https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html
// shows it; redrive reads the records back from the stream. (How a record
// is redriven is the project's: AWS documents the record, not a redrive.)
func TestOnFailureQueueAndRedrive(t *testing.T) {
	t.Parallel()
	q, queueURL := localSQS(t)
	ctx := context.Background()
	p := newPoisonTable(t)
	tbl, h := p.tbl, p.handle
	dest := &onfailure.SQS{Client: q, QueueURL: queueURL, FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:orders", Undecodable: &stream.MemoryDeadLetters{}}
	p.run(t, p.runner(dest))

	// The message is the mapping's: the shard, the range, the condition.
	fr := peekRecord(t, q, queueURL)
	b := fr.BatchInfo
	if fr.RequestContext.Condition != stream.RetryAttemptsExhausted || b.BatchSize != 1 || b.StartSequenceNumber != b.EndSequenceNumber ||
		b.StreamARN != tbl.StreamARN || b.ShardID == "" || fr.Version != "1.0" || fr.RequestContext.FunctionARN != dest.FunctionARN {
		t.Fatalf("failure record %+v", fr)
	}
	for _, body := range []string{
		fmt.Sprintf(`{"version":"1.0","requestContext":{"functionArn":"orders"},"DDBStreamBatchInfo":{"shardId":"shardId-gone","startSequenceNumber":"000000000000000000001","endSequenceNumber":"000000000000000000002","batchSize":2,"streamArn":%q}}`, tbl.StreamARN),
		`{"hello":"world"}`,
	} {
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(
		`{"requestContext":{"functionArn":"arn:aws:lambda:us-east-1:123456789012:function:shop-invoices"},"DDBStreamBatchInfo":{"shardId":"s","startSequenceNumber":"000000000000000000001","endSequenceNumber":"000000000000000000001","batchSize":1,"streamArn":"x"}}`)}); err != nil {
		t.Fatal(err)
	}
	opts := onfailure.Options{Queue: q, QueueURL: queueURL, Streams: tbl.Streams, Handler: h,
		Function: onfailure.FunctionNamed("orders"), Visibility: 1}
	// the record still fails: its message is kept
	rep, err := onfailure.Redrive(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven != 0 || len(rep.Failed) != 1 || len(rep.Lost) != 1 || len(rep.Unreadable) != 1 || rep.Others != 1 {
		t.Fatalf("report while the record still fails: %+v", rep)
	}
	time.Sleep(1100 * time.Millisecond) // the kept messages' visibility
	p.fix()
	rep, err = onfailure.Redrive(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven != 1 || rep.Records != 1 || len(rep.Lost) != 1 || len(rep.Unreadable) != 1 || len(rep.Failed) != 0 || rep.Others != 1 {
		t.Fatalf("report %+v", rep)
	}
	if !errors.Is(rep.Lost[0].Err, stream.ErrTrimmed) || !strings.Contains(rep.Lost[0].Err.Error(), "shardId-gone") {
		t.Errorf("lost: %v", rep.Lost[0].Err)
	}
	if p.took() != "POISON" {
		t.Errorf("redrive handed over %v, want the poison record", p.took())
	}
	// the redriven message is gone; the two kept come back after their
	// visibility timeout
	time.Sleep(1100 * time.Millisecond)
	left, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10})
	if err != nil || len(left.Messages) != 3 {
		t.Fatalf("left in the queue: %d, %v", len(left.Messages), err)
	}
}

func TestFunctionNamed(t *testing.T) {
	is := onfailure.FunctionNamed("projector")
	for arn, want := range map[string]bool{
		"arn:aws:lambda:us-east-1:123456789012:function:dynastream-dev-projector":         true,
		"arn:aws:lambda:us-east-1:123456789012:function:dynastream-dev-projector:$LATEST": true,
		"projector": true,
		"arn:aws:lambda:us-east-1:123456789012:function:dynastream-dev-notifier": false,
		"arn:aws:lambda:us-east-1:123456789012:function:projectors":              false,
		"": false,
	} {
		if is(arn) != want {
			t.Errorf("%q: %v", arn, !want)
		}
	}
}
