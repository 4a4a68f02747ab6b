package stream_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

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

// pagedAPI is a stream whose reads return at most limit records, as
// GetRecords does when a page reaches 1 MB ("up to 1 MB of data or 1,000
// stream records, whichever comes first": the GetRecords API reference,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_GetRecords.html).
type pagedAPI struct {
	stream.API
	limit int32
}

func (p pagedAPI) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	in.Limit = aws.Int32(p.limit)
	return p.API.GetRecords(ctx, in, optFns...)
}

// A backlog read in short pages (items over about 1 KB fill GetRecords' 1
// MB before its 1,000 records) is as old as its records say: with the
// clock two hours after they were created and MaxRecordAge one hour,
// every record is dead-lettered as RecordAgeExceeded, none is handed to
// the handler, and IteratorAge reads about two hours (Lambda:
// "MaximumRecordAgeInSeconds: discard records older than the specified
// age", and IteratorAge "the age of the last record in the event",
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
// The records' creation times are DynamoDB Local's, rounded down to the
// minute: the age may read up to a minute less, never a backlog's pages
// as new.
func TestRecordAgeInABacklogOfShortPages(t *testing.T) {
	t.Parallel()
	c, table, arn := newTable(t)
	r := newRunner(t, pagedAPI{c.Streams, 500}, arn, "backlog")
	r.MaxRecordAge = time.Hour
	r.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	var mu sync.Mutex
	handed := 0
	putItemsParallel(t, c.DB, table, 0, 1500, 6)
	recs := readStream(t, c.Streams, arn, 1500)
	start(t, r, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		handed += len(ev.Records)
		return events.DynamoDBEventResponse{}, nil
	})
	waitCheckpoint(t, r.Checkpoints, r.Consumer, shardID(t, c.Streams, arn), aws.ToString(recs[len(recs)-1].Dynamodb.SequenceNumber))
	dead := 0
	for _, d := range r.DeadLetters.(*stream.MemoryDeadLetters).All() {
		dead += len(d.Event.Records)
		if d.Condition != stream.RecordAgeExceeded {
			t.Errorf("dead letter condition %q", d.Condition)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	st := r.Stats()
	if handed != 0 || dead != 1500 || st.Expired != 1500 {
		t.Errorf("%d records handed to the handler, %d dead-lettered (Expired %d); want 0 and 1500", handed, dead, st.Expired)
	}
	if st.IteratorAge < 2*time.Hour-time.Minute-5*time.Second || st.IteratorAge > 2*time.Hour+time.Minute {
		t.Errorf("IteratorAge %s, want about 2h", st.IteratorAge)
	}
	if h := r.Health(); len(h.Shards) == 1 && h.Shards[0].IteratorAge < time.Hour {
		t.Errorf("health's iterator age %s, want about 2h", h.Shards[0].IteratorAge)
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
