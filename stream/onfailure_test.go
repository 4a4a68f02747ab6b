package stream_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// A dead letter reads as the on-failure record the event source mapping
// sends (the shape of Lambda's documented example): the shard, the range,
// the count, the condition; never the records themselves.
func TestFailureRecord(t *testing.T) {
	at := time.Date(2019, 11, 14, 0, 13, 19, 0, time.UTC)
	rec := func(seq string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: "e" + seq, EventSourceArn: "arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388",
			Change: events.DynamoDBStreamRecord{SequenceNumber: seq, ApproximateCreationDateTime: events.SecondsEpochTime{Time: at}}}
	}
	dl := stream.DeadLetter{ShardID: "shardId-00000001573689847184-864758bb", Attempts: 4, FailedAt: at.Add(30 * time.Second),
		Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("800000000003126276362"), rec("800000000003126276363")}}}
	fr, ok := dl.FailureRecord("arn:aws:lambda:us-east-2:123456789012:function:myfunction")
	if !ok {
		t.Fatal("no failure record")
	}
	b, _ := json.Marshal(fr)
	want := `{"requestContext":{"requestId":"e800000000003126276362","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:myfunction","condition":"RetryAttemptsExhausted","approximateInvokeCount":4},` +
		`"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"version":"1.0","timestamp":"2019-11-14T00:13:49Z",` +
		`"DDBStreamBatchInfo":{"shardId":"shardId-00000001573689847184-864758bb","startSequenceNumber":"800000000003126276362","endSequenceNumber":"800000000003126276363",` +
		`"approximateArrivalOfFirstRecord":"2019-11-14T00:13:19Z","approximateArrivalOfLastRecord":"2019-11-14T00:13:19Z","batchSize":2,"streamArn":"arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388"}}`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	dl.Condition = stream.RecordAgeExceeded
	if fr, _ := dl.FailureRecord("f"); fr.RequestContext.Condition != stream.RecordAgeExceeded {
		t.Errorf("condition %q", fr.RequestContext.Condition)
	}
	if _, ok := (stream.DeadLetter{Unconverted: []json.RawMessage{[]byte(`{}`)}}).FailureRecord("f"); ok {
		t.Error("a dead letter of unconverted records has no range, yet got a failure record")
	}
}

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
