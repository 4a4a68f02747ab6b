package replay_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// record builds a stream record of an item "counter" PK at a version.
func record(seq int, pk string, version int) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID:   fmt.Sprintf("ev-%d", seq),
		EventName: "MODIFY",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprintf("%021d", seq),
			Keys:           map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute("META")},
			NewImage: map[string]events.DynamoDBAttributeValue{
				"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute("META"),
				"version": events.NewNumberAttribute(strconv.Itoa(version)),
			},
		},
	}
}

// streamOf is n versions of each of items, written in turn (A1 B1 A2 B2 …).
func streamOf(n int, items ...string) events.DynamoDBEvent {
	var ev events.DynamoDBEvent
	seq := 0
	for v := 1; v <= n; v++ {
		for _, pk := range items {
			seq++
			ev.Records = append(ev.Records, record(seq, pk, v))
		}
	}
	return ev
}

// A projection that keeps the highest version seen per item is idempotent
// and convergent: duplicates, retries and reordering across items leave the
// same state. Check proves it over many schedules.
func ExampleCheck() {
	var ev events.DynamoDBEvent
	seq := 0
	for v := 1; v <= 5; v++ {
		for _, pk := range []string{"A", "B", "C"} {
			seq++
			ev.Records = append(ev.Records, record(seq, pk, v))
		}
	}

	latest := map[string]int{} // the derived state
	handler := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
			pk := r.Change.Keys["PK"].String()
			latest[pk] = max(latest[pk], v) // guarded: a replayed older version changes nothing
		}
		return events.DynamoDBEventResponse{}, nil
	}
	target := replay.Target{
		Handler:    handler,
		NoRequests: true, // it computes in memory: crash schedules have nothing to crash
		Reset:      func(context.Context) error { clear(latest); return nil },
		State: func(context.Context) (any, error) {
			return map[string]int{"A": latest["A"], "B": latest["B"], "C": latest["C"]}, nil
		},
	}

	report, err := replay.Check(context.Background(), ev, target, replay.Schedules(42, 20))
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Summary()) // the 4 Fixed schedules and the 20 random ones
	fmt.Println("baseline:", report.Baseline)
	fmt.Println("differences:", report.Err())
	// Output:
	// 0 of 24 schedules differ from the baseline
	// baseline: map[A:5 B:5 C:5]
	// differences: <nil>
}

// A handler that rejects a record it cannot handle reports it failed;
// bisecting (the default) the event source mapping isolates it and, after MaxRetries,
// dead-letters it alone. Check proves that every schedule dead-letters the
// same record and derives the same state, and Expect that this state is
// the right one.
func ExampleOnFailure() {
	var ev events.DynamoDBEvent
	for seq, pk := range []string{"A", "B", "C", "A", "B", "C"} {
		ev.Records = append(ev.Records, record(seq+1, pk, seq/3+1))
	}
	ev.Records[4].Change.NewImage["version"] = events.NewStringAttribute("two") // poison: B's second version

	latest := map[string]int{}
	handler := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			version := r.Change.NewImage["version"]
			if version.DataType() != events.DataTypeNumber {
				// report it, and leave the rest of the batch for the retry
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
					{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
			v, _ := strconv.Atoi(version.Number())
			pk := r.Change.Keys["PK"].String()
			latest[pk] = max(latest[pk], v)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	target := replay.Target{
		Handler:    handler,
		NoRequests: true,
		OnFailure:  replay.OnFailure{MaxRetries: stream.Retries(2)}, // and bisection, the default
		Reset:      func(context.Context) error { clear(latest); return nil },
		State:      func(context.Context) (any, error) { return maps.Clone(latest), nil },
		Expect:     replay.Want(map[string]int{"A": 2, "B": 1, "C": 2}),
	}
	report, err := replay.Check(context.Background(), ev, target, replay.Schedules(1, 10))
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Summary())
	dl := report.BaselineStats.DeadLetters[0]
	fmt.Println("attempts:", dl.Attempts)
	fmt.Println("why:", dl.Error)
	fmt.Println("differences:", report.Err())
	// Output:
	// 0 of 14 schedules differ from the baseline; the baseline dead-lettered 1 record(s): ev-5
	// attempts: 3
	// why: the handler reported record "ev-5" (PK="B", SK="META"; sequence number 000000000000000000005) failed
	// differences: <nil>
}

// A handler's clients go through APIOption (AWS) and Transport (plain
// HTTP), so that a schedule with CrashBetweenRequests can crash a call
// after any one of its requests. Outside a replay both only pass requests
// on: production builds its clients the same way.
func ExampleAPIOption() {
	cfg := aws.Config{Region: "us-east-1"}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, replay.APIOption)
	})
	webhooks := &http.Client{Transport: replay.Transport(nil), Timeout: 10 * time.Second}
	_, _ = db, webhooks
	fmt.Println(replay.Fixed()[3])
	// Output: crash between requests [stream order, batches of 1, crashes between requests]
}

