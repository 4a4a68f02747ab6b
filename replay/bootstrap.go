package replay

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// BootstrapSchedules returns n schedules that start the consumer from a
// scan (Schedule.Bootstrap), each with its own cut and scan, random batches
// and, in half of them, failures; the same seed gives the same schedules.
// Add them to Check's schedules to prove a consumer can be started on a
// table with data (stream.Bootstrap).
func BootstrapSchedules(seed uint64, n int) []Schedule {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]Schedule, n)
	for i := range out {
		s := Schedule{Name: fmt.Sprintf("bootstrap #%d", i+1), Seed: rng.Uint64(), Bootstrap: true, Shuffle: true,
			RandomBatches: true, MaxBatch: 1 + rng.IntN(20)}
		if i%2 == 1 {
			s.FailureRate = 0.1
		}
		out[i] = s
	}
	return out
}

// bootstrap delivers ev as a consumer started from a scan sees it: the
// images a scan read between a cut and the scan's end, then the records
// after the cut through the ordering rule.
func (d delivery) bootstrap(ctx context.Context, ev events.DynamoDBEvent) (Stats, error) {
	rng := rand.New(rand.NewPCG(d.s.Seed, 5))
	recs := ev.Records
	cut := rng.IntN(len(recs) + 1)
	end := cut + rng.IntN(len(recs)-cut+1)
	// each item's images in stream order: (index, image; nil once removed)
	type version struct {
		at  int
		img map[string]events.DynamoDBAttributeValue
	}
	history := map[string][]version{}
	keysOf := map[string]map[string]events.DynamoDBAttributeValue{}
	var order []string
	for i, r := range recs {
		k := itemKey(r)
		if _, ok := keysOf[k]; !ok {
			order = append(order, k)
			keysOf[k] = r.Change.Keys
		}
		history[k] = append(history[k], version{i, r.Change.NewImage})
	}
	// the scan: each item read at its own point between the cut and the end
	gate := stream.NewGate()
	var snapshot []events.DynamoDBEventRecord
	arn := ""
	if len(recs) > 0 {
		arn = recs[0].EventSourceArn
	}
	for _, k := range order {
		at := cut + rng.IntN(end-cut+1)
		var img map[string]events.DynamoDBAttributeValue
		for _, v := range history[k] {
			if v.at < at {
				img = v.img
			}
		}
		if len(img) == 0 {
			continue // not there when the scan passed
		}
		rec := stream.SnapshotRecord(keysOf[k], img, arn, recs[min(at, len(recs)-1)].Change.ApproximateCreationDateTime.Time)
		gate.Saw(rec.Change.Keys, rec.Change.NewImage)
		if d.filter.Match(rec) {
			snapshot = append(snapshot, rec)
		}
	}
	rng.Shuffle(len(snapshot), func(i, j int) { snapshot[i], snapshot[j] = snapshot[j], snapshot[i] })
	total, err := d.lane(ctx, snapshot, 0, rand.New(rand.NewPCG(d.s.Seed, 6)))
	if err != nil {
		return total, err
	}
	// the stream from the cut through the Gate, which sees every record
	// (the mapping's filter comes after it), up to where the stream was when
	// the scan ended; from there on without it, as stream.Bootstrap hands
	// over to the consumer's Runner
	dd := d
	dd.h = gate.Handler(stream.Filter(d.filter, d.h))
	st, err := dd.lane(ctx, Order(events.DynamoDBEvent{Records: recs[cut:end]}, Schedule{Shuffle: d.s.Shuffle, Seed: d.s.Seed}), 0, rand.New(rand.NewPCG(d.s.Seed, 7)))
	total.add(st)
	if err != nil {
		return total, err
	}
	var rest []events.DynamoDBEventRecord
	for _, r := range Order(events.DynamoDBEvent{Records: recs[end:]}, Schedule{Shuffle: d.s.Shuffle, Seed: d.s.Seed}) {
		if d.filter.Match(r) {
			rest = append(rest, r)
		}
	}
	st, err = d.lane(ctx, rest, 0, rand.New(rand.NewPCG(d.s.Seed, 8)))
	total.add(st)
	return total, err
}
