package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// waitTimeout bounds every wait for a condition; it is a safety net against
// hanging, never an assertion on how long something took.
const waitTimeout = 30 * time.Second

// ---------------------------------------------------------------------------
// Items and the stream as DynamoDB Local holds it.

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }

func itemPK(i int) string { return fmt.Sprintf("ITEM#%05d", i) }

// testItem is item i with every attribute type, so the conversion of real
// stream records into Lambda's shape is checked on all of them.
func testItem(i int, rev string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"PK":       s(itemPK(i)),
		"SK":       s("v"),
		"itemType": s("Test"),
		"i":        n(strconv.Itoa(i)),
		"rev":      s(rev),
		"big":      n("12345678901234567890.5"),
		"bin":      &ddbtypes.AttributeValueMemberB{Value: []byte{0, byte(i), 0xff}},
		"flag":     &ddbtypes.AttributeValueMemberBOOL{Value: i%2 == 0},
		"nothing":  &ddbtypes.AttributeValueMemberNULL{Value: true},
		"tags":     &ddbtypes.AttributeValueMemberSS{Value: []string{"a", "b" + strconv.Itoa(i)}},
		"nums":     &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bins":     &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1, 2}}},
		"list":     &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("x"), n("1"), &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"deep": s("y")}}}},
		"map":      &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"k": s("v"), "empty": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}}},
	}
}

func putItem(t testing.TB, db *dynamodb.Client, table string, item map[string]ddbtypes.AttributeValue) {
	t.Helper()
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// putItems writes items from..to-1 one PutItem after the other, so their
// stream records come in that order.
func putItems(t testing.TB, db *dynamodb.Client, table string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		putItem(t, db, table, testItem(i, "1"))
	}
}

// putItemsParallel writes items from..to-1 from several goroutines at once:
// a burst whose order in the stream is whatever DynamoDB made of it.
func putItemsParallel(t testing.TB, db *dynamodb.Client, table string, from, to, workers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := from + w; i < to; i += workers {
				if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: testItem(i, "1")}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("PutItem: %v", err)
	}
}

func shardID(t testing.TB, api stream.API, arn string) string {
	t.Helper()
	out, err := api.DescribeStream(context.Background(), &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	if len(out.StreamDescription.Shards) != 1 {
		t.Fatalf("stream has %d shards; DynamoDB Local should have exactly one", len(out.StreamDescription.Shards))
	}
	return aws.ToString(out.StreamDescription.Shards[0].ShardId)
}

// readStream is the oracle: it reads the shard from TRIM_HORIZON with plain
// GetRecords calls until it holds want records, then checks there are no
// more (up to the shard's end, if it is closed).
func readStream(t testing.TB, api stream.API, arn string, want int) []streamtypes.Record {
	t.Helper()
	ctx := context.Background()
	it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(arn), ShardId: aws.String(shardID(t, api, arn)), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatalf("GetShardIterator: %v", err)
	}
	iter := it.ShardIterator
	var recs []streamtypes.Record
	deadline := time.Now().Add(waitTimeout)
	for {
		out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			t.Fatalf("GetRecords: %v", err)
		}
		recs = append(recs, out.Records...)
		iter = out.NextShardIterator
		if len(recs) > want || iter == nil && len(recs) != want {
			t.Fatalf("stream holds %d records, want %d", len(recs), want)
		}
		if len(recs) == want && (len(out.Records) == 0 || iter == nil) {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream holds %d records after %s, want %d", len(recs), waitTimeout, want)
		}
		if len(out.Records) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func rawSeqs(recs []streamtypes.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = aws.ToString(r.Dynamodb.SequenceNumber)
	}
	return out
}

func seqsOf(recs []events.DynamoDBEventRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Change.SequenceNumber
	}
	return out
}

// seqLess compares sequence numbers as the numbers they are.
func seqLess(a, b string) bool {
	x, ok1 := new(big.Int).SetString(a, 10)
	y, ok2 := new(big.Int).SetString(b, 10)
	if !ok1 || !ok2 {
		panic(fmt.Sprintf("sequence numbers %q, %q are not numbers", a, b))
	}
	return x.Cmp(y) < 0
}

func assertAscending(t testing.TB, what string, seqs []string) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		if !seqLess(seqs[i-1], seqs[i]) {
			t.Fatalf("%s not in strictly ascending sequence order at %d: %s then %s", what, i, seqs[i-1], seqs[i])
		}
	}
}

// ---------------------------------------------------------------------------
// Running a Runner.

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newRunner is a Runner tuned for tests: short poll and no limit on its
// reads a second (DynamoDB Local sets none; TestReadsPerSecond tests it),
// tiny backoff, memory checkpoints and dead letters; it does not bisect
// (NoBisect), so a failed batch is retried as it is, and tests of
// bisection turn it back on.
func newRunner(t testing.TB, api stream.API, arn, consumer string) *stream.Runner {
	return &stream.Runner{
		Config: stream.Config{
			StreamARN:      arn,
			Consumer:       consumer,
			PollInterval:   20 * time.Millisecond,
			ReadsPerSecond: -1,
			RetryBackoff:   time.Millisecond,
			NoBisect:       true,
			// a checkpoint as soon as it moves, as tests wait for them
			CheckpointInterval: time.Millisecond,
		},
		API:         api,
		Checkpoints: &stream.MemoryCheckpoints{},
		DeadLetters: &stream.MemoryDeadLetters{},
		Logger:      testLogger(t),
	}
}

