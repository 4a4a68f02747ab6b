package onfailure_test

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dynastream/dynastream/consumer/onfailure"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
)

// poisonTable is a table with items A, POISON and B, and a handler that
// fails POISON until fix is called; handled lists what it took.
type poisonTable struct {
	tbl     *ddblocal.Table
	mu      sync.Mutex
	fixed   bool
	handled []string
}

func newPoisonTable(t *testing.T) *poisonTable {
	p := &poisonTable{tbl: ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))}
	for _, pk := range []string{"A", "POISON", "B"} {
		if _, err := p.tbl.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(p.tbl.Name), Item: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: pk}, "SK": &ddbtypes.AttributeValueMemberS{Value: "X"}}}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *poisonTable) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range ev.Records {
		pk := r.Change.Keys["PK"].String()
		if pk == "POISON" && !p.fixed {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
		}
		p.handled = append(p.handled, pk)
	}
	return events.DynamoDBEventResponse{}, nil
}

func (p *poisonTable) fix() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fixed, p.handled = true, nil
}

func (p *poisonTable) took() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.handled, ",")
}

func (p *poisonTable) runner(dest stream.DeadLetters) *stream.Runner {
	return &stream.Runner{Config: stream.Config{StreamARN: p.tbl.StreamARN, Consumer: "orders", MaxRetries: stream.Retries(0),
		PollInterval: 20 * time.Millisecond, RetryBackoff: time.Millisecond, Skip: stream.SkipNone},
		API: p.tbl.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: dest}
}

// run runs the runner until it has dead-lettered something.
func (p *poisonTable) run(t *testing.T, r *stream.Runner) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, p.handle) }()
	for deadline := time.Now().Add(30 * time.Second); r.Stats().DeadLettered == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing dead-lettered: %+v", r.Stats())
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

var objectKeyRE = regexp.MustCompile(`^aws/lambda/orders-mapping/shardId-[^/]+/\d{4}/\d{2}/\d{2}/\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}-[0-9a-f-]{36}$`)

// An S3 on-failure destination gets the whole invocation record, the
// records with the failure record, as Lambda sends one to S3 ("For Amazon
// S3 destinations, Lambda also sends the entire invocation record along
// with the metadata": https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html),
// under aws/lambda/<mapping>/<shard>/YYYY/MM/DD/…; RedriveS3 hands the
// records to the handler from the object alone, so it works after the
// stream is gone (here the table is deleted first), and deletes the object.
func TestS3DestinationRedrivesWithoutTheStream(t *testing.T) {
	cfg := localMoto(t)
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("on-failure")}); err != nil {
		t.Fatal(err)
	}
	p := newPoisonTable(t)
	dest := &onfailure.S3{Client: client, Bucket: "on-failure", MappingID: "orders-mapping",
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:orders"}
	p.run(t, p.runner(dest))

	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("on-failure")})
	if err != nil || len(list.Contents) != 1 {
		t.Fatalf("objects: %v, %v", list, err)
	}
	key := aws.ToString(list.Contents[0].Key)
	if !objectKeyRE.MatchString(key) {
		t.Errorf("object key %q", key)
	}
	obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("on-failure"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	rec, err := onfailure.ReadS3Record(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Payload.Records) != 1 || rec.Payload.Records[0].Change.Keys["PK"].String() != "POISON" || rec.BatchInfo.BatchSize != 1 ||
		rec.RequestContext.Condition != stream.RetryAttemptsExhausted || !strings.HasSuffix(key, rec.RequestContext.RequestID) {
		t.Fatalf("object %s", body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw["payload"] == nil || raw["DDBStreamBatchInfo"] == nil || raw["requestContext"] == nil {
		t.Fatalf("object's fields: %s", body)
	}

	// the stream is gone: only the object holds the record now
	if _, err := p.tbl.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(p.tbl.Name)}); err != nil {
		t.Fatal(err)
	}
	p.fix()
	rep, err := onfailure.RedriveS3(ctx, onfailure.S3Options{Client: client, Bucket: "on-failure", Handler: p.handle,
		Function: onfailure.FunctionNamed("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven != 1 || rep.Records != 1 || len(rep.Failed)+len(rep.Unreadable) != 0 || p.took() != "POISON" {
		t.Fatalf("report %+v, handed %q", rep, p.took())
	}
	if left, _ := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("on-failure")}); len(left.Contents) != 0 {
		t.Errorf("%d objects left", len(left.Contents))
	}
}

// An SNS on-failure destination publishes what SQS gets; Redrive reads it
// from a queue subscribed to the topic (the notification's envelope).
func TestSNSDestinationRedrivesFromASubscribedQueue(t *testing.T) {
	cfg := localMoto(t)
	ctx := context.Background()
	topics := sns.NewFromConfig(cfg)
	topic, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("on-failure")})
	if err != nil {
		t.Fatal(err)
	}
	q, queueURL := newQueue(t, sqs.NewFromConfig(cfg), "on-failure-sub")
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(attrs.Attributes["QueueArn"])}); err != nil {
		t.Fatal(err)
	}
	p := newPoisonTable(t)
	p.run(t, p.runner(&onfailure.SNS{Client: topics, TopicARN: aws.ToString(topic.TopicArn), FunctionARN: "orders"}))
	p.fix()
	rep, err := onfailure.Redrive(ctx, onfailure.Options{Queue: q, QueueURL: queueURL, Streams: p.tbl.Streams, Handler: p.handle, Visibility: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven != 1 || rep.Records != 1 || p.took() != "POISON" {
		t.Fatalf("report %+v, handed %q", rep, p.took())
	}
}

// Records Bootstrap gives up on are a scan's, which no shard holds: their
// on-failure record names their items' keys, and Redrive reads the items
// again from the table (Options.Items) and hands them over.
func TestBootstrapDeadLettersAreRedrivable(t *testing.T) {
	q, queueURL := localSQS(t)
	ctx := context.Background()
	p := newPoisonTable(t)
	r := p.runner(&onfailure.SQS{Client: q, QueueURL: queueURL, FunctionARN: "orders"})
	b := &stream.Bootstrap{Runner: r, DB: p.tbl.DB, Table: p.tbl.Name}
	if _, err := b.Run(ctx, p.handle); err != nil {
		t.Fatal(err)
	}
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
	if fr.BatchInfo.ShardID != stream.BootstrapShard || len(fr.BootstrapKeys) != 1 || fr.BootstrapKeys[0]["PK"].String() != "POISON" {
		t.Fatalf("failure record %+v", fr)
	}
	p.fix()
	opts := onfailure.Options{Queue: q, QueueURL: queueURL, Streams: p.tbl.Streams, Handler: p.handle, Visibility: 1}
	if rep, err := onfailure.Redrive(ctx, opts); err != nil || len(rep.Failed) != 1 || !strings.Contains(rep.Failed[0].Err.Error(), "Options.Items") {
		t.Fatalf("without Items: %+v %v", rep, err)
	}
	time.Sleep(1100 * time.Millisecond)
	opts.Items = p.tbl.DB
	rep, err := onfailure.Redrive(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven != 1 || rep.Records != 1 || p.took() != "POISON" {
		t.Fatalf("report %+v, handed %q", rep, p.took())
	}
}
