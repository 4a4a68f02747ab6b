package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/dynastream/dynastream/stream"
)

// A dead letter reads as the on-failure record the event source mapping
// sends, in the shape of Lambda's documented example ("Retain discarded
// records for a DynamoDB event source",
// https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html):
// the last call's request id (a UUID) and outcome, the timestamp to the
// millisecond, the shard, the range, the count, the condition; never the
// records themselves.
func TestFailureRecord(t *testing.T) {
	at := time.Date(2019, 11, 14, 0, 13, 19, 0, time.UTC)
	rec := func(seq string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: "e" + seq, EventSourceArn: "arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388",
			Change: events.DynamoDBStreamRecord{SequenceNumber: seq, ApproximateCreationDateTime: events.SecondsEpochTime{Time: at}}}
	}
	dl := stream.DeadLetter{ShardID: "shardId-00000001573689847184-864758bb", Attempts: 1, FailedAt: at.Add(30*time.Second + 717*time.Millisecond),
		RequestID: "316aa6d0-8154-xmpl-9af7-85d5f4a6bc81", FunctionError: "Unhandled",
		Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("800000000003126276362")}}}
	fr, ok := dl.FailureRecord("arn:aws:lambda:us-east-2:123456789012:function:myfunction")
	if !ok {
		t.Fatal("no failure record")
	}
	b, _ := json.Marshal(fr)
	want := `{"requestContext":{"requestId":"316aa6d0-8154-xmpl-9af7-85d5f4a6bc81","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:myfunction","condition":"RetryAttemptsExhausted","approximateInvokeCount":1},` +
		`"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"version":"1.0","timestamp":"2019-11-14T00:13:49.717Z",` +
		`"DDBStreamBatchInfo":{"shardId":"shardId-00000001573689847184-864758bb","startSequenceNumber":"800000000003126276362","endSequenceNumber":"800000000003126276362",` +
		`"approximateArrivalOfFirstRecord":"2019-11-14T00:13:19Z","approximateArrivalOfLastRecord":"2019-11-14T00:13:19Z","batchSize":1,"streamArn":"arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388"}}`
	if string(b) != want {
		t.Errorf("got\n%s\nwant (AWS's example)\n%s", b, want)
	}
	var back stream.FailureRecord
	if err := json.Unmarshal(b, &back); err != nil || !back.Timestamp.Equal(dl.FailedAt) {
		t.Errorf("read back: %v %v", back.Timestamp, err)
	}

	// a call that reported the records failed (BatchItemFailures) returned
	// without a function error
	dl.FunctionError = ""
	if fr, _ := dl.FailureRecord("f"); fr.ResponseContext != (stream.FailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"}) {
		t.Errorf("response of a batch item failure: %+v", fr.ResponseContext)
	}
	// records that expired before any call: no response, an id of their own
	dl.RequestID, dl.Attempts, dl.Condition = "", 0, stream.RecordAgeExceeded
	fr, _ = dl.FailureRecord("f")
	if fr.RequestContext.Condition != stream.RecordAgeExceeded || fr.ResponseContext != (stream.FailureResponseContext{}) ||
		!uuidRE.MatchString(fr.RequestContext.RequestID) {
		t.Errorf("expired without a call: %+v", fr)
	}
	if again, _ := dl.FailureRecord("f"); again.RequestContext.RequestID != fr.RequestContext.RequestID {
		t.Error("the same dead letter read twice has two request ids")
	}
	if _, ok := (stream.DeadLetter{Unconverted: []json.RawMessage{[]byte(`{}`)}}).FailureRecord("f"); ok {
		t.Error("a dead letter of unconverted records has no range, yet got a failure record")
	}
}

// The records of a Kinesis data stream (a table's changes carried there)
// are named as Lambda names a Kinesis source's in its on-failure record:
// under KinesisBatchInfo, with the same fields ("Retaining records from a
// Kinesis Data Streams event source mapping", Lambda Developer Guide:
// paraphrased), and read back from either key.
func TestFailureRecordOfAKinesisSource(t *testing.T) {
	arn := "arn:aws:kinesis:us-east-2:123456789012:stream/mystream"
	at := time.Date(2026, 12, 7, 10, 0, 0, 123456000, time.UTC)
	rec := events.DynamoDBEventRecord{EventID: "e1", EventSourceArn: arn,
		Change: events.DynamoDBStreamRecord{SequenceNumber: "49590338271490256608559692538361571095921575989136588898", ApproximateCreationDateTime: events.SecondsEpochTime{Time: at}}}
	dl := stream.DeadLetter{StreamARN: arn, ShardID: "shardId-000000000001", Attempts: 4, FailedAt: at.Add(time.Minute), RequestID: "r1",
		Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}}
	fr, ok := dl.FailureRecord("f")
	if !ok {
		t.Fatal("no failure record")
	}
	b, _ := json.Marshal(fr)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if keys["KinesisBatchInfo"] == nil || keys["DDBStreamBatchInfo"] != nil {
		t.Fatalf("a Kinesis source's record: %s; want KinesisBatchInfo and no DDBStreamBatchInfo", b)
	}
	var back stream.FailureRecord
	if err := json.Unmarshal(b, &back); err != nil || back.BatchInfo != fr.BatchInfo || back.BatchInfo.StartSequenceNumber != rec.Change.SequenceNumber {
		t.Errorf("read back %+v (%v), want %+v", back.BatchInfo, err, fr.BatchInfo)
	}
	// another partition's Kinesis ARN is one too; a DynamoDB stream's is not
	dl.StreamARN = "arn:aws-cn:kinesis:cn-north-1:123456789012:stream/s"
	if fr, _ := dl.FailureRecord("f"); !bytesContain(t, fr, `"KinesisBatchInfo"`) {
		t.Error("a Kinesis ARN of another partition is written as DDBStreamBatchInfo")
	}
	dl.StreamARN = "arn:aws:dynamodb:us-east-2:123456789012:table/kinesis/stream/2026"
	if fr, _ := dl.FailureRecord("f"); !bytesContain(t, fr, `"DDBStreamBatchInfo"`) {
		t.Error("a DynamoDB stream's record (of a table named kinesis) is written as KinesisBatchInfo")
	}
}

