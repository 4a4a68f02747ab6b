package stream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// ---------------------------------------------------------------------------
// 10. File dead letters, read back and resubmitted.

func TestFileDeadLettersResubmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const items = 10
	poisonIdx := []int{3, 7}
	putItems(t, f.c.DB, f.table, 0, items)
	oracle := rawSeqs(readStream(t, f.c.Streams, f.arn, items))
	poison := []string{oracle[poisonIdx[0]], oracle[poisonIdx[1]]}

	path := filepath.Join(t.TempDir(), "deadletters", "projector.jsonl")
	rec := &recorder{behave: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if slices.Contains(poison, r.Change.SequenceNumber) {
				return events.DynamoDBEventResponse{}, fmt.Errorf("cannot project %s", r.Change.SequenceNumber)
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	r := newRunner(t, f.c.Streams, f.arn, "projector")
	r.MaxRetries = stream.Retries(1)
	r.NoBisect = false
	r.DeadLetters = &stream.FileDeadLetters{Path: path}
	run := start(t, r, rec.handle)
	waitCheckpoint(t, r.Checkpoints, "projector", f.shard, oracle[items-1])
	run.stop()

	dls, err := stream.ReadDeadLetters(path)
	if err != nil {
		t.Fatalf("ReadDeadLetters: %v", err)
	}
	if len(dls) != 2 {
		t.Fatalf("%d dead letters in %s, want 2", len(dls), path)
	}
	calls := rec.snapshot()
	for i, dl := range dls {
		if len(dl.Event.Records) != 1 || dl.Event.Records[0].Change.SequenceNumber != poison[i] {
			t.Fatalf("dead letter %d holds %v, want [%s]", i, seqsOf(dl.Event.Records), poison[i])
		}
		if dl.Consumer != "projector" || dl.StreamARN != f.arn || dl.ShardID != f.shard || dl.Attempts != 2 ||
			dl.FirstSequenceNumber != poison[i] || dl.LastSequenceNumber != poison[i] || !strings.Contains(dl.Error, "cannot project") || dl.FailedAt.IsZero() {
			t.Errorf("dead letter %d envelope: %+v", i, dl)
		}
		// The record survives the file byte for byte (as JSON).
		if diff := cmp.Diff(recordJSON(t, findRecord(calls, poison[i])), recordJSON(t, dl.Event.Records[0])); diff != "" {
			t.Errorf("dead letter %d: record changed in the file:\n%s", i, diff)
		}
	}

	ctx := context.Background()
	// Still failing: Resubmit reports it, for an error and for item failures.
	for i, dl := range dls {
		if err := stream.Resubmit(ctx, rec.handle, dl); err == nil || !strings.Contains(err.Error(), "cannot project") {
			t.Errorf("Resubmit %d to the failing handler: %v", i, err)
		}
		err := stream.Resubmit(ctx, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
		}, dl)
		if err == nil || !strings.Contains(err.Error(), poison[i]) {
			t.Errorf("Resubmit %d with an item failure: %v", i, err)
		}
		if err := stream.Resubmit(ctx, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			panic("still broken")
		}, dl); err == nil || !strings.Contains(err.Error(), "still broken") {
			t.Errorf("Resubmit %d to a panicking handler: %v", i, err)
		}
	}
	// Fixed: the handler gets the very records and decodes them.
	var got []stream.Change
	fixed := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			c, err := stream.Decode(r)
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			got = append(got, c)
		}
		return events.DynamoDBEventResponse{}, nil
	}
	for i, dl := range dls {
		if err := stream.Resubmit(ctx, fixed, dl); err != nil {
			t.Fatalf("Resubmit %d: %v", i, err)
		}
	}
	if len(got) != 2 {
		t.Fatalf("the fixed handler got %d records, want 2", len(got))
	}
	for i, c := range got {
		if c.Kind != stream.Insert || c.SequenceNumber != poison[i] || c.EventID == "" {
			t.Errorf("resubmitted record %d: kind %s seq %s eventID %q", i, c.Kind, c.SequenceNumber, c.EventID)
		}
		if diff := cmp.Diff(testItem(poisonIdx[i], "1"), c.New, cmpAV...); diff != "" {
			t.Errorf("resubmitted record %d new image (-want +got):\n%s", i, diff)
		}
	}
}

// A handler's dead letters in a table (Lambda's case: no disk) hold the
// records themselves: listed back, resubmitted to the fixed handler, and
// deleted once done.
func TestTableDeadLettersResubmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	putItems(t, f.c.DB, f.table, 0, 4)
	var recs []events.DynamoDBEventRecord
	for _, r := range readStream(t, f.c.Streams, f.arn, 4) {
		lr, err := attr.LambdaRecord(r, f.arn)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, lr)
	}
	ctx := context.Background()
	// The table itself serves as a PK/SK table for the dead letters here.
	dls := &stream.TableDeadLetters{DB: f.c.DB, Table: f.table}
	bad := recs[2].Change.SequenceNumber
	broken := stream.Keyed{DeadLetters: dls, Consumer: "projector"}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
		if r.Change.SequenceNumber == bad {
			return stream.Permanent(fmt.Errorf("cannot decode %s", bad))
		}
		return nil
	}))
	resp, err := broken(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %+v: the permanent failure should be dead-lettered, not reported", err, resp.BatchItemFailures)
	}
	list, err := dls.List(ctx, "projector")
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %d dead letters, want 1", err, len(list))
	}
	dl := list[0]
	if len(dl.Event.Records) != 1 || dl.FirstSequenceNumber != bad || !strings.Contains(dl.Error, "cannot decode") || dl.StreamARN != f.arn {
		t.Fatalf("dead letter %+v", dl)
	}
	if diff := cmp.Diff(recordJSON(t, recs[2]), recordJSON(t, dl.Event.Records[0])); diff != "" {
		t.Errorf("record changed in the table:\n%s", diff)
	}
	var got []string
	fixed := stream.Keyed{}.Handler(stream.Each(func(_ context.Context, r events.DynamoDBEventRecord) error {
		got = append(got, r.Change.SequenceNumber)
		return nil
	}))
	if err := stream.Resubmit(ctx, fixed, dl); err != nil {
		t.Fatalf("Resubmit: %v", err)
	}
	if len(got) != 1 || got[0] != bad {
		t.Errorf("the fixed handler got %v, want [%s]", got, bad)
	}
	if err := dls.Delete(ctx, dl); err != nil {
		t.Fatal(err)
	}
	if list, err := dls.List(ctx, "projector"); err != nil || len(list) != 0 {
		t.Errorf("after Delete: %v, %d left", err, len(list))
	}
}
