package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

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
