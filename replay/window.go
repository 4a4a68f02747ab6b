package replay

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// windows delivers a windowed target's records: one lane (a shard), in
// the stream's order (the schedule's interleaving kept; records of two
// windows created near a boundary interleave as they do in a shard), once
// or, for a schedule that duplicates the stream, twice from the start with
// fresh windows. A window whose final call keeps failing is given up on
// after the schedule's attempts, as the Runner does: a dead letter with
// the window, its state and its records' range.
func (d delivery) windows(ctx context.Context, ev events.DynamoDBEvent) (Stats, error) {
	passes := 1
	if d.s.Duplicate {
		passes = 2
	}
	var recs []events.DynamoDBEventRecord
	for _, r := range windowOrder(ev, d.s) {
		if d.filter.Match(r) {
			recs = append(recs, r)
		}
	}
	var total Stats
	for pass := range passes {
		if len(recs) == 0 {
			break
		}
		var given []stream.DeadLetter
		w := &stream.Windows{Size: d.window, Handler: d.wh, ShardID: "lane 0", StreamARN: recs[0].EventSourceArn,
			End: recs[len(recs)-1].Change.SequenceNumber, FinalAttempts: d.attempts,
			OnGiveUp: func(_ context.Context, g stream.WindowGiveUp) error {
				given = append(given, stream.DeadLetter{ShardID: "lane 0", StreamARN: recs[0].EventSourceArn,
					FirstSequenceNumber: g.First, LastSequenceNumber: g.Last, Attempts: g.Attempts, Error: g.Err.Error(),
					Condition: stream.RetryAttemptsExhausted, Window: &g.Window, WindowState: g.State})
				return nil
			}}
		dd := d
		dd.h = w.Handle
		st, err := dd.lane(ctx, recs, 0, rand.New(rand.NewPCG(d.s.Seed, uint64(2+pass))))
		total.add(st)
		if err != nil {
			total.DeadLetters = append(total.DeadLetters, given...)
			return total, err
		}
		// the last window's final call, when the call holding the last
		// record never succeeded (it was dead-lettered): by time, as the
		// mapping closes a window
		var last error
		for range d.attempts {
			if last = w.Close(ctx, endOfTime); last == nil {
				break
			}
		}
		total.DeadLetters = append(total.DeadLetters, given...)
		if last != nil {
			return total, &StuckError{Schedule: d.s.Name, Attempts: d.attempts, Record: recs[len(recs)-1], Records: 0, Err: last}
		}
	}
	return total, nil
}

// endOfTime is a time after every window.
var endOfTime = time.Unix(1<<40, 0)

// windowOrder is the order a shard gives a windowed consumer: the
// stream's. A schedule that shuffles interleaves the keys only among
// records created within WindowGrace of each other, in spans that straddle
// the windows' boundaries: records of two windows created near a boundary
// come in either order, as a shard's can, and none comes so late that its
// window has had its final call.
func windowOrder(ev events.DynamoDBEvent, s Schedule) []events.DynamoDBEventRecord {
	recs := Order(ev, Schedule{Shuffle: s.Shuffle, Seed: s.Seed})
	if !s.Shuffle {
		return recs
	}
	span := func(r events.DynamoDBEventRecord) int64 {
		return (stream.ApproximateCreation(r).Add(stream.WindowGrace / 2).UnixNano()) / int64(stream.WindowGrace)
	}
	slices.SortStableFunc(recs, func(a, b events.DynamoDBEventRecord) int { return cmp.Compare(span(a), span(b)) })
	return recs
}
