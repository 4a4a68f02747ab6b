package stream

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// IteratorAge is Lambda's IteratorAge metric of a batch handed to the
// handler at at: the age of its newest record (by created), how far
// behind the stream's head the consumer reads; never negative, 0 when no
// record has a time. The Runner's created is the best it knows (see
// Stats); ApproximateCreation is the records' own, which DynamoDB rounds
// down to the second (DynamoDB Local to the minute).
func IteratorAge(recs []events.DynamoDBEventRecord, at time.Time, created func(events.DynamoDBEventRecord) time.Time) time.Duration {
	var newest time.Time
	for _, r := range recs {
		if t := created(r); t.After(newest) {
			newest = t
		}
	}
	if newest.IsZero() {
		return 0
	}
	return max(at.Sub(newest), 0)
}

// ApproximateCreation is a record's ApproximateCreationDateTime.
func ApproximateCreation(r events.DynamoDBEventRecord) time.Time {
	return r.Change.ApproximateCreationDateTime.Time
}

type iteratorAgeKey struct{}

// IteratorAgeOf is the iterator age the Runner measured for the handler
// call whose context ctx is (BatchStats.IteratorAge): from the creation
// times it knows best, which on DynamoDB Local are finer than the records'
// own minute-rounded ApproximateCreationDateTime. It is the age of the
// batch's newest record when the call began; a window handler's calls
// within that batch (Windows.Handle) carry the batch's age, and a final
// call made with no batch (Windows.Close, Windows.Due) carries none.
// False outside a Runner's call (in Lambda, where a record's time is to
// the second, compute it from the records: IteratorAge with
// ApproximateCreation).
// Metrics hooks that wrap a handler (consumer.Instrument) read it so that
// their IteratorAge is the Runner's.
func IteratorAgeOf(ctx context.Context) (time.Duration, bool) {
	age, ok := ctx.Value(iteratorAgeKey{}).(time.Duration)
	return age, ok
}

// withIteratorAge is ctx carrying a call's iterator age (IteratorAgeOf).
func withIteratorAge(ctx context.Context, age time.Duration) context.Context {
	return context.WithValue(ctx, iteratorAgeKey{}, age)
}
