package replay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// flaky is a handler whose failures depend only on what it was handed so
// far: a poison record always fails (reported in batchItemFailures), a
// flaky one fails its first two deliveries, and a record whose key is
// "boom" fails the whole call the first time. It records every call.
type flaky struct {
	mu        sync.Mutex
	poison    map[string]bool
	flaky     map[string]bool
	delivered map[string]int
	calls     []string
}

func newFlaky(poison, flakyOnes []string) *flaky {
	f := &flaky{poison: map[string]bool{}, flaky: map[string]bool{}, delivered: map[string]int{}}
	for _, p := range poison {
		f.poison[p] = true
	}
	for _, p := range flakyOnes {
		f.flaky[p] = true
	}
	return f
}

func (f *flaky) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, r := range ev.Records {
		ids = append(ids, r.Change.Keys["PK"].String())
	}
	f.calls = append(f.calls, strings.Join(ids, " "))
	for _, r := range ev.Records {
		pk := r.Change.Keys["PK"].String()
		f.delivered[pk]++
		n := f.delivered[pk]
		switch {
		case pk == "boom" && n == 1:
			return events.DynamoDBEventResponse{}, fmt.Errorf("the call failed at %s", pk)
		case f.poison[pk] || (f.flaky[pk] && n <= 2):
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
		}
	}
	return events.DynamoDBEventResponse{}, nil
}

func (f *flaky) result() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func deadKeys(dls []stream.DeadLetter) []string {
	var out []string
	for _, dl := range dls {
		var ids []string
		for _, r := range dl.Event.Records {
			ids = append(ids, r.Change.Keys["PK"].String())
		}
		out = append(out, fmt.Sprintf("%s (%d attempts)", strings.Join(ids, " "), dl.Attempts))
	}
	return out
}

// The Runner and the replay kit deliver, retry, bisect and dead-letter the
// same stream with the same failures in the same calls, because both
// follow stream.Policy: the kit's promise that a replay treats failures as
// the event source mapping and the Runner do, checked rather than kept by
// hand.
func TestRunnerAndKitDeliverAlike(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", ""))
	ctx := context.Background()
	var keys []string
	for i := range 24 {
		k := fmt.Sprintf("k%02d", i)
		switch i {
		case 5:
			k = "poison"
		case 9:
			k = "boom"
		case 14:
			k = "flaky"
		case 20:
			k = "poison2"
		}
		keys = append(keys, k)
		if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name),
			Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: k}}}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := replay.Capture(ctx, tbl.Streams, tbl.StreamARN)
	if err != nil || len(ev.Records) != len(keys) {
		t.Fatalf("captured %d records, %v", len(ev.Records), err)
	}
	last := ev.Records[len(ev.Records)-1].Change.SequenceNumber

	// a mapping filter that keeps the keys k00–k09 and the failing ones
	keep := filter.MustCriteria(`{"dynamodb":{"Keys":{"PK":{"S":[{"prefix":"k0"},{"prefix":"poison"},"boom","flaky"]}}}}`)
	for _, c := range []struct {
		name     string
		retries  int
		noBisect bool
		filter   filter.Criteria
		pf       int
	}{{"bisect, 2 retries", 2, false, nil, 1}, {"no bisect, 2 retries", 2, true, nil, 1}, {"bisect, no retries", 0, false, nil, 1},
		{"filtered, bisect, 2 retries", 2, false, keep, 1},
		{"parallelization 10, bisect, 2 retries", 2, false, nil, 10}, {"parallelization 10, filtered, no bisect", 2, true, keep, 10}} {
		t.Run(c.name, func(t *testing.T) {
			const batch = 8
			// the replay kit, the stream as captured, in batches of 8
			kit := newFlaky([]string{"poison", "poison2"}, []string{"flaky"})
			st, err := replay.Deliver(ctx, ev, replay.Target{Handler: kit.handle, Filter: c.filter,
				OnFailure: replay.OnFailure{MaxRetries: stream.Retries(c.retries), NoBisect: c.noBisect}}, replay.Schedule{MaxBatch: batch, ParallelizationFactor: c.pf})
			if err != nil {
				t.Fatal(err)
			}
			// a Runner on the table's stream, with the same settings
			live := newFlaky([]string{"poison", "poison2"}, []string{"flaky"})
			cps, dls := &stream.MemoryCheckpoints{}, &stream.MemoryDeadLetters{}
			r := &stream.Runner{
				Config: stream.Config{StreamARN: tbl.StreamARN, Consumer: "alike", BatchSize: batch, MaxRetries: stream.Retries(c.retries),
					NoBisect: c.noBisect, Filter: c.filter, ParallelizationFactor: c.pf, PollInterval: 10 * time.Millisecond, RetryBackoff: time.Millisecond},
				API: tbl.Streams, Checkpoints: cps, DeadLetters: dls,
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- r.Run(rctx, live.handle) }()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if h := r.Health(); len(h.Shards) == 1 && h.Shards[0].Checkpoint == last {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the runner did not reach the stream's end: %+v", r.Health())
				}
			}
			cancel()
			<-done

			kitCalls, liveCalls, kitDead, liveDead := kit.result(), live.result(), deadKeys(st.DeadLetters), deadKeys(dls.All())
			if c.pf > 1 { // the lanes' calls interleave as they may: each lane's the same
				slices.Sort(kitCalls)
				slices.Sort(liveCalls)
				slices.Sort(kitDead)
				slices.Sort(liveDead)
			}
			if d := cmp.Diff(kitCalls, liveCalls); d != "" {
				t.Errorf("handler calls differ (-kit +runner):\n%s", d)
			}
			if d := cmp.Diff(kitDead, liveDead); d != "" {
				t.Errorf("dead letters differ (-kit +runner):\n%s", d)
			}
			if c.filter != nil && (st.FilteredOut == 0 || int64(st.FilteredOut) != r.Stats().FilteredOut) {
				t.Errorf("filtered out: kit %d, runner %d", st.FilteredOut, r.Stats().FilteredOut)
			}
			t.Logf("%d calls, dead letters %v, %d filtered out", len(kit.result()), deadKeys(st.DeadLetters), st.FilteredOut)
		})
	}
}
