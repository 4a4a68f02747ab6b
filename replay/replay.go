package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// Capture reads every record now in a stream, shard by shard (parents
// before children, each shard in sequence order), and returns them as one
// event. It stops reading a shard at its end or, for an open shard, after
// an empty read (DynamoDB Local makes a write visible at once).
func Capture(ctx context.Context, api stream.API, streamARN string) (events.DynamoDBEvent, error) {
	shards, err := stream.Shards(ctx, api, streamARN)
	if err != nil {
		return events.DynamoDBEvent{}, fmt.Errorf("replay: %w", err)
	}
	var ev events.DynamoDBEvent
	for _, s := range shards {
		it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(streamARN), ShardId: s.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return ev, fmt.Errorf("replay: shard iterator: %w", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return ev, fmt.Errorf("replay: get records: %w", err)
			}
			for _, r := range out.Records {
				lr, err := attr.LambdaRecord(r, streamARN)
				if err != nil {
					return ev, fmt.Errorf("replay: %w", err)
				}
				ev.Records = append(ev.Records, lr)
			}
			if len(out.Records) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return ev, nil
}

// Save writes an event as indented JSON (a fixture for testdata/).
func Save(path string, ev events.DynamoDBEvent) error {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads an event written by Save (or any Lambda DynamoDB event JSON).
func Load(path string) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	b, err := os.ReadFile(path)
	if err == nil {
		err = attr.UnmarshalJSON(b, &ev)
	}
	if err != nil {
		return ev, fmt.Errorf("replay: load %s: %w", path, err)
	}
	return ev, nil
}

// Schedule is one way of delivering a captured stream.
type Schedule struct {
	Name string
	Seed uint64
	// Duplicate delivers every record twice: the whole stream, then all of
	// it again (as after a lost checkpoint), each item's order kept.
	Duplicate bool
	// Shuffle interleaves different items' records at random; each item's
	// records keep their order.
	Shuffle bool
	// MaxBatch bounds batch sizes; with RandomBatches each batch gets a
	// random size from 1 to MaxBatch (default 100).
	MaxBatch      int
	RandomBatches bool
	// FailureRate is the chance that a handler call fails — before the
	// handler runs, after it ran (its effects stay), or by reporting one
	// random record of the batch as failed. Failed batches are retried from
	// the lowest failed record, as Lambda does.
	FailureRate float64
	// ParallelizationFactor (1–10; 0 is 1) spreads the records over that
	// many lanes by partition key, as Lambda does, and delivers the lanes
	// at the same time, each in order with its own batches and failures:
	// handler calls overlap.
	ParallelizationFactor int
	// PartitionKey is the attribute the lanes hash (default "PK"); a record
	// without it is placed by its item.
	PartitionKey string
	// SkipContractCheck turns off CheckResponse: each handler answer is then
	// read as Lambda reads it (a response that breaks the contract is a
	// complete failure or a success, as the rule says), instead of failing
	// the delivery with a *ContractError.
	SkipContractCheck bool
}

// Parallel returns copies of schedules with a ParallelizationFactor of pf,
// their names saying so.
func Parallel(ss []Schedule, pf int) []Schedule {
	out := make([]Schedule, len(ss))
	for i, s := range ss {
		s.ParallelizationFactor = pf
		s.Name = fmt.Sprintf("%s, parallelization %d", s.Name, pf)
		out[i] = s
	}
	return out
}

// AsCaptured delivers the stream in order, once, in batches of 100.
var AsCaptured = Schedule{Name: "as captured", MaxBatch: 100}

// Schedules returns n random schedules derived from seed, each combining
// duplicates, shuffling, random batch sizes and a failure rate.
func Schedules(seed uint64, n int) []Schedule {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]Schedule, n)
	for i := range out {
		s := Schedule{
			Seed:          rng.Uint64(),
			Duplicate:     rng.IntN(2) == 0,
			Shuffle:       true,
			RandomBatches: true,
			MaxBatch:      1 + rng.IntN(20),
			FailureRate:   []float64{0, 0.1, 0.3}[rng.IntN(3)],
		}
		s.Name = fmt.Sprintf("random #%d (seed %d, dup %v, max batch %d, failures %.0f%%)", i+1, s.Seed, s.Duplicate, s.MaxBatch, s.FailureRate*100)
		out[i] = s
	}
	return out
}