type running struct {
	cancel context.CancelFunc
	stop   func() // cancels and waits for Run to return nil
}

// start runs r in a goroutine until stop (or the test's cleanup).
func start(t testing.TB, r *stream.Runner, h stream.Handler) running {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, h) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Run returned %v, want nil after cancel", err)
				}
			case <-time.After(waitTimeout):
				t.Errorf("Run did not return within %s of cancel", waitTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return running{cancel: cancel, stop: stop}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func checkpointOf(t testing.TB, cps stream.Checkpoints, consumer, shard string) string {
	t.Helper()
	cp, err := cps.Get(context.Background(), consumer, shard)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return cp
}

// waitCheckpoint waits until the consumer's checkpoint is seq: everything up
// to seq is handled or dead-lettered.
func waitCheckpoint(t testing.TB, cps stream.Checkpoints, consumer, shard, seq string) {
	t.Helper()
	waitFor(t, "checkpoint "+seq, func() bool { return checkpointOf(t, cps, consumer, shard) == seq })
}

// recorder records every handler call and delegates the outcome to behave.
type recorder struct {
	mu     sync.Mutex
	calls  [][]events.DynamoDBEventRecord
	behave func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
}

func (r *recorder) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	r.mu.Lock()
	call := len(r.calls)
	r.calls = append(r.calls, slices.Clone(ev.Records))
	behave := r.behave
	r.mu.Unlock()
	if behave == nil {
		return events.DynamoDBEventResponse{}, nil
	}
	return behave(call, ev)
}

func (r *recorder) snapshot() [][]events.DynamoDBEventRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// delivered is every record of every call, in call order.
func (r *recorder) delivered() []string {
	var out []string
	for _, c := range r.snapshot() {
		out = append(out, seqsOf(c)...)
	}
	return out
}

func assertBatchSizes(t testing.TB, calls [][]events.DynamoDBEventRecord, batchSize int) {
	t.Helper()
	for i, c := range calls {
		if len(c) == 0 || len(c) > batchSize {
			t.Errorf("call %d has %d records, want 1..%d", i, len(c), batchSize)
		}
	}
}

func contains(recs []events.DynamoDBEventRecord, seq string) bool {
	return slices.Contains(seqsOf(recs), seq)
}

// recordingCheckpoints remembers every checkpoint written.
type recordingCheckpoints struct {
	stream.MemoryCheckpoints
	mu   sync.Mutex
	puts []string
}

func (c *recordingCheckpoints) Put(ctx context.Context, consumer, shard, seq string) error {
	c.mu.Lock()
	c.puts = append(c.puts, seq)
	c.mu.Unlock()
	return c.MemoryCheckpoints.Put(ctx, consumer, shard, seq)
}

func (c *recordingCheckpoints) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.puts)
}

// exportAll lets cmp look into the SDK's attribute value members; sets are
// compared ignoring order.
var cmpAV = []cmp.Option{
	cmp.Exporter(func(reflect.Type) bool { return true }),
	cmpopts.SortSlices(func(a, b string) bool { return a < b }),
}

// fixture is a fresh table with its stream.
type fixture struct {
	c          *ddblocal.Table
	table, arn string
	shard      string
}

func newFixture(t testing.TB) fixture {
	c, table, arn := newTable(t)
	return fixture{c: c, table: table, arn: arn, shard: shardID(t, c.Streams, arn)}
}

// ---------------------------------------------------------------------------
// 1. Happy path.

func TestDeliversEveryRecordOnceInOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items, batchSize = 250, 40
	start0 := time.Now()
	putItems(t, f.c.DB, f.table, 0, items)
	// One MODIFY and one REMOVE, to check old images too.
	putItem(t, f.c.DB, f.table, testItem(0, "2"))
	if _, err := f.c.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(f.table), Key: map[string]ddbtypes.AttributeValue{"PK": s(itemPK(1)), "SK": s("v")}}); err != nil {
		t.Fatal(err)
	}
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items+2))

	rec := &recorder{}
	r := newRunner(t, f.c.Streams, f.arn, "happy")
	r.BatchSize = batchSize
	run := start(t, r, rec.handle)
	waitCheckpoint(t, r.Checkpoints, "happy", f.shard, oracle[len(oracle)-1])
	run.stop()
	end := time.Now()

	calls := rec.snapshot()
	assertBatchSizes(t, calls, batchSize)
	if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
		t.Fatalf("delivered sequence numbers differ from the stream's (-stream +delivered):\n%s", diff)
	}
	if len(calls) < (items+2+batchSize-1)/batchSize {
		t.Errorf("%d calls for %d records with BatchSize %d", len(calls), items+2, batchSize)
	}

	var all []events.DynamoDBEventRecord
	for _, c := range calls {
		all = append(all, c...)
	}
	for i, lr := range all {
		if lr.EventSource != "aws:dynamodb" || lr.EventSourceArn != f.arn || lr.EventID == "" || lr.AWSRegion == "" || lr.EventVersion == "" {
			t.Fatalf("record %d: envelope eventSource=%q eventSourceARN=%q eventID=%q region=%q version=%q", i, lr.EventSource, lr.EventSourceArn, lr.EventID, lr.AWSRegion, lr.EventVersion)
		}
		if lr.Change.StreamViewType != "NEW_AND_OLD_IMAGES" || lr.Change.SizeBytes <= 0 {
			t.Fatalf("record %d: streamViewType=%q sizeBytes=%d", i, lr.Change.StreamViewType, lr.Change.SizeBytes)
		}
		// DynamoDB Local rounds the creation time down to the minute.
		at := lr.Change.ApproximateCreationDateTime.Time
		if at.Before(start0.Truncate(time.Minute)) || at.After(end) {
			t.Fatalf("record %d: ApproximateCreationDateTime %s outside [%s, %s]", i, at, start0.Truncate(time.Minute), end)
		}
		c, err := stream.Decode(lr)
		if err != nil {
			t.Fatalf("record %d: Decode: %v", i, err)
		}
		var wantKind stream.Kind
		var wantOld, wantNew map[string]ddbtypes.AttributeValue
		var pk string
		switch {
		case i < items:
			wantKind, wantNew, pk = stream.Insert, testItem(i, "1"), itemPK(i)
		case i == items:
			wantKind, wantOld, wantNew, pk = stream.Modify, testItem(0, "1"), testItem(0, "2"), itemPK(0)
		default:
			wantKind, wantOld, pk = stream.Remove, testItem(1, "1"), itemPK(1)
		}
		if c.Kind != wantKind {
			t.Errorf("record %d: kind %s, want %s", i, c.Kind, wantKind)
		}
		if diff := cmp.Diff(map[string]ddbtypes.AttributeValue{"PK": s(pk), "SK": s("v")}, c.Keys, cmpAV...); diff != "" {
			t.Errorf("record %d: keys (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantNew, c.New, cmpAV...); diff != "" {
			t.Errorf("record %d: new image (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantOld, c.Old, cmpAV...); diff != "" {
			t.Errorf("record %d: old image (-want +got):\n%s", i, diff)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// ---------------------------------------------------------------------------
// 2. BatchWindow gathers records.

func TestBatchWindowGathersRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := &recorder{}
	r := newRunner(t, f.c.Streams, f.arn, "window")
	const batchSize = 25
	r.BatchSize = batchSize
	r.BatchWindow = 300 * time.Millisecond
	start(t, r, rec.handle)

	// Once the first record is handled the runner is tailing the shard.
	putItem(t, f.c.DB, f.table, testItem(0, "1"))
	waitFor(t, "the first record", func() bool { return len(rec.delivered()) > 0 })
	before := len(rec.snapshot())

	const burst = 60
	putItemsParallel(t, f.c.DB, f.table, 1, 1+burst, 6)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, 1+burst))
	waitCheckpoint(t, r.Checkpoints, "window", f.shard, oracle[len(oracle)-1])

	if diff := cmp.Diff(oracle, rec.delivered()); diff != "" {
		t.Fatalf("delivered differ from the stream (-stream +delivered):\n%s", diff)
	}
	assertBatchSizes(t, rec.snapshot(), batchSize)
	calls := rec.snapshot()[before:]
	largest := 0
	for _, c := range calls {
		largest = max(largest, len(c))
	}
	t.Logf("%d burst records in %d batches, largest %d", burst, len(calls), largest)
	if len(calls) >= burst || largest < 2 {
		t.Errorf("%d burst records came in %d batches (largest %d): the window did not gather them", burst, len(calls), largest)
	}
}

// TestBatchSizeCountsFilteredInRecords: Lambda applies the filter as it
// builds a batch, so records the filter drops neither fill BatchSize nor
// end the batching window early ("Control which events Lambda sends to
// your function": events that match none of the criteria are dropped
// before the batch is sent;
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html).
func TestBatchSizeCountsFilteredInRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := &recorder{}
	r := newRunner(t, f.c.Streams, f.arn, "filtered-batch")
	r.BatchSize = 4
	// the batch ends when it is full, long before its window
	r.BatchWindow = 20 * time.Second
	r.Filter = filter.MustCriteria(`{"dynamodb":{"NewImage":{"flag":{"BOOL":[true]}}}}`) // even items
	putItems(t, f.c.DB, f.table, 0, 6)                                                   // three kept, three out
	start(t, r, rec.handle)
	waitFor(t, "the six records read", func() bool { return r.Stats().RecordsRead >= 6 })
	putItem(t, f.c.DB, f.table, testItem(6, "1")) // the fourth kept
	waitFor(t, "four records handled", func() bool { return len(rec.delivered()) >= 4 })

	var got [][]string
	for _, c := range rec.snapshot() {
		var pks []string
		for _, x := range c {
			pks = append(pks, x.Change.Keys["PK"].String())
		}
		got = append(got, pks)
	}
	want := [][]string{{itemPK(0), itemPK(2), itemPK(4), itemPK(6)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got): three filtered-out records cut the batch short:\n%s", diff)
	}
	if st := r.Stats(); st.FilteredOut != 3 {
		t.Errorf("FilteredOut %d, want 3", st.FilteredOut)
	}
}

