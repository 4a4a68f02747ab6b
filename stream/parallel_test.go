package stream_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/internal/prop"
)

// keyedItem is item i of partition key K#<k>, version rev.
func keyedItem(k, i int, rev string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"PK": s(fmt.Sprintf("K#%d", k)), "SK": s(fmt.Sprintf("I#%03d", i)), "rev": s(rev)}
}

// faultPlan says how each record behaves: how many times it fails before it
// succeeds, or that it always fails (poison).
type faultPlan struct {
	failures map[string]int
	poison   map[string]bool

	mu       sync.Mutex
	attempts map[string]int
}

func (p *faultPlan) try(seq string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts[seq]++
	if p.poison[seq] {
		return fmt.Errorf("poison %s", seq)
	}
	if p.attempts[seq] <= p.failures[seq] {
		return fmt.Errorf("transient failure %d of %s", p.attempts[seq], seq)
	}
	return nil
}

// finishedCheckpoints fails the property when a checkpoint passes a record
// that is neither applied nor dead-lettered.
type finishedCheckpoints struct {
	stream.MemoryCheckpoints
	order     []string // the stream's sequence numbers
	finished  func(seq string) bool
	mu        sync.Mutex
	violation string
	puts      []string
}

func (c *finishedCheckpoints) Put(ctx context.Context, consumer, shard, seq string) error {
	c.mu.Lock()
	c.puts = append(c.puts, seq)
	for _, q := range c.order {
		if seq != "SHARD_END" && seqLess(seq, q) {
			break
		}
		if !c.finished(q) && c.violation == "" {
			c.violation = fmt.Sprintf("checkpoint %s passes %s, which is neither handled nor dead-lettered", seq, q)
		}
	}
	c.mu.Unlock()
	return c.MemoryCheckpoints.Put(ctx, consumer, shard, seq)
}

// Under random ParallelizationFactor, batch sizes, transient failures,
// poison records, bisection and a restart mid-stream: each key's records
// are applied in stream order — none before every earlier record of its key
// is applied or dead-lettered — the other keys go on past a failed one, every
// record ends up applied or dead-lettered, and no checkpoint ever passes a
// record that is neither.
func TestRunnerPropertyOrderAndCheckpoints(t *testing.T) {
	prop.SetChecks(t, 50)
	f := newFixture(t)
	const keys, perKey = 9, 14
	// Interleave the keys' items, and modify some: a few records per item.
	n := 0
	for i := range perKey {
		for k := range keys {
			putItem(t, f.c.DB, f.table, keyedItem(k, i, "1"))
			n++
			if (i+k)%5 == 0 {
				putItem(t, f.c.DB, f.table, keyedItem(k, i, "2"))
				n++
			}
		}
	}
	raw := readStream(t, f.c.Streams, f.arn, n)
	order := rawSeqs(raw)
	pkOfSeq := map[string]string{}
	for _, r := range raw {
		pkOfSeq[*r.Dynamodb.SequenceNumber] = r.Dynamodb.Keys["PK"].(*streamtypes.AttributeValueMemberS).Value
	}
	var run atomic.Int64

	prop.Check(t, func(rt *prop.T) {
		pf := prop.IntRange(1, 10).Draw(rt, "parallelization")
		batch := prop.IntRange(1, 40).Draw(rt, "batchSize")
		bisect := prop.Bool().Draw(rt, "bisect")
		plan := &faultPlan{failures: map[string]int{}, poison: map[string]bool{}, attempts: map[string]int{}}
		for _, q := range order {
			switch prop.IntRange(0, 29).Draw(rt, "fault") {
			case 0:
				plan.poison[q] = true
			case 1, 2, 3:
				plan.failures[q] = prop.IntRange(1, 2).Draw(rt, "failures")
			}
		}
		crashAfter := prop.IntRange(0, 30).Draw(rt, "crashAfterCalls") // 0: no crash

		var all []events.DynamoDBEventRecord
		for _, q := range order {
			all = append(all, events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{SequenceNumber: q, Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pkOfSeq[q])}}})
		}
		a := newApplied(all)
		dls := &stream.MemoryDeadLetters{}
		dead := func(seq string) bool {
			for _, dl := range dls.All() {
				for _, r := range dl.Event.Records {
					if r.Change.SequenceNumber == seq {
						return true
					}
				}
			}
			return false
		}
		finished := func(seq string) bool {
			a.mu.Lock()
			ok := a.done[seq]
			a.mu.Unlock()
			return ok || dead(seq)
		}
		// A dead-lettered record counts as finished for the ordering rule.
		a.dead = dead
		cps := &finishedCheckpoints{order: order, finished: finished}
		consumer := fmt.Sprintf("prop-%d", run.Add(1))
		var calls atomic.Int64
		crashed := make(chan struct{})
		var crashOnce sync.Once
		h := stream.Keyed{Concurrency: 4}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
			if err := plan.try(r.Change.SequenceNumber); err != nil {
				return err
			}
			a.apply(r)
			return nil
		}))
		counted := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if c := calls.Add(1); crashAfter > 0 && c == int64(crashAfter) {
				crashOnce.Do(func() { close(crashed) })
			}
			return h(ctx, ev)
		}
		newR := func() *stream.Runner {
			r := newRunner(t, f.c.Streams, f.arn, consumer)
			r.ParallelizationFactor, r.BatchSize, r.NoBisect, r.MaxRetries = pf, batch, !bisect, stream.Retries(2)
			r.PollInterval = 5 * time.Millisecond
			r.Checkpoints, r.DeadLetters = cps, dls
			return r
		}
		last := order[len(order)-1]
		first := start(t, newR(), counted)
		second := first
		if crashAfter > 0 {
			// Stop it after that many calls, as a crash would: what is
			// under way is cut short. Then a new runner takes over from
			// the checkpoint.
			deadline := time.Now().Add(waitTimeout)
		wait:
			for checkpointOf(t, cps, consumer, f.shard) != last && time.Now().Before(deadline) {
				select {
				case <-crashed:
					break wait
				case <-time.After(2 * time.Millisecond):
				}
			}
			first.stop()
			second = start(t, newR(), counted)
		}
		deadline := time.Now().Add(waitTimeout)
		for checkpointOf(t, cps, consumer, f.shard) != last {
			if time.Now().After(deadline) {
				rt.Fatalf("checkpoint %s after %s, want %s (pf %d, batch %d)", checkpointOf(t, cps, consumer, f.shard), waitTimeout, last, pf, batch)
			}
			time.Sleep(5 * time.Millisecond)
		}
		second.stop()
		if a.violation != "" {
			rt.Fatal(a.violation)
		}
		if cps.violation != "" {
			rt.Fatal(cps.violation)
		}
		for _, q := range order {
			applied, isDead := finished(q) && !dead(q), dead(q)
			switch {
			case plan.poison[q] && !isDead:
				rt.Fatalf("poison record %s was not dead-lettered", q)
			case !plan.poison[q] && !applied && !isDead:
				rt.Fatalf("record %s neither applied nor dead-lettered", q)
			}
		}
		// Without bisection a poison record takes its whole batch to the
		// dead letters; with it, only itself and what fails with it.
		if bisect {
			for _, dl := range dls.All() {
				for _, r := range dl.Event.Records {
					if !plan.poison[r.Change.SequenceNumber] && plan.failures[r.Change.SequenceNumber] == 0 {
						rt.Fatalf("healthy record %s dead-lettered with bisection on", r.Change.SequenceNumber)
					}
				}
			}
		}
		if !slices.IsSortedFunc(cps.puts, func(x, y string) int {
			if x == y {
				return 0
			}
			if y == "SHARD_END" || seqLess(x, y) {
				return -1
			}
			return 1
		}) {
			rt.Fatalf("checkpoints went backwards: %v", cps.puts)
		}
	})
}