// Stats count what a delivery did.
type Stats struct {
	Calls            int
	RecordsDelivered int
	InjectedFailures int
}

// maxAttempts bounds retries of one batch, so a handler that really fails
// ends the delivery with an error instead of looping.
const maxAttempts = 50

// Order returns the records of ev in the order a schedule delivers them.
func Order(ev events.DynamoDBEvent, s Schedule) []events.DynamoDBEventRecord {
	recs := append([]events.DynamoDBEventRecord(nil), ev.Records...)
	if s.Duplicate {
		recs = append(recs, ev.Records...)
	}
	if !s.Shuffle {
		return recs
	}
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	queues := map[string][]events.DynamoDBEventRecord{}
	var keys []string
	for _, r := range recs {
		k := itemKey(r)
		if _, ok := queues[k]; !ok {
			keys = append(keys, k)
		}
		queues[k] = append(queues[k], r)
	}
	out := make([]events.DynamoDBEventRecord, 0, len(recs))
	for len(keys) > 0 {
		i := rng.IntN(len(keys))
		k := keys[i]
		out = append(out, queues[k][0])
		if queues[k] = queues[k][1:]; len(queues[k]) == 0 {
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
		}
	}
	return out
}

func itemKey(r events.DynamoDBEventRecord) string {
	var b strings.Builder
	b.WriteString(r.EventSourceArn)
	b.WriteByte(0)
	for _, name := range []string{"PK", "SK"} {
		if v, ok := r.Change.Keys[name]; ok {
			b.WriteString(v.String())
		}
		b.WriteByte(0)
	}
	if b.Len() == len(r.EventSourceArn)+2 { // not PK/SK keys: use them all
		j, _ := json.Marshal(r.Change.Keys)
		b.Write(j)
	}
	return b.String()
}

