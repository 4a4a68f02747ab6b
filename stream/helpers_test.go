package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"slices"
	"strconv"
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

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
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

// newTable creates a table keyed PK, SK with a NEW_AND_OLD_IMAGES stream,
// deleted when the test ends: its clients, its name and its stream.
func newTable(t testing.TB) (*ddblocal.Table, string, string) {
	t.Helper()
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	return tbl, tbl.Name, tbl.StreamARN
}
