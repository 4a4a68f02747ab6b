package replay_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/replay"
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
		Handler: handler,
		Reset:   func(context.Context) error { clear(latest); return nil },
		State: func(context.Context) (any, error) {
			return map[string]int{"A": latest["A"], "B": latest["B"], "C": latest["C"]}, nil
		},
	}

	report, err := replay.Check(context.Background(), ev, target, replay.Schedules(42, 20))
	if err != nil {
		panic(err)
	}
	fmt.Println("schedules:", len(report.Runs))
	fmt.Println("baseline:", report.Baseline)
	fmt.Println("differences:", report.Err())
	// Output:
	// schedules: 20
	// baseline: map[A:5 B:5 C:5]
	// differences: <nil>
}
