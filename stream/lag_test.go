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

// coarseClock is a stream API whose records say they were created up to a
// minute before they were (DynamoDB Local rounds
// ApproximateCreationDateTime down to the minute; here always 59 s down).
type coarseClock struct{ stream.API }

func (c coarseClock) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := c.API.GetRecords(ctx, in, optFns...)
	if err == nil {
		for _, r := range out.Records {
			r.Dynamodb.ApproximateCreationDateTime = aws.Time(r.Dynamodb.ApproximateCreationDateTime.Add(-59 * time.Second))
		}
	}
	return out, err
}

// The iterator age of a runner that keeps up is the records' real age
// (within a poll), not what a rounded-down creation time makes of it.
func TestIteratorAgeOfACaughtUpRunner(t *testing.T) {
	c, table, arn := newTable(t)
	r := newRunner(t, coarseClock{c.Streams}, arn, "lag")
	var mu sync.Mutex
	var ages []time.Duration
	r.OnBatch = func(b stream.BatchStats) { mu.Lock(); ages = append(ages, b.IteratorAge); mu.Unlock() }
	start(t, r, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	})
	waitFor(t, "the runner reading", func() bool { return len(r.Health().Shards) == 1 && r.Health().Status == stream.Idle })
	for i := range 5 {
		putItems(t, c.DB, table, i, i+1)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "5 calls", func() bool { mu.Lock(); defer mu.Unlock(); return len(ages) >= 5 })
	mu.Lock()
	defer mu.Unlock()
	for _, a := range ages {
		// a poll is 20 ms here; a second leaves room for a slow machine,
		// and the rounded creation times alone would say 59 s
		if a < 0 || a > time.Second {
			t.Errorf("iterator ages %v, want each within a second", ages)
			break
		}
	}
	if h := r.Health(); h.Shards[0].IteratorAge > time.Second {
		t.Errorf("health's iterator age %s", h.Shards[0].IteratorAge)
	}
}