// ---------------------------------------------------------------------------
// 3. Partial failure: BatchItemFailures.

func TestBatchItemFailuresResumeAtLowestFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 30
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))

	var failed string // the sequence number reported failed, once
	rec := &recorder{}
	rec.behave = func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if failed != "" || len(ev.Records) < 8 {
			return events.DynamoDBEventResponse{}, nil
		}
		// Report three failures, the lowest neither first nor last: it is
		// the one that counts.
		failed = ev.Records[3].Change.SequenceNumber
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
			{ItemIdentifier: ev.Records[6].Change.SequenceNumber},
			{ItemIdentifier: failed},
			{ItemIdentifier: ev.Records[7].Change.SequenceNumber},
		}}, nil
	}
	cps := &recordingCheckpoints{}
	r := newRunner(t, f.c.Streams, f.arn, "partial")
	r.BatchSize = 10
	r.Checkpoints = cps
	dls := r.DeadLetters.(*stream.MemoryDeadLetters)
	run := start(t, r, rec.handle)
	waitCheckpoint(t, cps, "partial", f.shard, oracle[items-1])
	run.stop()

	calls := rec.snapshot()
	k := slices.IndexFunc(calls, func(c []events.DynamoDBEventRecord) bool { return contains(c, failed) })
	if failed == "" || k < 0 || k+1 >= len(calls) {
		t.Fatalf("the handler never reported a failure followed by a retry (failed=%q, %d calls)", failed, len(calls))
	}
	failedBatch := seqsOf(calls[k])
	at := slices.Index(failedBatch, failed)
	// The retry starts exactly at the lowest failed record.
	if diff := cmp.Diff(failedBatch[at:], seqsOf(calls[k+1])); diff != "" {
		t.Fatalf("retry after the partial failure (-want +got):\n%s", diff)
	}
	// Everything is handled exactly once, except the failed record and those
	// after it in its batch, which came twice.
	var want []string
	for i, c := range calls {
		if i == k {
			want = append(want, failedBatch[:at]...)
			continue
		}
		want = append(want, seqsOf(c)...)
	}
	if diff := cmp.Diff(oracle, want); diff != "" {
		t.Fatalf("records handled (-stream +handled):\n%s", diff)
	}
	counts := map[string]int{}
	for _, q := range rec.delivered() {
		counts[q]++
	}
	for _, q := range oracle {
		wantN := 1
		if slices.Contains(failedBatch[at:], q) {
			wantN = 2
		}
		if counts[q] != wantN {
			t.Errorf("record %s delivered %d times, want %d", q, counts[q], wantN)
		}
	}
	// The records before the failure were checkpointed right after it.
	puts := cps.all()
	if !slices.Contains(puts, failedBatch[at-1]) {
		t.Errorf("checkpoints %v lack %s, the record just before the failure", puts, failedBatch[at-1])
	}
	assertAscending(t, "checkpoints", puts)
	if got := checkpointOf(t, cps, "partial", f.shard); got != oracle[items-1] {
		t.Errorf("final checkpoint %s, want the last record %s", got, oracle[items-1])
	}
	if n := len(dls.All()); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
}

// ---------------------------------------------------------------------------
// 4. Handler errors: bisect, retry limit, dead letters.

