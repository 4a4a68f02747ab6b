package stream_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
)

// ---------------------------------------------------------------------------
// 6. Restart from the checkpoint table; consumers are namespaced.

func TestRestartResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cps := &stream.TableCheckpoints{DB: f.c.DB, Table: ddblocal.TableName(t.Name())}
	if err := cps.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = f.c.DB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(cps.Table)})
	})
	if got := checkpointOf(t, cps, "projector", f.shard); got != "" {
		t.Fatalf("fresh checkpoint table has %q", got)
	}

	const first, more = 45, 5
	putItems(t, f.c.DB, f.table, 0, first)

	// Runner A is stopped while its third batch is being handled: the call
	// is let finish and its checkpoint is written.
	inThird, release := make(chan struct{}), make(chan struct{})
	recA := &recorder{behave: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if call == 2 {
			close(inThird)
			<-release
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	a := newRunner(t, f.c.Streams, f.arn, "projector")
	a.BatchSize = 10
	a.Checkpoints = cps
	runA := start(t, a, recA.handle)
	select {
	case <-inThird:
	case <-time.After(waitTimeout):
		t.Fatal("runner A never reached its third batch")
	}
	runA.cancel()
	close(release)
	runA.stop()
	deliveredA := recA.delivered()
	if len(deliveredA) >= first {
		t.Fatalf("runner A delivered %d of %d records before it stopped; the test needs it to stop mid-stream", len(deliveredA), first)
	}
	if got := checkpointOf(t, cps, "projector", f.shard); got != deliveredA[len(deliveredA)-1] {
		t.Fatalf("after A: checkpoint %s, want the last record A handled, %s", got, deliveredA[len(deliveredA)-1])
	}

	putItems(t, f.c.DB, f.table, first, first+more)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, first+more))
	if diff := cmp.Diff(oracle[:len(deliveredA)], deliveredA); diff != "" {
		t.Fatalf("runner A (-stream +delivered):\n%s", diff)
	}

	// Runner B, same consumer, new process: only what A did not finish.
	recB := &recorder{}
	b := newRunner(t, f.c.Streams, f.arn, "projector")
	b.BatchSize = 10
	b.Checkpoints = cps
	runB := start(t, b, recB.handle)
	waitCheckpoint(t, cps, "projector", f.shard, oracle[len(oracle)-1])
	runB.stop()
	if diff := cmp.Diff(oracle[len(deliveredA):], recB.delivered()); diff != "" {
		t.Fatalf("runner B delivered (-want +got):\n%s", diff)
	}

	// Another consumer has checkpoints of its own: it reads from TRIM_HORIZON.
	recC := &recorder{}
	c := newRunner(t, f.c.Streams, f.arn, "notifier")
	c.BatchSize = 10
	c.Checkpoints = cps
	runC := start(t, c, recC.handle)
	waitCheckpoint(t, cps, "notifier", f.shard, oracle[len(oracle)-1])
	runC.stop()
	if diff := cmp.Diff(oracle, recC.delivered()); diff != "" {
		t.Fatalf("runner C (another consumer) delivered (-want +got):\n%s", diff)
	}
	if got := checkpointOf(t, cps, "projector", f.shard); got != oracle[len(oracle)-1] {
		t.Errorf("consumer projector's checkpoint moved to %s", got)
	}
	// The checkpoints live outside the streamed table: its stream holds only
	// the items written.
	readStream(t, f.c.Streams, f.arn, first+more)
}

// ---------------------------------------------------------------------------
// 7. Expired iterators.

// expiringAPI is the real streams client, except that some GetRecords calls
// fail with ExpiredIteratorException instead of reaching the service, and
// GetRecords reads at most limit records per call when limit is set.
type expiringAPI struct {
	*dynamodbstreams.Client
	every, most int   // expire every n-th GetRecords call, at most most times
	limit       int32 // clamp GetRecords' Limit (0: leave it)

	mu                        sync.Mutex
	getRecords, expired, iter int
	next                      func() // if set, the next GetRecords runs it, then expires
}

// expireNext makes the next GetRecords call run do and then fail with
// ExpiredIteratorException.
func (a *expiringAPI) expireNext(do func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = do
}

func (a *expiringAPI) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	a.mu.Lock()
	a.getRecords++
	expire := a.every > 0 && a.getRecords%a.every == 0 && a.expired < a.most
	next := a.next
	a.next = nil
	if expire || next != nil {
		expire = true
		a.expired++
	}
	a.mu.Unlock()
	if next != nil {
		next()
	}
	if expire {
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("Iterator expired (injected by the test)")}
	}
	if a.limit > 0 {
		in.Limit = aws.Int32(min(aws.ToInt32(in.Limit), a.limit))
	}
	return a.Client.GetRecords(ctx, in, opts...)
}

func (a *expiringAPI) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	a.mu.Lock()
	a.iter++
	a.mu.Unlock()
	return a.Client.GetShardIterator(ctx, in, opts...)
}

func (a *expiringAPI) counts() (expired, iterators int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.expired, a.iter
}

func (a *expiringAPI) reads() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.getRecords
}

