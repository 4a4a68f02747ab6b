package stream_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/dynastream/dynastream/stream"
)

// A batch that keeps failing with MaxRetries Forever would hold its shard
// until the records leave the stream; with MaxRecordAge, once its records
// are older than that (here the clock jumps two minutes after the first
// failure), they are dead-lettered as RecordAgeExceeded without another
// handler call, and the shard moves on.
func TestMaxRecordAge(t *testing.T) {
	t.Parallel()
	c, table, arn := newTable(t)
	r := newRunner(t, c.Streams, arn, "age")
	r.MaxRetries, r.MaxRecordAge = stream.Retries(stream.Forever), time.Minute
	var mu sync.Mutex
	skew := time.Duration(0)
	r.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(skew)
	}
	calls := 0
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		skew = 2 * time.Minute // the records age while the batch fails
		return events.DynamoDBEventResponse{}, errors.New("poison")
	}
	putItems(t, c.DB, table, 0, 3)
	run := start(t, r, h)
	dl := r.DeadLetters.(*stream.MemoryDeadLetters)
	waitFor(t, "the aged records to be dead-lettered", func() bool { return len(dl.All()) == 1 })
	recs := readStream(t, c.Streams, arn, 3)
	waitCheckpoint(t, r.Checkpoints, r.Consumer, shardID(t, c.Streams, arn), aws.ToString(recs[2].Dynamodb.SequenceNumber))
	run.stop()
	d := dl.All()[0]
	if d.Condition != stream.RecordAgeExceeded || len(d.Event.Records) != 3 {
		t.Errorf("dead letter: condition %q, %d records", d.Condition, len(d.Event.Records))
	}
	mu.Lock()
	defer mu.Unlock()
	if st := r.Stats(); calls != 1 || st.Expired != 3 || st.DeadLettered != 3 {
		t.Errorf("%d calls; stats %+v", calls, st)
	}
}

// MaxRecordAge takes what Lambda's MaximumRecordAgeInSeconds takes.
func TestMaxRecordAgeRange(t *testing.T) {
	for _, c := range []struct {
		age time.Duration
		ok  bool
	}{{0, true}, {time.Minute, true}, {7 * 24 * time.Hour, true}, {59 * time.Second, false}, {8 * 24 * time.Hour, false}, {-time.Second, false}} {
		_, err := stream.Config{MaxRecordAge: c.age}.Settings()
		if (err == nil) != c.ok {
			t.Errorf("MaxRecordAge %s: %v", c.age, err)
		}
	}
}
