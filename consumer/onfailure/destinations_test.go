package onfailure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	t.Parallel()
	cfg := localMoto(t)
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	bucket := unique("on-failure")
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	p := newPoisonTable(t)
	dest := &onfailure.S3{Client: client, Bucket: bucket, MappingID: "orders-mapping",
		FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:orders"}
	p.run(t, p.runner(dest))

	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil || len(list.Contents) != 1 {
		t.Fatalf("objects: %v, %v", list, err)
	}
	key := aws.ToString(list.Contents[0].Key)
	if !objectKeyRE.MatchString(key) {
		t.Errorf("object key %q", key)
	}
	obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
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
		rec.RequestContext.Condition != stream.RetryAttemptsExhausted || rec.RequestContext.RequestID == "" {
		t.Fatalf("object %s", body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw["payload"] == nil || raw["DDBStreamBatchInfo"] == nil || raw["requestContext"] == nil {
		t.Fatalf("object's fields: %s", body)
	}
	// "the payload field contains the original invocation record as an
	// escaped JSON string" (Lambda, "Retain discarded records for a
	// DynamoDB event source", Example Amazon S3 invocation record,
	// https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html):
	// a tool that reads AWS's objects reads these.
	var payload string
	if err := json.Unmarshal(raw["payload"], &payload); err != nil {
		t.Fatalf("payload is not a JSON string: %v: %.80s", err, raw["payload"])
	}
	var event events.DynamoDBEvent
	if err := json.Unmarshal([]byte(payload), &event); err != nil || len(event.Records) != 1 || event.Records[0].Change.Keys["PK"].String() != "POISON" {
		t.Fatalf("payload's event: %v: %.200s", err, payload)
	}
	// and the object form this package wrote before reads as well
	var object map[string]json.RawMessage
	_ = json.Unmarshal(body, &object)
	object["payload"] = json.RawMessage(payload)
	old, _ := json.Marshal(object)
	if rec, err := onfailure.ReadS3Record(old); err != nil || len(rec.Payload.Records) != 1 || rec.Payload.Records[0].Change.Keys["PK"].String() != "POISON" {
		t.Fatalf("an object payload: %v", err)
	}

	// the halves of a bisected batch that expire together share their
	// last call's request id and second: two objects all the same
	halvesBucket := unique("halves")
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(halvesBucket)}); err != nil {
		t.Fatal(err)
	}
	halves := &onfailure.S3{Client: client, Bucket: halvesBucket, MappingID: "m"}
	for _, seq := range []string{"100", "200"} {
		dl := stream.DeadLetter{ShardID: "shardId-1", RequestID: "316aa6d0-8154-4000-8000-85d5f4a6bc81", Condition: stream.RecordAgeExceeded,
			FailedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), FirstSequenceNumber: seq, LastSequenceNumber: seq,
			Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventSourceArn: p.tbl.StreamARN, Change: events.DynamoDBStreamRecord{SequenceNumber: seq}}}}}
		if err := halves.Put(ctx, dl); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(halvesBucket)}); err != nil || len(out.Contents) != 2 {
		t.Errorf("two halves' dead letters: %v objects, %v", len(out.Contents), err)
	}

	// the stream is gone: only the object holds the record now
	if _, err := p.tbl.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(p.tbl.Name)}); err != nil {
		t.Fatal(err)
	}
	p.fix()
	rep, err := onfailure.RedriveS3(ctx, onfailure.S3Options{Client: client, Bucket: bucket, Handler: p.handle,
		Function: onfailure.FunctionNamed("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven != 1 || rep.Records != 1 || len(rep.Failed)+len(rep.Unreadable) != 0 || p.took() != "POISON" {
		t.Fatalf("report %+v, handed %q", rep, p.took())
	}
	if left, _ := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); len(left.Contents) != 0 {
		t.Errorf("%d objects left", len(left.Contents))
	}
}

// An SNS on-failure destination publishes what SQS gets ("Each record sent
// to the destination is a JSON document": https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html);
// Redrive reads it from a queue subscribed to the topic (the notification's
// envelope).
func TestSNSDestinationRedrivesFromASubscribedQueue(t *testing.T) {
	t.Parallel()
	cfg := localMoto(t)
	ctx := context.Background()
	topics := sns.NewFromConfig(cfg)
	topic, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(unique("on-failure"))})
	if err != nil {
		t.Fatal(err)
	}
	q, queueURL := newQueue(t, sqs.NewFromConfig(cfg), unique("on-failure-sub"))
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