// A Target carries the event source mapping's filter, so the kit delivers
// what the deployed mapping would: here the loop guard keeps the
// consumer's own derived writes (derived = true) from it.
func ExampleTarget_filter() {
	var ev events.DynamoDBEvent
	for i, pk := range []string{"A", "TOTAL#A", "B"} {
		r := record(i+1, pk, 1)
		if pk == "TOTAL#A" {
			r.Change.NewImage["derived"] = events.NewBooleanAttribute(true)
		}
		ev.Records = append(ev.Records, r)
	}
	var seen []string
	target := replay.Target{
		Filter: stream.LoopGuard("PK"),
		Handler: func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range e.Records {
				seen = append(seen, r.Change.Keys["PK"].String())
			}
			return events.DynamoDBEventResponse{}, nil
		},
	}
	st, err := replay.Deliver(context.Background(), ev, target, replay.Schedule{Name: "in order"})
	if err != nil {
		panic(err)
	}
	fmt.Println("handled:", seen, "filtered out:", st.FilteredOut)
	// Output:
	// handled: [A B] filtered out: 1
}

// A consumer of tumbling windows (TumblingWindowInSeconds) under the kit:
// each window's calls add to its state, its final call writes the total —
// set, not added, so a final call that comes again changes nothing. Check
// proves the totals exact under every schedule.
func ExampleTarget_windows() {
	var ev events.DynamoDBEvent
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range 12 { // one every 20 s: four minutes, three records each
		r := record(i+1, []string{"A", "B"}[i%2], i+1)
		r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: t0.Add(time.Duration(i*20) * time.Second)}
		ev.Records = append(ev.Records, r)
	}
	totals := map[string]int{} // the derived state: a total per window
	target := replay.Target{
		Window: time.Minute,
		WindowHandler: func(_ context.Context, w events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
			sum, _ := strconv.Atoi(w.State["sum"])
			if w.IsFinalInvokeForWindow {
				totals[w.Window.Start.UTC().Format("15:04")] = sum // set: idempotent
				return events.DynamoDBTimeWindowEventResponse{}, nil
			}
			for _, r := range w.Records {
				v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
				sum += v
			}
			return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
				State: map[string]string{"sum": strconv.Itoa(sum)}}}, nil
		},
		NoRequests: true,
		Reset:      func(context.Context) error { clear(totals); return nil },
		State:      func(context.Context) (any, error) { return maps.Clone(totals), nil },
	}
	report, err := replay.Check(context.Background(), ev, target, replay.Schedules(7, 10))
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Summary())
	fmt.Println("totals:", report.Baseline)
	// Output:
	// 0 of 14 schedules differ from the baseline
	// totals: map[10:00:6 10:01:15 10:02:24 10:03:33]
}

// A Kinesis data stream for DynamoDB may deliver one item's records out of
// order and more than once. A handler whose last record read wins passes
// every schedule in DynamoDB Streams' order and fails KinesisSchedules,
// which say that it assumes order; the one that keeps the highest version
// passes both.
func ExampleKinesisSchedules() {
	ev := streamOf(5, "A", "B", "C") // A1 B1 C1 A2 … C5
	latest := map[string]int{}
	target := func(apply func(pk string, v int)) replay.Target {
		return replay.Target{
			Handler: func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				for _, r := range e.Records {
					v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
					apply(r.Change.Keys["PK"].String(), v)
				}
				return events.DynamoDBEventResponse{}, nil
			},
			NoRequests: true,
			Reset:      func(context.Context) error { clear(latest); return nil },
			State:      func(context.Context) (any, error) { return maps.Clone(latest), nil },
		}
	}
	lastWins := target(func(pk string, v int) { latest[pk] = v })
	highest := target(func(pk string, v int) { latest[pk] = max(latest[pk], v) })

	for _, c := range []struct {
		name      string
		t         replay.Target
		schedules []replay.Schedule
	}{
		{"last wins, DynamoDB Streams", lastWins, replay.Schedules(42, 10)},
		{"last wins, Kinesis", lastWins, replay.KinesisSchedules(42, 10)},
		{"highest version, Kinesis", highest, replay.KinesisSchedules(42, 10)},
	} {
		report, err := replay.Check(context.Background(), ev, c.t, c.schedules)
		if err != nil {
			panic(err)
		}
		assumes := 0
		for _, run := range report.Differing() {
			if run.AssumesOrder {
				assumes++
			}
		}
		fmt.Printf("%s: %s; %d assume order\n", c.name, report.Summary(), assumes)
	}
	// Output:
	// last wins, DynamoDB Streams: 0 of 14 schedules differ from the baseline; 0 assume order
	// last wins, Kinesis: 6 of 14 schedules differ from the baseline; 6 assume order
	// highest version, Kinesis: 0 of 14 schedules differ from the baseline; 0 assume order
}
