package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// With MaxRetries Forever a poison record would stop the shard; with
// MaxRecordAge the kit, as the mapping, gives up on it once it is older
// than that (each failed call costs RetryDelay of the kit's time) and
// dead-letters it as RecordAgeExceeded, and the records after it go on.
func TestMaxRecordAgeInTheKit(t *testing.T) {
	var ev events.DynamoDBEvent
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i, pk := range []string{"A", "POISON", "B"} {
		r := record(i+1, pk, 1)
		r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: t0.Add([]time.Duration{0, 10 * time.Second, 50 * time.Second}[i])}
		ev.Records = append(ev.Records, r)
	}
	var handled []string
	h := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			pk := r.Change.Keys["PK"].String()
			if pk == "POISON" {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
			handled = append(handled, pk)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	st, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: h, OnFailure: replay.OnFailure{
		MaxRetries: stream.Retries(stream.Forever), MaxRecordAge: time.Minute, RetryDelay: 7 * time.Second}}, replay.Schedule{Name: "one batch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.DeadLetters) != 1 || st.DeadLetters[0].Condition != stream.RecordAgeExceeded || st.DeadLetters[0].Event.Records[0].Change.Keys["PK"].String() != "POISON" {
		t.Fatalf("dead letters %+v", st.DeadLetters)
	}
	// the kit's time starts at B's creation (50 s), the newest in the
	// batch, and goes on 7 s a failure: after three the poison record
	// (10 s) is 61 s old; B is 21 s old then, and goes on
	if len(handled) != 2 || handled[len(handled)-1] != "B" || st.HandlerFailures != 3 {
		t.Errorf("handled %v after %d failed calls", handled, st.HandlerFailures)
	}
	if fr, ok := st.DeadLetters[0].FailureRecord("f"); !ok || fr.RequestContext.Condition != stream.RecordAgeExceeded || fr.BatchInfo.StreamARN != ev.Records[0].EventSourceArn {
		t.Errorf("failure record %+v", fr)
	}
}
