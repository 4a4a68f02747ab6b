package stream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynastream/dynastream/stream"
)

// stampedAPI is a stream API whose records' creation times stamp says.
type stampedAPI struct {
	stream.API
	stamp func(created time.Time) time.Time
}

func (c stampedAPI) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := c.API.GetRecords(ctx, in, optFns...)
	if err == nil {
		for _, r := range out.Records {
			r.Dynamodb.ApproximateCreationDateTime = aws.Time(c.stamp(*r.Dynamodb.ApproximateCreationDateTime))
		}
	}
	return out, err
}

// coarseClock rounds creation times down to the minute, as DynamoDB Local
// does (which it does already; the wrapper holds the test to it).
func coarseClock(api stream.API) stream.API {
	return stampedAPI{api, func(t time.Time) time.Time { return t.Truncate(time.Minute) }}
}

// secondsClock says a record was created 30 s before it was read, to the
// second, as DynamoDB's own creation times are.
func secondsClock(api stream.API) stream.API {
	return stampedAPI{api, func(time.Time) time.Time {
		t := time.Now().Add(-30 * time.Second).Truncate(time.Second)
		if t.Equal(t.Truncate(time.Minute)) {
			t = t.Add(-time.Second)
		}
		return t
	}}
}

// The iterator age of a runner that keeps up is the records' real age
// (within a poll), not what a rounded-down creation time makes of it.
func TestIteratorAgeOfACaughtUpRunner(t *testing.T) {
	c, table, arn := newTable(t)
	r := newRunner(t, coarseClock(c.Streams), arn, "lag")
	var mu sync.Mutex
	var ages []time.Duration
	r.OnBatch = func(b stream.BatchStats) { mu.Lock(); ages = append(ages, b.IteratorAge); mu.Unlock() }
	start(t, r, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	})
	waitFor(t, "the runner reading", func() bool { return len(r.Health().Shards) == 1 && r.Health().Status == stream.Idle })
	if s := time.Now().Second(); s < 3 { // the rounding would hide little: wait for it to matter
		time.Sleep(time.Duration(3-s) * time.Second)
	}
	for i := range 5 {
		putItems(t, c.DB, table, i, i+1)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "5 calls", func() bool { mu.Lock(); defer mu.Unlock(); return len(ages) >= 5 })
	mu.Lock()
	defer mu.Unlock()
	for _, a := range ages {
		// a poll is 20 ms here; a second leaves room for a slow machine,
		// and the rounded creation times alone would say up to 59 s
		if a < 0 || a > time.Second {
			t.Errorf("iterator ages %v, want each within a second", ages)
			break
		}
	}
	if h := r.Health(); h.Shards[0].IteratorAge > time.Second {
		t.Errorf("health's iterator age %s", h.Shards[0].IteratorAge)
	}
}

// With DynamoDB's creation times (to the second: "rounded down to the
// closest second", StreamRecord's ApproximateCreationDateTime,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html)
// the Runner takes them as they are, as Lambda counts IteratorAge
// (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html): a record that says it is 30 s
// old is, although the runner was at the shard's end before it came.
func TestIteratorAgeTakesDynamoDBTimesAsTheyAre(t *testing.T) {
	c, table, arn := newTable(t)
	r := newRunner(t, secondsClock(c.Streams), arn, "lag")
	var mu sync.Mutex
	var ages []time.Duration
	r.OnBatch = func(b stream.BatchStats) { mu.Lock(); ages = append(ages, b.IteratorAge); mu.Unlock() }
	start(t, r, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	})
	waitFor(t, "the runner reading", func() bool { return len(r.Health().Shards) == 1 && r.Health().Status == stream.Idle })
	for i := range 3 {
		putItems(t, c.DB, table, i, i+1)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "3 calls", func() bool { mu.Lock(); defer mu.Unlock(); return len(ages) >= 3 })
	mu.Lock()
	defer mu.Unlock()
	for _, a := range ages {
		if a < 29*time.Second || a > 33*time.Second {
			t.Errorf("iterator ages %v, want each about 30 s", ages)
			break
		}
	}
}