// Records Bootstrap gives up on (Bootstrap is the Runner's, not Lambda's:
// nothing AWS documents) are a scan's, which no shard holds: their
// on-failure record names their items' keys, and Redrive reads the items
// again from the table (Options.Items) and hands them over.
func TestBootstrapDeadLettersAreRedrivable(t *testing.T) {
	t.Parallel()
	q, queueURL := localSQS(t)
	ctx := context.Background()
	p := newPoisonTable(t)
	r := p.runner(&onfailure.SQS{Client: q, QueueURL: queueURL, FunctionARN: "orders"})
	b := &stream.Bootstrap{Runner: r, DB: p.tbl.DB, Table: p.tbl.Name}
	if _, err := b.Run(ctx, p.handle); err != nil {
		t.Fatal(err)
	}
	fr := peekRecord(t, q, queueURL)
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

// A redrive of Bootstrap's record for an item that changed since the scan
// read it does not hand over the item as it is now (as an INSERT, which a
// consumer that adds up differences would count on top of the MODIFY the
// stream carried): the failure record names what each item was (its
// eventID, a hash of the image), and Redrive reports the item changed.
// (Bootstrap is the Runner's, not Lambda's: AWS documents nothing of it.)
func TestBootstrapRedriveReportsAChangedItem(t *testing.T) {
	t.Parallel()
	q, queueURL := localSQS(t)
	ctx := context.Background()
	p := newPoisonTable(t)
	r := p.runner(&onfailure.SQS{Client: q, QueueURL: queueURL, FunctionARN: "orders"})
	b := &stream.Bootstrap{Runner: r, DB: p.tbl.DB, Table: p.tbl.Name}
	if _, err := b.Run(ctx, p.handle); err != nil {
		t.Fatal(err)
	}
	if fr := peekRecord(t, q, queueURL); len(fr.BootstrapEventIDs) != 1 || !strings.HasPrefix(fr.BootstrapEventIDs[0], "bootstrap:") {
		t.Fatalf("failure record's eventIDs %v", fr.BootstrapEventIDs)
	}
	if _, err := p.tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.tbl.Name), Item: map[string]ddbtypes.AttributeValue{
		"PK": &ddbtypes.AttributeValueMemberS{Value: "POISON"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "X"},
		"qty": &ddbtypes.AttributeValueMemberN{Value: "2"}}}); err != nil {
		t.Fatal(err)
	}
	p.fix()
	var logs bytes.Buffer
	rep, err := onfailure.Redrive(ctx, onfailure.Options{Queue: q, QueueURL: queueURL, Streams: p.tbl.Streams, Handler: p.handle, Items: p.tbl.DB,
		Visibility: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed != 1 || rep.Records != 0 || p.took() != "" || rep.Redriven != 0 || len(rep.Reconcile) != 1 {
		t.Fatalf("report %+v, handed %q; want the item reported changed, its message kept, nothing handed over", rep, p.took())
	}
	if !strings.Contains(logs.String(), "changed since the scan") || !strings.Contains(logs.String(), `POISON`) {
		t.Errorf("the log does not name the changed item's key:\n%s", logs.String())
	}
	again, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 5})
	if err != nil || len(again.Messages) != 1 || aws.ToString(again.Messages[0].MessageId) != rep.Reconcile[0].ID {
		t.Errorf("the queue after the redrive: %+v, %v; want the message kept", again, err)
	}
}

// A Bootstrap dead letter names each item's key: with NoBisect and a large
// BatchSize, one given up whole outgrows what an SQS message takes (256
// KB), and was retried for ever, Bootstrap hanging. It is put in halves
// instead, each a message naming its own items, and Bootstrap ends.
func TestBootstrapDeadLetterTooLargeIsSplit(t *testing.T) {
	t.Parallel()
	q, queueURL := localSQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := newPoisonTable(t)
	const items = 150
	long := strings.Repeat("k", 1800) // a partition key takes 2048 bytes
	var reqs []ddbtypes.WriteRequest
	flush := func() {
		if _, err := p.tbl.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{p.tbl.Name: reqs}}); err != nil {
			t.Fatal(err)
		}
		reqs = nil
	}
	for i := range items {
		reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("BIG%03d%s", i, long)}, "SK": &ddbtypes.AttributeValueMemberS{Value: "X"}}}})
		if len(reqs) == 25 {
			flush()
		}
	}
	r := p.runner(&onfailure.SQS{Client: q, QueueURL: queueURL, FunctionARN: "orders"})
	r.NoBisect, r.BatchSize = true, 1000
	failBig := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, rec := range ev.Records {
			if strings.HasPrefix(rec.Change.Keys["PK"].String(), "BIG") {
				return events.DynamoDBEventResponse{}, errors.New("down")
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	if _, err := (&stream.Bootstrap{Runner: r, DB: p.tbl.DB, Table: p.tbl.Name, Segments: 1}).Run(ctx, failBig); err != nil {
		t.Fatal(err)
	}
	keys, messages := 0, 0
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			var fr stream.FailureRecord
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &fr); err != nil || len(aws.ToString(m.Body)) > 256<<10 {
				t.Fatalf("message of %d bytes: %v", len(aws.ToString(m.Body)), err)
			}
			messages++
			keys += len(fr.BootstrapKeys)
		}
	}
	if messages < 2 || keys != items+3 {
		t.Errorf("%d messages naming %d keys, want the %d items (and the table's 3) in two or more", messages, keys, items)
	}
}