// Deliver plays ev into h under schedule s, as Lambda's event source
// mapping would: batches in order; a batch that fails (an error, or
// BatchItemFailures) is retried from its lowest failed record. With a
// ParallelizationFactor above 1, the lanes are delivered concurrently.
func Deliver(ctx context.Context, ev events.DynamoDBEvent, h stream.Handler, s Schedule) (Stats, error) {
	recs := Order(ev, s)
	pf := max(s.ParallelizationFactor, 1)
	if pf > 10 {
		return Stats{}, fmt.Errorf("replay: %s: ParallelizationFactor %d out of range 1..10", s.Name, pf)
	}
	if pf == 1 {
		return deliverLane(ctx, recs, h, s, rand.New(rand.NewPCG(s.Seed, 2)))
	}
	pk := s.PartitionKey
	if pk == "" {
		pk = "PK"
	}
	key := stream.PartitionKey(pk)
	lanes := make([][]events.DynamoDBEventRecord, pf)
	for _, r := range recs {
		i := stream.Lane(key(r), pf)
		lanes[i] = append(lanes[i], r)
	}
	var (
		mu    sync.Mutex
		total Stats
		errs  []error
		wg    sync.WaitGroup
	)
	for i, lane := range lanes {
		wg.Go(func() {
			st, err := deliverLane(ctx, lane, h, s, rand.New(rand.NewPCG(s.Seed, uint64(100+i))))
			mu.Lock()
			defer mu.Unlock()
			total.Calls += st.Calls
			total.RecordsDelivered += st.RecordsDelivered
			total.InjectedFailures += st.InjectedFailures
			errs = append(errs, err)
		})
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// deliverLane delivers records in order, in batches, with retries.
func deliverLane(ctx context.Context, recs []events.DynamoDBEventRecord, h stream.Handler, s Schedule, rng *rand.Rand) (Stats, error) {
	var st Stats
	maxBatch := s.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 100
	}
	for len(recs) > 0 {
		n := maxBatch
		if s.RandomBatches {
			n = 1 + rng.IntN(maxBatch)
		}
		batch := recs[:min(n, len(recs))]
		for attempt := 1; ; attempt++ {
			if attempt > maxAttempts {
				return st, fmt.Errorf("replay: %s: batch starting at %s still failing after %d attempts", s.Name, batch[0].Change.SequenceNumber, maxAttempts)
			}
			failedAt, err := call(ctx, h, batch, s, rng, &st)
			if err != nil && failedAt < 0 {
				return st, err
			}
			if failedAt < 0 {
				break
			}
			batch = batch[failedAt:]
		}
		recs = recs[min(n, len(recs)):]
	}
	return st, nil
}

var errInjected = errors.New("replay: injected failure")

// call makes one handler call, maybe with an injected failure. It returns
// the index to retry from (-1: done).
func call(ctx context.Context, h stream.Handler, batch []events.DynamoDBEventRecord, s Schedule, rng *rand.Rand, st *Stats) (int, error) {
	inject := s.FailureRate > 0 && rng.Float64() < s.FailureRate
	mode := rng.IntN(3)
	st.Calls++
	if inject && mode == 0 { // fails before the handler runs
		st.InjectedFailures++
		return 0, nil
	}
	st.RecordsDelivered += len(batch)
	resp, err := h(ctx, events.DynamoDBEvent{Records: batch})
	if !s.SkipContractCheck {
		body, merr := json.Marshal(resp)
		if merr != nil {
			return -1, fmt.Errorf("replay: %s: the handler's response: %w", s.Name, merr)
		}
		if cerr := CheckResponse(batch, body, err); cerr != nil {
			return -1, fmt.Errorf("replay: %s: batch of %d from sequence number %s: %w", s.Name, len(batch), batch[0].Change.SequenceNumber, cerr)
		}
	}
	if err != nil {
		return 0, nil // a real failure: retried like any other
	}
	failedAt := -1
	for _, f := range resp.BatchItemFailures {
		i := indexOf(batch, f.ItemIdentifier)
		if i < 0 { // Lambda: a complete failure
			return 0, nil
		}
		if failedAt < 0 || i < failedAt {
			failedAt = i
		}
	}
	if inject {
		st.InjectedFailures++
		if mode == 1 { // crashed after its effects: the whole batch comes again
			return 0, nil
		}
		i := rng.IntN(len(batch)) // reports one record failed
		if failedAt < 0 || i < failedAt {
			failedAt = i
		}
	}
	return failedAt, nil
}

func indexOf(batch []events.DynamoDBEventRecord, seq string) int {
	for i := range batch {
		if batch[i].Change.SequenceNumber == seq {
			return i
		}
	}
	return -1
}

// Target is the consumer under test and its derived state.
type Target struct {
	Handler stream.Handler
	// Reset empties the derived state before each run.
	Reset func(ctx context.Context) error
	// State reads the derived state; runs are compared with go-cmp.
	State func(ctx context.Context) (any, error)
}

// Run is one schedule's outcome.
type Run struct {
	Schedule Schedule
	Stats    Stats
	// Diff is empty when the state equals the baseline's (go-cmp format:
	// -baseline +this run).
	Diff string
}

// Report is the outcome of Check.
type Report struct {
	Baseline any
	Runs     []Run
}

// Err lists the runs whose state differed from the baseline, or is nil.
func (r Report) Err() error {
	var b strings.Builder
	for _, run := range r.Runs {
		if run.Diff != "" {
			fmt.Fprintf(&b, "schedule %q: derived state differs (-as captured +this run):\n%s\n", run.Schedule.Name, run.Diff)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return errors.New(b.String())
}

// Check delivers ev into the target as captured (the baseline) and then
// under every schedule, resetting the derived state before each, and
// compares each run's state with the baseline's. opts go to cmp.Diff. An
// error means a run could not be completed; differences are in the Report.
func Check(ctx context.Context, ev events.DynamoDBEvent, t Target, schedules []Schedule, opts ...cmp.Option) (Report, error) {
	var rep Report
	runOnce := func(s Schedule) (any, Stats, error) {
		if err := t.Reset(ctx); err != nil {
			return nil, Stats{}, fmt.Errorf("replay: reset: %w", err)
		}
		st, err := Deliver(ctx, ev, t.Handler, s)
		if err != nil {
			return nil, st, err
		}
		state, err := t.State(ctx)
		if err != nil {
			return nil, st, fmt.Errorf("replay: read state: %w", err)
		}
		return state, st, nil
	}
	base, _, err := runOnce(AsCaptured)
	if err != nil {
		return rep, err
	}
	rep.Baseline = base
	for _, s := range schedules {
		state, st, err := runOnce(s)
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, Run{Schedule: s, Stats: st, Diff: cmp.Diff(base, state, opts...)})
	}
	return rep, nil
}