func TestExpiredIteratorIsRenewed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		window time.Duration
		limit  int32
	}{
		{"no window", 0, 0},
		// Records read but still gathered in the window when the iterator
		// expires must be neither lost nor read twice.
		{"window", 150 * time.Millisecond, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			const before, during = 40, 40
			putItems(t, f.c.DB, f.table, 0, before)
			api := &expiringAPI{Client: f.c.Streams, every: 3, most: 8, limit: tc.limit}
			rec := &recorder{}
			r := newRunner(t, api, f.arn, "expiry")
			const batchSize = 25
			r.BatchSize = batchSize
			r.BatchWindow = tc.window
			run := start(t, r, rec.handle)
			waitFor(t, "the first batch", func() bool { return len(rec.snapshot()) > 0 })
			putItems(t, f.c.DB, f.table, before, before+during) // written mid-stream
			oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, before+during))
			waitCheckpoint(t, r.Checkpoints, "expiry", f.shard, oracle[len(oracle)-1])
			run.stop()

			if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
				t.Fatalf("delivered (-stream +delivered):\n%s", diff)
			}
			assertBatchSizes(t, rec.snapshot(), batchSize)
			expired, iterators := api.counts()
			if expired == 0 || iterators < expired+1 {
				t.Fatalf("%d injected expiries, %d GetShardIterator calls: the iterator was not renewed after each", expired, iterators)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// StartingPosition LATEST.

func TestStartingPositionLatest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const old = 5
	putItems(t, f.c.DB, f.table, 0, old)
	oldSeqs := rawSeqs(readStream(t, f.c.Streams, f.arn, old))

	rec := &recorder{}
	r := newRunner(t, f.c.Streams, f.arn, "latest")
	r.StartingPosition = stream.Latest
	start(t, r, rec.handle)
	// When the runner took its LATEST iterator is unknown: write until it
	// sees something.
	next := old
	waitFor(t, "a record written after start", func() bool {
		if len(rec.delivered()) > 0 {
			return true
		}
		putItem(t, f.c.DB, f.table, testItem(next, "1"))
		next++
		time.Sleep(20 * time.Millisecond)
		return false
	})
	for _, q := range rec.delivered() {
		if slices.Contains(oldSeqs, q) {
			t.Fatalf("record %s written before the runner started was delivered at LATEST", q)
		}
	}
}

// ---------------------------------------------------------------------------
// An iterator taken on an empty shard.

// DynamoDB Local points a TRIM_HORIZON iterator taken on an empty shard at
// the next sequence number of its counter, which all tables share. When
// another table's write takes that number, the shard's first record comes
// after it and GetRecords answers TrimmedDataAccessException for that
// iterator from then on: the runner must renew it, not retry it forever.
func TestEmptyShardThenAnotherTableWrites(t *testing.T) {
	t.Parallel()
	for _, from := range []string{stream.TrimHorizon, stream.Latest} {
		t.Run(from, func(t *testing.T) {
			t.Parallel()
			f, other := newFixture(t), newFixture(t)
			api := &expiringAPI{Client: f.c.Streams}
			rec := &recorder{}
			r := newRunner(t, api, f.arn, "empty")
			r.StartingPosition = from
			run := start(t, r, rec.handle)
			// The runner holds an iterator on the empty shard once it has read it.
			waitFor(t, "reads of the empty shard", func() bool { return api.reads() >= 2 })
			putItem(t, other.c.DB, other.table, testItem(0, "1"))
			putItems(t, f.c.DB, f.table, 0, 3)
			oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 3))
			waitCheckpoint(t, r.Checkpoints, "empty", f.shard, oracle[len(oracle)-1])
			run.stop()
			if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
				t.Fatalf("delivered (-stream +delivered):\n%s", diff)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// A closed shard.

func disableStream(t testing.TB, f fixture) {
	t.Helper()
	_, err := f.c.DB.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{
		TableName:           aws.String(f.table),
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)},
	})
	if err != nil {
		t.Fatalf("disable the stream: %v", err)
	}
}

// Disabling the stream closes its shard (DynamoDB Local then ends it, as the
// service does): the runner delivers the rest and marks the shard done.
func TestClosedShardIsDrained(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	putItems(t, f.c.DB, f.table, 0, 10)
	rec := &recorder{}
	r := newRunner(t, f.c.Streams, f.arn, "closing")
	r.BatchSize = 4
	run := start(t, r, rec.handle)
	waitFor(t, "the first records", func() bool { return len(rec.delivered()) >= 10 })
	putItems(t, f.c.DB, f.table, 10, 15)
	disableStream(t, f)
	waitCheckpoint(t, r.Checkpoints, "closing", f.shard, "SHARD_END")
	run.stop()
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 15))
	if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
		t.Fatalf("delivered (-stream +delivered):\n%s", diff)
	}
	assertBatchSizes(t, rec.snapshot(), 4)
}

// Records gathered in the batch window are delivered, once, when the
// iterator expires just as the shard is closed: the renewal after them finds
// the shard's end. (DynamoDB Local then gives an iterator whose first read
// ends the shard; the service may give none, which the runner handles too.)
func TestClosedShardBufferedRecordsSurviveRenewal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	putItems(t, f.c.DB, f.table, 0, 5)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 5))

	api := &expiringAPI{Client: f.c.Streams}
	rec := &recorder{}
	r := newRunner(t, api, f.arn, "closed")
	r.BatchWindow = 30 * time.Second // the records wait in the window
	run := start(t, r, rec.handle)
	waitFor(t, "the records to be read", func() bool { return api.reads() >= 2 })
	if n := len(rec.snapshot()); n != 0 {
		t.Fatalf("%d handler calls inside the window", n)
	}
	// The next read finds the shard closed and its iterator expired.
	api.expireNext(func() {
		_, err := f.c.DB.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{
			TableName:           aws.String(f.table),
			StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)},
		})
		if err != nil {
			t.Errorf("disable the stream: %v", err) // not Fatal: this is the runner's goroutine
		}
	})
	waitCheckpoint(t, r.Checkpoints, "closed", f.shard, "SHARD_END")
	run.stop()
	if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
		t.Fatalf("delivered (-stream +delivered):\n%s", diff)
	}
	if expired, _ := api.counts(); expired != 1 {
		t.Fatalf("%d expiries injected, want 1", expired)
	}
}