// A tumbling window whose final call keeps failing reaches the on-failure
// queue as a record of its own (AWS documents no such record: the choice
// made): the window, its state and its records'
// range (no records: they were handled). Redrive keeps it and says why: it
// is a final call to make again, not records to hand over.
func TestWindowGivenUpReachesTheQueue(t *testing.T) {
	t.Parallel()
	q, queueURL := localSQS(t)
	ctx := context.Background()
	p := newPoisonTable(t)
	r := p.runner(&onfailure.SQS{Client: q, QueueURL: queueURL, FunctionARN: "orders"})
	r.TumblingWindow, r.MaxRetries = time.Minute, stream.Retries(1)
	var mu sync.Mutex
	skew := time.Duration(0)
	r.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	wh := func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		if ev.IsFinalInvokeForWindow {
			return events.DynamoDBTimeWindowEventResponse{}, errors.New("the sink is down")
		}
		n := len(ev.State["keys"]) + len(ev.Records)
		return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"keys": strings.Repeat("k", n)}}}, nil
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go r.RunWindows(rctx, wh)
	for deadline := time.Now().Add(30 * time.Second); r.Stats().HandlerCalls == 0 || r.Health().Shards[0].Waiting > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("records not handled: %+v", r.Stats())
		}
	}
	mu.Lock()
	skew = 3 * time.Minute // the window has ended: its final call fails, twice
	mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); r.Stats().DeadLettered == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the window was not given up on: %+v", r.Stats())
		}
	}
	stop()
	rep, err := onfailure.Redrive(ctx, onfailure.Options{Queue: q, QueueURL: queueURL, Streams: p.tbl.Streams, Handler: p.handle, Visibility: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Windows) != 1 || rep.Redriven != 0 {
		t.Fatalf("report %+v", rep)
	}
	fr := rep.Windows[0].Record
	if fr.Window == nil || fr.WindowState["keys"] != "kkk" || fr.BatchInfo.BatchSize != 0 || fr.BatchInfo.StartSequenceNumber == "" ||
		fr.BatchInfo.EndSequenceNumber == "" || fr.RequestContext.Condition != stream.RetryAttemptsExhausted {
		t.Errorf("window record %+v", fr)
	}
}

// sentBodies is an SQSAPI that keeps what is sent.
type sentBodies struct {
	onfailure.SQSAPI
	bodies []string
}

func (s *sentBodies) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.bodies = append(s.bodies, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{}, nil
}

// A window's state too large for a message (SQS and SNS take 256 KB) is
// left out, and the record says so, as Lambda drops a payload that does
// not fit an SNS destination ("Amazon SNS destinations have a message size
// limit of 256 KB … Lambda will drop the payload":
// https://docs.aws.amazon.com/lambda/latest/api/API_OnFailure.html); a
// small one is carried.
func TestWindowStateTooLargeForAMessage(t *testing.T) {
	for _, c := range []struct {
		size    int
		dropped bool
	}{{1 << 10, false}, {300 << 10, true}} {
		sent := &sentBodies{}
		d := &onfailure.SQS{Client: sent, QueueURL: "q"}
		w := stream.WindowOf(time.Now(), time.Minute)
		if err := d.Put(context.Background(), stream.DeadLetter{ShardID: "s", FirstSequenceNumber: "1", LastSequenceNumber: "2",
			Window: &w, WindowState: map[string]string{"s": strings.Repeat("x", c.size)}}); err != nil {
			t.Fatal(err)
		}
		var fr stream.FailureRecord
		if len(sent.bodies) != 1 || json.Unmarshal([]byte(sent.bodies[0]), &fr) != nil || len(sent.bodies[0]) > 256<<10 {
			t.Fatalf("sent %d bodies", len(sent.bodies))
		}
		if fr.WindowStateDropped != c.dropped || (fr.WindowState == nil) != c.dropped || fr.Window == nil {
			t.Errorf("state of %d bytes: dropped %v, state kept %v", c.size, fr.WindowStateDropped, fr.WindowState != nil)
		}
	}
}

// An object of the bucket whose payload holds what aws-lambda-go's
// attribute decoding panics on (a binary set member that is not a string)
// is refused with an error, as a malformed object is: the redrive goes on
// to the next.
func TestReadS3RecordRefusesWhatPanicsAWSLambdaGo(t *testing.T) {
	body := `{"requestContext":{"condition":"RetryAttemptsExhausted"},"DDBStreamBatchInfo":{"shardId":"s","streamArn":"arn","startSequenceNumber":"1","endSequenceNumber":"1","batchSize":1},` +
		`"payload":"{\"Records\":[{\"dynamodb\":{\"Keys\":{\"PK\":{\"BS\":[1]}}}}]}"}`
	if _, err := onfailure.ReadS3Record([]byte(body)); err == nil {
		t.Fatal("a payload with a binary set of a number was read")
	}
}