func TestPoisonRecord(t *testing.T) {
	t.Parallel()
	const items, poisonAt, maxRetries = 20, 7, 2
	cases := []struct {
		name   string
		bisect bool
		fail   func(seq string) (events.DynamoDBEventResponse, error)
		errHas string
		// retries is MaxRetries (nil: maxRetries); attempts the expected tries.
		retries  *int
		attempts int
	}{
		{"bisect/error", true, func(seq string) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("poison record %s", seq)
		}, "poison record", nil, 0},
		{"bisect/panic", true, func(seq string) (events.DynamoDBEventResponse, error) {
			panic("poison record " + seq)
		}, "handler panicked: poison record", nil, 0},
		{"no bisect", false, func(seq string) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("poison record %s", seq)
		}, "poison record", nil, 0},
		{"bisect/no retries", true, func(seq string) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("poison record %s", seq)
		}, "poison record", stream.Retries(0), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			putItems(t, f.c.DB, f.table, 0, items)
			oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
			poison := oracle[poisonAt]

			rec := &recorder{behave: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				if contains(ev.Records, poison) {
					return tc.fail(poison)
				}
				return events.DynamoDBEventResponse{}, nil
			}}
			r := newRunner(t, f.c.Streams, f.arn, "poison")
			r.BatchSize = 10
			wantAttempts := maxRetries + 1
			r.MaxRetries = stream.Retries(maxRetries)
			if tc.retries != nil {
				r.MaxRetries, wantAttempts = tc.retries, tc.attempts
			}
			r.NoBisect = !tc.bisect
			dls := r.DeadLetters.(*stream.MemoryDeadLetters)
			run := start(t, r, rec.handle)
			// The shard moves on past the poison record to its end.
			waitCheckpoint(t, r.Checkpoints, "poison", f.shard, oracle[items-1])
			run.stop()

			calls := rec.snapshot()
			var handled []string
			var poisoned [][]string
			for _, c := range calls {
				if contains(c, poison) {
					poisoned = append(poisoned, seqsOf(c))
				} else {
					handled = append(handled, seqsOf(c)...)
				}
			}
			assertAscending(t, "successfully handled records", handled)

			all := dls.All()
			if len(all) != 1 {
				t.Fatalf("%d dead letters, want 1: %+v", len(all), all)
			}
			dl := all[0]
			// Without bisect the whole first batch holding the poison record
			// goes; with it, the poison record alone.
			wantDead := []string{poison}
			if !tc.bisect {
				wantDead = poisoned[0]
			}
			if diff := cmp.Diff(wantDead, seqsOf(dl.Event.Records)); diff != "" {
				t.Fatalf("dead-lettered records (-want +got):\n%s", diff)
			}
			var wantHandled []string
			for _, q := range oracle {
				if !slices.Contains(wantDead, q) {
					wantHandled = append(wantHandled, q)
				}
			}
			if diff := cmp.Diff(wantHandled, handled); diff != "" {
				t.Fatalf("handled records (-want +got):\n%s", diff)
			}
			// The dead-lettered batch got MaxRetries+1 attempts of its own.
			attempts := 0
			for _, p := range poisoned {
				if slices.Equal(p, wantDead) {
					attempts++
				}
			}
			if attempts != wantAttempts {
				t.Errorf("the dead-lettered batch was attempted %d times on its own, want %d", attempts, wantAttempts)
			}
			if dl.Attempts != wantAttempts {
				t.Errorf("DeadLetter.Attempts = %d, want %d", dl.Attempts, wantAttempts)
			}
			if dl.FirstSequenceNumber != wantDead[0] || dl.LastSequenceNumber != wantDead[len(wantDead)-1] {
				t.Errorf("DeadLetter sequence numbers %s..%s, want %s..%s", dl.FirstSequenceNumber, dl.LastSequenceNumber, wantDead[0], wantDead[len(wantDead)-1])
			}
			if !strings.Contains(dl.Error, tc.errHas) {
				t.Errorf("DeadLetter.Error = %q, want it to contain %q", dl.Error, tc.errHas)
			}
			if dl.Consumer != "poison" || dl.StreamARN != f.arn || dl.ShardID != f.shard || dl.FailedAt.IsZero() {
				t.Errorf("DeadLetter envelope: consumer=%q arn=%q shard=%q failedAt=%s", dl.Consumer, dl.StreamARN, dl.ShardID, dl.FailedAt)
			}
			// The full record, as the handler saw it.
			for _, got := range dl.Event.Records {
				if diff := cmp.Diff(recordJSON(t, findRecord(calls, got.Change.SequenceNumber)), recordJSON(t, got)); diff != "" {
					t.Errorf("dead-lettered record %s differs from the delivered one:\n%s", got.Change.SequenceNumber, diff)
				}
			}
			c, err := stream.Decode(dl.Event.Records[slices.Index(wantDead, poison)])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(testItem(poisonAt, "1"), c.New, cmpAV...); diff != "" {
				t.Errorf("dead-lettered poison record's new image (-want +got):\n%s", diff)
			}
		})
	}
}

func findRecord(calls [][]events.DynamoDBEventRecord, seq string) events.DynamoDBEventRecord {
	for _, c := range calls {
		for _, r := range c {
			if r.Change.SequenceNumber == seq {
				return r
			}
		}
	}
	panic("no record " + seq)
}

func recordJSON(t testing.TB, r events.DynamoDBEventRecord) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// 5. Unknown item identifiers.