func bytesContain(t *testing.T, fr stream.FailureRecord, s string) bool {
	t.Helper()
	b, err := json.Marshal(fr)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), s)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestCompareSequenceNumbers(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"9", "10", -1}, {"100", "99", 1}, {"000000000000000000002", "000000000000000000002", 0}, {"800000000003126276362", "800000000003126276363", -1}} {
		if got := stream.CompareSequenceNumbers(c.a, c.b); got != c.want {
			t.Errorf("%s vs %s: %d", c.a, c.b, got)
		}
	}
}

// A Runner's dead letter keeps its last call's invocation id and how it
// failed: "Unhandled" for an error, as the on-failure record's
// responseContext says (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html);
// "" for records the call reported failed, which AWS does not document
// (the call itself succeeded).
func TestDeadLetterKeepsTheLastCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		fail func(events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
		want string
	}{
		{"error", func(events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, errors.New("poison")
		}, "Unhandled"},
		{"batch item failure", func(ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			r := newRunner(t, f.c.Streams, f.arn, "last-call")
			r.MaxRetries = stream.Retries(1)
			var mu sync.Mutex
			var ids []string
			r.InvocationID = func() string {
				mu.Lock()
				defer mu.Unlock()
				ids = append(ids, stream.NewUUID())
				return ids[len(ids)-1]
			}
			putItem(t, f.c.DB, f.table, testItem(1, "1"))
			start(t, r, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return c.fail(ev)
			})
			dl := r.DeadLetters.(*stream.MemoryDeadLetters)
			waitFor(t, "the dead letter", func() bool { return len(dl.All()) == 1 })
			d := dl.All()[0]
			mu.Lock()
			defer mu.Unlock()
			if len(ids) != 2 || d.RequestID != ids[1] || d.FunctionError != c.want {
				t.Errorf("dead letter request %q, error %q; calls %v, want the last one's and %q", d.RequestID, d.FunctionError, ids, c.want)
			}
			fr, _ := d.FailureRecord("f")
			if fr.RequestContext.RequestID != ids[1] || fr.ResponseContext.FunctionError != c.want || !uuidRE.MatchString(ids[1]) {
				t.Errorf("failure record %+v", fr)
			}
		})
	}
}

// With ReportBatchItemFailures off (NoReportBatchItemFailures), the
// handler's BatchItemFailures are not processed, as Lambda does not
// process them then ("Even when your function code returns partial batch
// failure responses, these responses will not be processed by Lambda
// unless the ReportBatchItemFailures feature is explicitly turned on":
// https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html):
// the call succeeded whole. On (the default), the records are retried.
func TestReportBatchItemFailuresOff(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprint("off=", off), func(t *testing.T) {
			f := newFixture(t)
			r := newRunner(t, f.c.Streams, f.arn, "rbif")
			r.MaxRetries, r.NoReportBatchItemFailures = stream.Retries(1), off
			var calls atomic.Int32
			putItems(t, f.c.DB, f.table, 0, 3)
			recs := readStream(t, f.c.Streams, f.arn, 3)
			start(t, r, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				calls.Add(1)
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
			})
			waitCheckpoint(t, r.Checkpoints, r.Consumer, f.shard, aws.ToString(recs[2].Dynamodb.SequenceNumber))
			dead := len(r.DeadLetters.(*stream.MemoryDeadLetters).All())
			switch {
			case off && (calls.Load() != 1 || dead != 0):
				t.Errorf("off: %d calls, %d dead letters; want 1 and 0 (the call succeeded whole)", calls.Load(), dead)
			case !off && (calls.Load() < 2 || dead == 0):
				t.Errorf("on: %d calls, %d dead letters; want the failed records retried, then dead-lettered", calls.Load(), dead)
			}
		})
	}
}

// A failure record read back from a queue or a bucket is input like any
// other: one whose keys hold what aws-lambda-go's attribute decoding
// panics on (a binary set member that is not a string) is an error, not a
// crash of the redrive that reads it.
func TestFailureRecordRefusesWhatPanicsAWSLambdaGo(t *testing.T) {
	var fr stream.FailureRecord
	err := json.Unmarshal([]byte(`{"DDBStreamBatchInfo":{"shardId":"s"},"bootstrapKeys":[{"PK":{"BS":[{}]}}]}`), &fr)
	if err == nil {
		t.Fatal("a binary set of an object was read")
	}
}
