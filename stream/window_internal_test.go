package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Forget drops the states kept for positions before a checkpoint, keeping
// the one after it (the Runner's own bookkeeping; nothing of Lambda's): what a Runner keeps is bounded by the records in
// flight, and a batch from the checkpoint on still starts from its state.
func TestWindowsForget(t *testing.T) {
	sum := func(_ context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		n := len(ev.State["n"]) + len(ev.Records)
		return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"n": fmt.Sprintf("%0*d", n, 0)}}}, nil
	}
	w := &Windows{Size: time.Hour, Handler: sum}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(i int) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprintf("%021d", i),
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: t0.Add(time.Duration(i) * time.Second)}}}
	}
	for i := 1; i <= 100; i++ {
		if _, err := w.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.after) != 100 {
		t.Fatalf("%d marks", len(w.after))
	}
	w.Forget(rec(90).Change.SequenceNumber)
	if len(w.after) != 11 {
		t.Errorf("%d marks after Forget at 90, want 11 (90 to 100)", len(w.after))
	}
	// records 91 on again: from the state after 90
	if _, err := w.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec(91)}}); err != nil {
		t.Fatal(err)
	}
	if got := len(w.after[len(w.after)-1].Open[0].State["n"]); got != 91 {
		t.Errorf("state after 91 redelivered: %d records, want 91", got)
	}
}