func TestUnknownItemIdentifierFailsWholeBatch(t *testing.T) {
	t.Parallel()
	const items = 10
	unknown := func(seq string) events.DynamoDBEventResponse {
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: seq}}}
	}

	t.Run("retried whole", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		putItems(t, f.c.DB, f.table, 0, items)
		oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
		rec := &recorder{behave: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if call == 0 {
				// A valid failure late in the batch plus an unknown one.
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
					{ItemIdentifier: ev.Records[len(ev.Records)-1].Change.SequenceNumber}, {ItemIdentifier: "no-such-record"},
				}}, nil
			}
			return events.DynamoDBEventResponse{}, nil
		}}
		var mu sync.Mutex
		var stats []stream.BatchStats
		r := newRunner(t, f.c.Streams, f.arn, "unknown")
		r.OnBatch = func(b stream.BatchStats) { mu.Lock(); stats = append(stats, b); mu.Unlock() }
		run := start(t, r, rec.handle)
		waitCheckpoint(t, r.Checkpoints, "unknown", f.shard, oracle[items-1])
		run.stop()

		calls := rec.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d calls, want 2 (the failed batch and its retry)", len(calls))
		}
		if diff := cmp.Diff(oracle, seqsOf(calls[0])); diff != "" {
			t.Fatalf("first call (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(seqsOf(calls[0]), seqsOf(calls[1])); diff != "" {
			t.Fatalf("the retry is not the whole batch (-want +got):\n%s", diff)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(stats) != 2 || !stats[0].Failed || stats[1].Failed {
			t.Errorf("OnBatch stats %+v: want the first failed and the second not", stats)
		}
	})

	t.Run("dead-lettered whole", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		putItems(t, f.c.DB, f.table, 0, items)
		oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
		rec := &recorder{behave: func(int, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return unknown("no-such-record"), nil
		}}
		r := newRunner(t, f.c.Streams, f.arn, "unknown")
		r.MaxRetries = stream.Retries(1)
		dls := r.DeadLetters.(*stream.MemoryDeadLetters)
		run := start(t, r, rec.handle)
		waitCheckpoint(t, r.Checkpoints, "unknown", f.shard, oracle[items-1])
		run.stop()

		all := dls.All()
		if len(all) != 1 {
			t.Fatalf("%d dead letters, want 1", len(all))
		}
		if diff := cmp.Diff(oracle, seqsOf(all[0].Event.Records)); diff != "" {
			t.Errorf("dead-lettered records (-want +got):\n%s", diff)
		}
		if !strings.Contains(all[0].Error, `unknown item "no-such-record"`) || all[0].Attempts != 2 {
			t.Errorf("dead letter error %q after %d attempts", all[0].Error, all[0].Attempts)
		}
		for i, c := range rec.snapshot() {
			if diff := cmp.Diff(oracle, seqsOf(c)); diff != "" {
				t.Errorf("call %d is not the whole batch (-want +got):\n%s", i, diff)
			}
		}
	})
}

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
// 8. OnBatch.

func TestOnBatchReportsEveryCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 25
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))

	var mu sync.Mutex
	var called []time.Time // when each handler call began
	var stats []stream.BatchStats
	var reported []time.Time // when each OnBatch came
	rec := &recorder{behave: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		called = append(called, time.Now())
		mu.Unlock()
		if call == 0 {
			return events.DynamoDBEventResponse{}, fmt.Errorf("first call fails")
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	r := newRunner(t, f.c.Streams, f.arn, "metrics")
	r.BatchSize = 10
	r.OnBatch = func(b stream.BatchStats) {
		mu.Lock()
		stats = append(stats, b)
		reported = append(reported, time.Now())
		mu.Unlock()
	}
	run := start(t, r, rec.handle)
	waitCheckpoint(t, r.Checkpoints, "metrics", f.shard, oracle[items-1])
	run.stop()

	calls := rec.snapshot()
	mu.Lock()
	defer mu.Unlock()
	if len(stats) != len(calls) || len(calls) < 4 {
		t.Fatalf("%d OnBatch reports for %d handler calls (want equal, at least 4)", len(stats), len(calls))
	}
	total := 0
	for i, st := range stats {
		wantAttempt, wantFailed := 1, false
		switch i {
		case 0:
			wantFailed = true
		case 1:
			wantAttempt = 2
		}
		if st.Consumer != "metrics" || st.ShardID != f.shard || st.Records != len(calls[i]) || st.Attempt != wantAttempt || st.Failed != wantFailed {
			t.Errorf("report %d = %+v; want consumer metrics, shard %s, %d records, attempt %d, failed %v", i, st, f.shard, len(calls[i]), wantAttempt, wantFailed)
		}
		// Iterator age, as Lambda's, is the newest record's age when the
		// batch is handed over: from its creation time to a moment after
		// the previous report and before the handler began.
		newest := calls[i][len(calls[i])-1].Change.ApproximateCreationDateTime.Time
		var lo time.Duration
		if i > 0 {
			lo = reported[i-1].Sub(newest)
		}
		hi := called[i].Sub(newest)
		if st.IteratorAge < 0 || st.IteratorAge < lo || st.IteratorAge > hi {
			t.Errorf("report %d: IteratorAge %s outside [%s, %s]", i, st.IteratorAge, lo, hi)
		}
		// Duration is the handler's time, within the span between reports.
		if st.Duration < 0 || i > 0 && st.Duration > reported[i].Sub(reported[i-1]) {
			t.Errorf("report %d: Duration %s", i, st.Duration)
		}
		if !st.Failed {
			total += st.Records
		}
	}
	if total != items {
		t.Errorf("successful reports cover %d records, want %d", total, items)
	}
}

// ---------------------------------------------------------------------------
// 9. Configuration.

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, api := ddblocal.Clients(ddblocal.Endpoint())
	const arn = "arn:aws:dynamodb:ddblocal:000000000000:table/none/stream/2024-01-01T00:00:00.000"
	valid := func() *stream.Runner {
		return &stream.Runner{
			Config:      stream.Config{StreamARN: arn, Consumer: "c"},
			API:         api,
			Checkpoints: &stream.MemoryCheckpoints{},
			DeadLetters: &stream.MemoryDeadLetters{},
			Logger:      testLogger(t),
		}
	}
	cases := []struct {
		name    string
		change  func(r *stream.Runner)
		wantErr string // "" means valid
	}{
		{"defaults", func(*stream.Runner) {}, ""},
		{"BatchSize 1", func(r *stream.Runner) { r.BatchSize = 1 }, ""},
		{"BatchSize 10000", func(r *stream.Runner) { r.BatchSize = 10000 }, ""},
		{"MaxRetries forever", func(r *stream.Runner) { r.MaxRetries = stream.Retries(stream.Forever) }, ""},
		{"no Consumer", func(r *stream.Runner) { r.Consumer = "" }, "Consumer is required"},
		{"no StreamARN", func(r *stream.Runner) { r.StreamARN = "" }, "StreamARN is required"},
		{"BatchSize negative", func(r *stream.Runner) { r.BatchSize = -1 }, "BatchSize -1 out of range"},
		{"BatchSize too big", func(r *stream.Runner) { r.BatchSize = 10001 }, "BatchSize 10001 out of range"},
		{"BatchWindow negative", func(r *stream.Runner) { r.BatchWindow = -time.Second }, "BatchWindow"},
		{"BatchWindow too long", func(r *stream.Runner) { r.BatchWindow = 301 * time.Second }, "BatchWindow"},
		{"MaxRetries none", func(r *stream.Runner) { r.MaxRetries = stream.Retries(0) }, ""},
		{"MaxRetries below -1", func(r *stream.Runner) { r.MaxRetries = stream.Retries(-2) }, "MaxRetries -2"},
		{"MaxRetries above 10000", func(r *stream.Runner) { r.MaxRetries = stream.Retries(10001) }, "MaxRetries 10001"},
		{"StartingPosition unknown", func(r *stream.Runner) { r.StartingPosition = "AT_TIMESTAMP" }, `StartingPosition "AT_TIMESTAMP"`},
		{"no API", func(r *stream.Runner) { r.API = nil }, "needs API"},
		{"no Checkpoints", func(r *stream.Runner) { r.Checkpoints = nil }, "needs API, Checkpoints"},
		{"no DeadLetters", func(r *stream.Runner) { r.DeadLetters = nil }, "DeadLetters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.change(r)
			// A cancelled context: a valid runner returns nil at once, an
			// invalid one its configuration error.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := r.Run(ctx, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return events.DynamoDBEventResponse{}, nil
			})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Run: %v, want a valid configuration", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Run: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 10. File dead letters, read back and resubmitted.

func TestFileDeadLettersResubmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 10
	poisonIdx := []int{3, 7}
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
	poison := []string{oracle[poisonIdx[0]], oracle[poisonIdx[1]]}

	path := filepath.Join(t.TempDir(), "deadletters", "projector.jsonl")
	rec := &recorder{behave: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if slices.Contains(poison, r.Change.SequenceNumber) {
				return events.DynamoDBEventResponse{}, fmt.Errorf("cannot project %s", r.Change.SequenceNumber)
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	r := newRunner(t, f.c.Streams, f.arn, "projector")
	r.MaxRetries = stream.Retries(1)
	r.NoBisect = false
	r.DeadLetters = &stream.FileDeadLetters{Path: path}
	run := start(t, r, rec.handle)
	waitCheckpoint(t, r.Checkpoints, "projector", f.shard, oracle[items-1])
	run.stop()

	dls, err := stream.ReadDeadLetters(path)
	if err != nil {
		t.Fatalf("ReadDeadLetters: %v", err)
	}
	if len(dls) != 2 {
		t.Fatalf("%d dead letters in %s, want 2", len(dls), path)
	}
	calls := rec.snapshot()
	for i, dl := range dls {
		if len(dl.Event.Records) != 1 || dl.Event.Records[0].Change.SequenceNumber != poison[i] {
			t.Fatalf("dead letter %d holds %v, want [%s]", i, seqsOf(dl.Event.Records), poison[i])
		}
		if dl.Consumer != "projector" || dl.StreamARN != f.arn || dl.ShardID != f.shard || dl.Attempts != 2 ||
			dl.FirstSequenceNumber != poison[i] || dl.LastSequenceNumber != poison[i] || !strings.Contains(dl.Error, "cannot project") || dl.FailedAt.IsZero() {
			t.Errorf("dead letter %d envelope: %+v", i, dl)
		}
		// The record survives the file byte for byte (as JSON).
		if diff := cmp.Diff(recordJSON(t, findRecord(calls, poison[i])), recordJSON(t, dl.Event.Records[0])); diff != "" {
			t.Errorf("dead letter %d: record changed in the file:\n%s", i, diff)
		}
	}

	ctx := context.Background()
	// Still failing: Resubmit reports it, for an error and for item failures.
	for i, dl := range dls {
		if err := stream.Resubmit(ctx, rec.handle, dl); err == nil || !strings.Contains(err.Error(), "cannot project") {
			t.Errorf("Resubmit %d to the failing handler: %v", i, err)
		}
		err := stream.Resubmit(ctx, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
		}, dl)
		if err == nil || !strings.Contains(err.Error(), poison[i]) {
			t.Errorf("Resubmit %d with an item failure: %v", i, err)
		}
		if err := stream.Resubmit(ctx, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			panic("still broken")
		}, dl); err == nil || !strings.Contains(err.Error(), "still broken") {
			t.Errorf("Resubmit %d to a panicking handler: %v", i, err)
		}
	}
	// Fixed: the handler gets the very records and decodes them.
	var got []stream.Change
	fixed := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			c, err := stream.Decode(r)
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			got = append(got, c)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	for i, dl := range dls {
		if err := stream.Resubmit(ctx, fixed, dl); err != nil {
			t.Fatalf("Resubmit %d: %v", i, err)
		}
	}
	if len(got) != 2 {
		t.Fatalf("the fixed handler got %d records, want 2", len(got))
	}
	for i, c := range got {
		if c.Kind != stream.Insert || c.SequenceNumber != poison[i] || c.EventID == "" {
			t.Errorf("resubmitted record %d: kind %s seq %s eventID %q", i, c.Kind, c.SequenceNumber, c.EventID)
		}
		if diff := cmp.Diff(testItem(poisonIdx[i], "1"), c.New, cmpAV...); diff != "" {
			t.Errorf("resubmitted record %d new image (-want +got):\n%s", i, diff)
		}
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

// A handler's dead letters in a table (Lambda's case: no disk) hold the
// records themselves: listed back, resubmitted to the fixed handler, and
// deleted once done.
func TestTableDeadLettersResubmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	putItems(t, f.c.DB, f.table, 0, 4)
	var recs []events.DynamoDBEventRecord
	for _, r := range readStream(t, f.c.Streams, f.arn, 4) {
		lr, err := attr.LambdaRecord(r, f.arn)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, lr)
	}
	ctx := context.Background()
	// The table itself serves as a PK/SK table for the dead letters here.
	dls := &stream.TableDeadLetters{DB: f.c.DB, Table: f.table}
	bad := recs[2].Change.SequenceNumber
	broken := stream.Keyed{DeadLetters: dls, Consumer: "projector"}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
		if r.Change.SequenceNumber == bad {
			return stream.Permanent(fmt.Errorf("cannot decode %s", bad))
		}
		return nil
	}))
	resp, err := broken(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %+v: the permanent failure should be dead-lettered, not reported", err, resp.BatchItemFailures)
	}
	list, err := dls.List(ctx, "projector")
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %d dead letters, want 1", err, len(list))
	}
	dl := list[0]
	if len(dl.Event.Records) != 1 || dl.FirstSequenceNumber != bad || !strings.Contains(dl.Error, "cannot decode") || dl.StreamARN != f.arn {
		t.Fatalf("dead letter %+v", dl)
	}
	if diff := cmp.Diff(recordJSON(t, recs[2]), recordJSON(t, dl.Event.Records[0])); diff != "" {
		t.Errorf("record changed in the table:\n%s", diff)
	}
	var got []string
	fixed := stream.Keyed{}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
		got = append(got, r.Change.SequenceNumber)
		return nil
	}))
	if err := stream.Resubmit(ctx, fixed, dl); err != nil {
		t.Fatalf("Resubmit: %v", err)
	}
	if len(got) != 1 || got[0] != bad {
		t.Errorf("the fixed handler got %v, want [%s]", got, bad)
	}
	if err := dls.Delete(ctx, dl); err != nil {
		t.Fatal(err)
	}
	if list, err := dls.List(ctx, "projector"); err != nil || len(list) != 0 {
		t.Errorf("after Delete: %v, %d left", err, len(list))
	}
}