// With a ParallelizationFactor of 4, batches of different keys are handled
// at the same time — up to 4, never two of one key — and with 1 one at a
// time.
func TestParallelizationFactorOverlapsBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const keys, perKey = 16, 6
	for i := range perKey {
		for k := range keys {
			putItem(t, f.c.DB, f.table, keyedItem(k, i, "1"))
		}
	}
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, keys*perKey))
	for _, pf := range []int{1, 4} {
		t.Run(fmt.Sprintf("pf=%d", pf), func(t *testing.T) {
			var mu sync.Mutex
			inFlight, peak := 0, 0
			keysInFlight := map[string]bool{}
			var clash string
			var got []string
			h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				mu.Lock()
				inFlight++
				peak = max(peak, inFlight)
				mine := map[string]bool{}
				for _, r := range ev.Records {
					k := r.Change.Keys["PK"].String()
					if keysInFlight[k] && !mine[k] && clash == "" {
						clash = fmt.Sprintf("key %s in two batches at once", k)
					}
					keysInFlight[k], mine[k] = true, true
					got = append(got, r.Change.SequenceNumber)
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				inFlight--
				for k := range mine {
					delete(keysInFlight, k)
				}
				mu.Unlock()
				return events.DynamoDBEventResponse{}, nil
			}
			r := newRunner(t, f.c.Streams, f.arn, fmt.Sprintf("overlap-%d", pf))
			r.ParallelizationFactor, r.BatchSize = pf, 5
			run := start(t, r, h)
			waitCheckpoint(t, r.Checkpoints, r.Consumer, f.shard, oracle[len(oracle)-1])
			run.stop()
			mu.Lock()
			defer mu.Unlock()
			if clash != "" {
				t.Fatal(clash)
			}
			if pf == 1 && peak != 1 || pf > 1 && (peak < 2 || peak > pf) {
				t.Fatalf("%d batches at once with ParallelizationFactor %d", peak, pf)
			}
			slices.SortFunc(got, func(x, y string) int {
				if seqLess(x, y) {
					return -1
				}
				return 1
			})
			if !slices.Equal(got, oracle) {
				t.Fatalf("delivered %d records, want each of the %d once", len(got), len(oracle))
			}
		})
	}
}
