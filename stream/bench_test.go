package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// benchRecords is how many records the throughput benchmarks read.
const benchRecords = 20_000

// benchTimeout bounds one iteration: a safety net, not a measurement.
const benchTimeout = 5 * time.Minute

// batchWrite writes items 0..n-1 with BatchWriteItem from several
// goroutines, retrying unprocessed items.
func batchWrite(b *testing.B, db *dynamodb.Client, table string, n int) {
	b.Helper()
	const workers = 8
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for w := range workers {
		wg.Go(func() {
			for start := w * 25; start < n && failed.Load() == nil; start += workers * 25 {
				var reqs []ddbtypes.WriteRequest
				for i := start; i < min(start+25, n); i++ {
					reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: testItem(i, "1")}})
				}
				pending := map[string][]ddbtypes.WriteRequest{table: reqs}
				for len(pending) > 0 {
					out, err := db.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: pending})
					if err != nil {
						failed.Store(&err)
						return
					}
					pending = out.UnprocessedItems
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("BatchWriteItem: %v", *err)
	}
}

func benchRunner(api stream.API, arn, consumer string) *stream.Runner {
	return &stream.Runner{
		Config:      stream.Config{StreamARN: arn, Consumer: consumer},
		API:         api,
		Checkpoints: &stream.MemoryCheckpoints{},
		DeadLetters: &stream.MemoryDeadLetters{},
		Logger:      slog.New(slog.DiscardHandler),
	}
}

// BenchmarkRunnerDelivery measures how fast a Runner delivers a backlog of
// benchRecords records to a handler that does nothing. Every iteration is a
// new consumer, so it reads the shard from TRIM_HORIZON again.
func BenchmarkRunnerDelivery(b *testing.B) {
	f := newFixture(b)
	batchWrite(b, f.c.DB, f.table, benchRecords)
	readStream(b, f.c.Streams, f.arn, benchRecords) // all of them are in the stream

	for _, batchSize := range []int{1000, 100} {
		b.Run(fmt.Sprintf("batch=%d", batchSize), func(b *testing.B) {
			for i := range b.N {
				var got atomic.Int64
				done := make(chan struct{})
				var once sync.Once
				h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
					if got.Add(int64(len(ev.Records))) >= benchRecords {
						once.Do(func() { close(done) })
					}
					return events.DynamoDBEventResponse{}, nil
				}
				r := benchRunner(f.c.Streams, f.arn, fmt.Sprintf("bench-%d-%d-%d", batchSize, b.N, i))
				r.BatchSize = batchSize
				r.PollInterval = 20 * time.Millisecond
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() { errc <- r.Run(ctx, h) }()
				select {
				case <-done:
				case <-time.After(benchTimeout):
					b.Fatalf("%d of %d records after %s", got.Load(), benchRecords, benchTimeout)
				}
				cancel()
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				if n := got.Load(); n != benchRecords {
					b.Fatalf("handler got %d records, want %d", n, benchRecords)
				}
			}
			b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkRawGetRecords reads the same backlog with plain GetRecords calls
// of 1000 records, without and with the conversion to Lambda's record
// shape: the floor under BenchmarkRunnerDelivery.
func BenchmarkRawGetRecords(b *testing.B) {
	f := newFixture(b)
	batchWrite(b, f.c.DB, f.table, benchRecords)
	readStream(b, f.c.Streams, f.arn, benchRecords)
	ctx := context.Background()

	for _, convert := range []bool{false, true} {
		b.Run(fmt.Sprintf("convert=%v", convert), func(b *testing.B) {
			for range b.N {
				it, err := f.c.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
					StreamArn: aws.String(f.arn), ShardId: aws.String(f.shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
				})
				if err != nil {
					b.Fatal(err)
				}
				iter := it.ShardIterator
				for n := 0; n < benchRecords; {
					out, err := f.c.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
					if err != nil {
						b.Fatal(err)
					}
					if len(out.Records) == 0 {
						b.Fatalf("empty read after %d of %d records", n, benchRecords)
					}
					if convert {
						for _, rec := range out.Records {
							if _, err := attr.LambdaRecord(rec, f.arn); err != nil {
								b.Fatal(err)
							}
						}
					}
					n += len(out.Records)
					iter = out.NextShardIterator
				}
			}
			b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkCommitToHandlerLag measures, on a Runner tailing the shard, the
// time from a PutItem call until the handler holds its record, one item at
// a time: ns/op is that lag plus the bookkeeping; ms/op, p50-ms and p99-ms
// are the lag alone. The default PollInterval (100 ms) dominates it.
func BenchmarkCommitToHandlerLag(b *testing.B) {
	f := newFixture(b)
	for _, tc := range []struct {
		name string
		poll time.Duration
	}{
		{"poll=100ms(default)", 0},
		{"poll=20ms", 20 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var mu sync.Mutex
			seenAt := map[string]time.Time{}
			notify := make(chan struct{}, 1)
			h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				now := time.Now()
				mu.Lock()
				for _, r := range ev.Records {
					seenAt[r.Change.Keys["PK"].String()] = now
				}
				mu.Unlock()
				select {
				case notify <- struct{}{}:
				default:
				}
				return events.DynamoDBEventResponse{}, nil
			}
			waitSeen := func(pk string) time.Time {
				deadline := time.After(benchTimeout)
				for {
					mu.Lock()
					at, ok := seenAt[pk]
					mu.Unlock()
					if ok {
						return at
					}
					select {
					case <-notify:
					case <-deadline:
						b.Fatalf("record %s not handled after %s", pk, benchTimeout)
					}
				}
			}
			put := func(pk string) time.Time {
				item := testItem(0, "1")
				item["PK"] = s(pk)
				t0 := time.Now()
				putItem(b, f.c.DB, f.table, item)
				return t0
			}

			r := benchRunner(f.c.Streams, f.arn, fmt.Sprintf("lag-%s-%d", tc.name, b.N))
			r.PollInterval = tc.poll
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- r.Run(ctx, h) }()
			defer func() {
				cancel()
				if err := <-errc; err != nil {
					b.Error(err)
				}
			}()
			// Once the warm-up record is handled the runner is tailing.
			warm := fmt.Sprintf("LAG#%s#%d#warm", tc.name, b.N)
			put(warm)
			waitSeen(warm)

			lags := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				pk := fmt.Sprintf("LAG#%s#%d#%d", tc.name, b.N, i)
				t0 := put(pk)
				lags = append(lags, waitSeen(pk).Sub(t0))
			}
			b.StopTimer()
			var sum time.Duration
			for _, l := range lags {
				sum += l
			}
			slices.Sort(lags)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(sum/time.Duration(len(lags))), "ms/op")
			b.ReportMetric(ms(lags[(len(lags)-1)/2]), "p50-ms")
			b.ReportMetric(ms(lags[(len(lags)*99)/100]), "p99-ms")
		})
	}
}
