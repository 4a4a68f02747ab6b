package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/consumer"
)

func at(t time.Time) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{ApproximateCreationDateTime: events.SecondsEpochTime{Time: t}}}
}

// IteratorAge is Lambda's: the newest record's age when the batch is
// handed over, not the oldest's, and not counting the handler's time.
func TestIteratorAgeIsLambdas(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{at(now.Add(-10 * time.Second)), at(now.Add(-2 * time.Second)), at(now.Add(-5 * time.Second))}}
	if got := consumer.IteratorAge(ev, now); got != 2*time.Second {
		t.Errorf("IteratorAge = %v, want 2s (the newest record's age)", got)
	}
	if got := consumer.IteratorAge(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{}}}, now); got != 0 {
		t.Errorf("records without a time: %v, want 0", got)
	}

	// Instrument measures at the hand-over: a slow handler does not add
	// its time.
	start := time.Now()
	ev = events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{at(start.Add(-2 * time.Second))}}
	var call consumer.Call
	h := consumer.Instrument(func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		time.Sleep(300 * time.Millisecond)
		return events.DynamoDBEventResponse{}, nil
	}, "c", func(c consumer.Call) { call = c })
	if _, err := h(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if call.Duration < 300*time.Millisecond || call.IteratorAge < 2*time.Second || call.IteratorAge >= 2*time.Second+call.Duration {
		t.Errorf("IteratorAge %v after a handler of %v: want the age at the hand-over, 2s plus what it took to call", call.IteratorAge, call.Duration)
	}
}
