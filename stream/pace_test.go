package stream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
)

// callTimes is a stream API that keeps when each GetRecords call was made.
type callTimes struct {
	*dynamodbstreams.Client
	mu    sync.Mutex
	calls []time.Time
}

func (c *callTimes) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	c.mu.Lock()
	c.calls = append(c.calls, time.Now())
	c.mu.Unlock()
	return c.Client.GetRecords(ctx, in, optFns...)
}

// A Runner reads a shard at most ReadsPerSecond times a second, however
// fast records come and its handler returns, and idle or not: the ddblocal
// Limiter (and Kinesis Data Streams, five a second a shard) refuse more,
// and AWS may answer DynamoDB Streams' GetRecords LimitExceededException
// (API_streams_GetRecords). A slow machine can only make fewer calls, so
// the bound is what is asserted, and every record is still delivered.
func TestReadsPerSecond(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	api := &callTimes{Client: f.c.Streams}
	rec := &recorder{}
	r := newRunner(t, api, f.arn, "paced")
	r.PollInterval, r.ReadsPerSecond = time.Millisecond, 5
	run := start(t, r, rec.handle)
	const n = 30
	for i := range n { // a trickle: a record or two per read
		putItems(t, f.c.DB, f.table, i, i+1)
		time.Sleep(40 * time.Millisecond)
	}
	waitFor(t, "every record", func() bool { return len(rec.delivered()) >= n })
	run.stop()

	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.calls) < 3 {
		t.Fatalf("%d GetRecords calls", len(api.calls))
	}
	for i := 5; i < len(api.calls); i++ {
		if d := api.calls[i].Sub(api.calls[i-5]); d < time.Second {
			t.Fatalf("6 GetRecords calls within %s (calls %d to %d of %d), want at most 5 a second", d, i-5, i, len(api.calls))
		}
	}
}

// A GetRecords call refused for its rate (LimitExceededException) is not
// retried by the SDK within the same second, where it is refused again
// (the standard retryer would, with 25 ms pauses): the reader waits a
// second and reads again, and every record still comes. Behind a ddblocal
// Limiter that lets a reader make one call a second, an unpaced Runner is
// refused about once a second, not a burst of refusals at each.
func TestReaderWaitsOutARefusedRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	lim := ddblocal.Limit(t, ddblocal.Limits{StreamReads: 1})
	_, streams := ddblocal.Clients(lim.Endpoint)
	rec := &recorder{}
	r := newRunner(t, streams, f.arn, "refused")
	r.PollInterval = time.Millisecond // ReadsPerSecond -1: no pacing of its own
	began := time.Now()
	run := start(t, r, rec.handle)
	const n = 10
	for i := range n {
		putItems(t, f.c.DB, f.table, i, i+1)
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, "every record", func() bool { return len(rec.delivered()) >= n })
	run.stop()
	seconds := int64(time.Since(began)/time.Second) + 1
	if refused := lim.Counts().StreamLimited; refused == 0 || refused > seconds+1 {
		t.Fatalf("%d GetRecords calls refused in %d s, want about one a second (a refused call waits the second out)", refused, seconds)
	}
}

// behindFirst is a stream API whose first n GetRecords calls answer an
// empty page marked behind (stream.MarkBehind) and the same iterator, as
// Kinesis may answer far from a shard's tip.
type behindFirst struct {
	*dynamodbstreams.Client
	mu sync.Mutex
	n  int
}

func (b *behindFirst) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	b.mu.Lock()
	empty := b.n > 0
	b.n--
	b.mu.Unlock()
	if empty {
		out := &dynamodbstreams.GetRecordsOutput{NextShardIterator: in.ShardIterator}
		stream.MarkBehind(out)
		return out, nil
	}
	return b.Client.GetRecords(ctx, in, optFns...)
}

// An empty page short of the shard's tip is a backlog, not the tip: the
// Runner reads on at once (within ReadsPerSecond), not after its
// PollInterval, here an hour ("It might take multiple calls to get to a
// portion of the shard that contains records", GetRecords, the Kinesis
// Data Streams API Reference). Without the mark it would wait the hour
// and the records would not come within the test's wait.
func TestReadsOnWhileBehind(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	putItems(t, f.c.DB, f.table, 0, 3)
	api := &behindFirst{Client: f.c.Streams, n: 4}
	rec := &recorder{}
	r := newRunner(t, api, f.arn, "behind")
	r.PollInterval = time.Hour
	start(t, r, rec.handle)
	waitFor(t, "the records past the empty pages", func() bool { return len(rec.delivered()) == 3 })
}