// newTable creates a table keyed PK, SK with a NEW_AND_OLD_IMAGES stream,
// deleted when the test ends: its clients, its name and its stream.
func newTable(t testing.TB) (*ddblocal.Table, string, string) {
	t.Helper()
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	return tbl, tbl.Name, tbl.StreamARN
}

// The checkpoint moves with every batch but is written at most once per
// CheckpointInterval while the shard is read; stopping writes the final
// position at once.
func TestCheckpointInterval(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 60
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
	r := newRunner(t, f.c.Streams, f.arn, "spaced")
	r.BatchSize = 1 // 60 batches, each moving the position
	r.CheckpointInterval = time.Hour
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		time.Sleep(2 * time.Millisecond)
		return events.DynamoDBEventResponse{}, nil
	}
	run := start(t, r, h)
	waitFor(t, "every record handled", func() bool { return r.Stats().RecordsHandled == items })
	if st := r.Stats(); st.CheckpointWrites > 1 {
		t.Errorf("%d checkpoint writes for %d batches within one interval, want at most 1", st.CheckpointWrites, items)
	}
	run.stop()
	if got := checkpointOf(t, r.Checkpoints, "spaced", f.shard); got != oracle[items-1] {
		t.Errorf("after stop the checkpoint is %s, want the last record %s", got, oracle[items-1])
	}
}

// A Runner without a dead-letter sink (its on-failure destination) does
// not start, and says which field is missing. (Lambda's mapping runs
// without a destination and drops what it gives up on; the Runner refuses
// to, so that nothing is lost without a word: the mapping's optional
// destination is https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html.)
func TestRunNeedsDeadLetters(t *testing.T) {
	f := newFixture(t)
	r := newRunner(t, f.c.Streams, f.arn, "no-sink")
	r.DeadLetters = nil
	err := r.Run(context.Background(), func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "DeadLetters (its on-failure destination) not set") {
		t.Errorf("Run without DeadLetters: %v", err)
	}
}
