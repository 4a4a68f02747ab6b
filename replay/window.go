package replay

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// windows delivers a windowed target's records: one lane (a shard), in
// window order (the schedule's interleaving kept within a window, as a
// shard's records are in the order they were written), once or, for a
// schedule that duplicates the stream, twice from the start with fresh
// windows.
func (d delivery) windows(ctx context.Context, ev events.DynamoDBEvent) (Stats, error) {
	passes := 1
	if d.s.Duplicate {
		passes = 2
	}
	var recs []events.DynamoDBEventRecord
	for _, r := range Order(ev, Schedule{Shuffle: d.s.Shuffle, Seed: d.s.Seed}) {
		if d.filter.Match(r) {
			recs = append(recs, r)
		}
	}
	slices.SortStableFunc(recs, func(a, b events.DynamoDBEventRecord) int {
		return windowStart(a, d.window).Compare(windowStart(b, d.window))
	})
	var total Stats
	for pass := range passes {
		if len(recs) == 0 {
			break
		}
		w := &stream.Windows{Size: d.window, Handler: d.wh, ShardID: "lane 0", StreamARN: recs[0].EventSourceArn,
			End: recs[len(recs)-1].Change.SequenceNumber}
		dd := d
		dd.h = w.Handle
		st, err := dd.lane(ctx, recs, 0, rand.New(rand.NewPCG(d.s.Seed, uint64(2+pass))))
		total.add(st)
		if err != nil {
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
		if last != nil {
			return total, &StuckError{Schedule: d.s.Name, Attempts: d.attempts, Record: recs[len(recs)-1], Records: 0, Err: last}
		}
	}
	return total, nil
}

// endOfTime is a time after every window.
var endOfTime = time.Unix(1<<40, 0)

func windowStart(r events.DynamoDBEventRecord, size time.Duration) time.Time {
	return stream.WindowOf(r.Change.ApproximateCreationDateTime.Time, size).Start.Time
}
