package destination

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/kinesis"
)

// API is what Kinesis calls of a Kinesis Data Streams client.
type API interface {
	PutRecords(ctx context.Context, in *sdk.PutRecordsInput, optFns ...func(*sdk.Options)) (*sdk.PutRecordsOutput, error)
}

// Faults are what Entries injects, each a chance per change: Repeat, that
// the change is put twice; Reorder, that it is held back and put after the
// next change of its item in the same batch (where none comes, at the
// batch's end: not out of order then, and not counted).
type Faults struct {
	Repeat, Reorder float64
}

// Entry is one record to put: its partition key and data.
type Entry struct {
	PartitionKey string
	Data         []byte
	// EventID is the change's, to count and report by.
	EventID string
}

// Counts are what Entries did.
type Counts struct {
	Changes, Repeated, Reordered int
}

// Entries returns the records to put for a batch of changes, in the order
// to put them: each change as DynamoDB writes it to Kinesis, stamped with
// at(eventID) (microseconds, in the changes' order, the same for a change
// every time: a repeat carries its change's time), with f's repeats and
// reorders drawn from rng. Reordered counts exactly the records put after
// a later change of their item.
func Entries(batch []events.DynamoDBEventRecord, at func(eventID string) time.Time, f Faults, rng *rand.Rand) ([]Entry, Counts, error) {
	expanded := make([]Entry, 0, len(batch))
	var n Counts
	for _, r := range batch {
		e, err := entry(r, at(r.EventID))
		if err != nil {
			return nil, n, err
		}
		expanded = append(expanded, e)
		n.Changes++
		if f.Repeat > 0 && rng.Float64() < f.Repeat {
			expanded = append(expanded, e)
			n.Repeated++
		}
	}
	if f.Reorder <= 0 {
		return expanded, n, nil
	}
	out := make([]Entry, 0, len(expanded))
	held := map[string]Entry{} // by partition key: a change waiting for its item's next one
	var heldOrder []string
	for _, e := range expanded {
		if h, ok := held[e.PartitionKey]; ok && h.EventID != e.EventID {
			out = append(out, e, h) // h after a later change of its item
			delete(held, e.PartitionKey)
			n.Reordered++
			continue
		}
		if _, ok := held[e.PartitionKey]; !ok && rng.Float64() < f.Reorder {
			held[e.PartitionKey] = e
			heldOrder = append(heldOrder, e.PartitionKey)
			continue
		}
		out = append(out, e)
	}
	for _, k := range heldOrder { // no later change of their item came: in order, at the end
		if h, ok := held[k]; ok {
			out = append(out, h)
			delete(held, k)
		}
	}
	return out, n, nil
}

func entry(r events.DynamoDBEventRecord, at time.Time) (Entry, error) {
	data, err := stream.KinesisData(r, at)
	if err != nil {
		return Entry{}, fmt.Errorf("destination: %w", err)
	}
	return Entry{PartitionKey: kinesis.PartitionKey(r), Data: data, EventID: r.EventID}, nil
}

// Kinesis puts a DynamoDB stream's changes into a Kinesis data stream.
type Kinesis struct {
	Client    API
	StreamARN string
	Faults    Faults
	// Seed draws the faults: the same seed, the same draws for the same
	// batches.
	Seed uint64
	// Now is the clock the records' times come from (time.Now).
	Now func() time.Time

	once sync.Once
	mu   sync.Mutex
	rng  *rand.Rand
	last time.Time
	// stamps are the times given to changes, by eventID, so that a batch
	// put again after a failure carries the same ones (two generations, so
	// memory stays bounded: a change is seen again soon or never)
	stamps, older map[string]time.Time
	n             struct{ changes, repeated, reordered atomic.Int64 }
}

// maxStamps is how many changes' times a generation of stamps keeps.
const maxStamps = 100_000

// Counts says what Kinesis put: the changes, the repeats and reorders it
// injected (records put again by retries are not among them).
func (k *Kinesis) Counts() Counts {
	return Counts{Changes: int(k.n.changes.Load()), Repeated: int(k.n.repeated.Load()), Reordered: int(k.n.reordered.Load())}
}

// at is a change's time: the one it was given before, or now, or a
// microsecond after the last one given.
func (k *Kinesis) at(eventID string) time.Time {
	if t, ok := k.stamps[eventID]; ok {
		return t
	}
	if t, ok := k.older[eventID]; ok {
		return t
	}
	now := time.Now
	if k.Now != nil {
		now = k.Now
	}
	t := now().UTC().Truncate(time.Microsecond)
	if !t.After(k.last) {
		t = k.last.Add(time.Microsecond)
	}
	k.last = t
	if len(k.stamps) >= maxStamps {
		k.older, k.stamps = k.stamps, nil
	}
	if k.stamps == nil {
		k.stamps = map[string]time.Time{}
	}
	k.stamps[eventID] = t
	return t
}

// Handle puts a batch's changes (a stream.Handler): the whole batch
// again on any failure, so a record left unput by a partial failure of
// PutRecords comes again with the rest (as repeats, with the times they
// had).
func (k *Kinesis) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	k.once.Do(func() { k.rng = rand.New(rand.NewPCG(k.Seed, 0x6b)) })
	k.mu.Lock()
	entries, n, err := Entries(ev.Records, k.at, k.Faults, k.rng)
	k.mu.Unlock()
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	for start := 0; start < len(entries); start += 500 { // PutRecords takes 500 records a call
		part := entries[start:min(start+500, len(entries))]
		in := &sdk.PutRecordsInput{StreamARN: aws.String(k.StreamARN), Records: make([]types.PutRecordsRequestEntry, len(part))}
		for i, e := range part {
			in.Records[i] = types.PutRecordsRequestEntry{PartitionKey: aws.String(e.PartitionKey), Data: e.Data}
		}
		out, err := k.Client.PutRecords(ctx, in)
		if err != nil {
			return events.DynamoDBEventResponse{}, fmt.Errorf("destination: put %d records: %w", len(part), err)
		}
		if f := aws.ToInt32(out.FailedRecordCount); f > 0 {
			return events.DynamoDBEventResponse{}, fmt.Errorf("destination: %d of %d records not put (%s)", f, len(part), firstFailure(out))
		}
	}
	k.n.changes.Add(int64(n.Changes))
	k.n.repeated.Add(int64(n.Repeated))
	k.n.reordered.Add(int64(n.Reordered))
	return events.DynamoDBEventResponse{}, nil
}

func firstFailure(out *sdk.PutRecordsOutput) string {
	for _, r := range out.Records {
		if r.ErrorCode != nil {
			return aws.ToString(r.ErrorCode) + ": " + aws.ToString(r.ErrorMessage)
		}
	}
	return "no reason given"
}
