package destination_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/destination"
	"github.com/dynastream/dynastream/stream"
)

const arn = "arn:aws:dynamodb:us-east-1:000000000000:table/search-room/stream/2026-12-07T00:00:00.000"

// batch is n versions of each item, in the order written.
func batch(n int, items ...string) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for v := 1; v <= n; v++ {
		for _, pk := range items {
			r := events.DynamoDBEventRecord{EventID: fmt.Sprintf("%s-%d", pk, v), EventName: "MODIFY", AWSRegion: "us-east-1", EventSource: "aws:dynamodb", EventSourceArn: arn}
			r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute("META")}
			r.Change.NewImage = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute("META"), "v": events.NewNumberAttribute(fmt.Sprint(v))}
			r.Change.OldImage = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute("META"), "v": events.NewNumberAttribute(fmt.Sprint(v - 1))}
			r.Change.SizeBytes = 30
			out = append(out, r)
		}
	}
	return out
}

func clock() func(string) time.Time {
	t := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	return func(string) time.Time { t = t.Add(time.Microsecond); return t }
}

// What is put reads back, through the consumers' decoder (the one the
// Lambda Kinesis event and kinesis.Source use), as the change it came
// from: AWS's record format, the microsecond time, one partition key per
// item; and what Faults injects is what Counts says: the repeats, and
// changes put after a later change of their item.
func TestEntriesReadBackAsTheChanges(t *testing.T) {
	in := batch(6, "A", "B", "C")
	byID := map[string]events.DynamoDBEventRecord{}
	for _, r := range in {
		byID[r.EventID] = r
	}
	var total destination.Counts
	for seed := range uint64(10) {
		out, n, err := destination.Entries(in, clock(), destination.Faults{Repeat: 0.2, Reorder: 0.2}, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if n.Changes != len(in) || len(out) != len(in)+n.Repeated {
			t.Fatalf("seed %d: %d entries for %d changes and %d repeats (%+v)", seed, len(out), len(in), n.Repeated, n)
		}
		keys := map[string]string{}
		highest, reordered := map[string]int{}, 0
		for i, e := range out {
			got, err := stream.KinesisChange(e.Data, fmt.Sprint(i+1), "arn:kinesis")
			if err != nil {
				t.Fatal(err)
			}
			want := byID[got.EventID]
			if diff := cmp.Diff(jsonOf(want.Change), jsonOf(got.Change)); diff != "" || got.EventName != want.EventName {
				t.Fatalf("%s read back otherwise (-want +got):\n%s", got.EventID, diff)
			}
			if got.Change.ApproximateCreationDateTime.Nanosecond()%1000 != 0 || got.Change.ApproximateCreationDateTime.Nanosecond() == 0 {
				t.Fatalf("%s: time %s, want microseconds", got.EventID, got.Change.ApproximateCreationDateTime.Time)
			}
			pk := want.Change.Keys["PK"].String()
			if k, ok := keys[pk]; ok && k != e.PartitionKey {
				t.Fatalf("item %s under two partition keys", pk)
			}
			keys[pk] = e.PartitionKey
			var v int
			fmt.Sscan(got.Change.NewImage["v"].Number(), &v)
			if v < highest[pk] {
				reordered++
			}
			highest[pk] = max(highest[pk], v)
		}
		if reordered != n.Reordered {
			t.Fatalf("seed %d: %d changes after a later one, %d reorders counted", seed, reordered, n.Reordered)
		}
		total.Repeated += n.Repeated
		total.Reordered += n.Reordered
	}
	if total.Repeated == 0 || total.Reordered == 0 {
		t.Fatalf("10 batches: %+v: want repeats and reorders", total)
	}
}

// jsonOf is a change's keys and images as JSON, to compare.
func jsonOf(c events.DynamoDBStreamRecord) string {
	b, _ := json.Marshal([]any{c.Keys, c.NewImage, c.OldImage, c.SizeBytes})
	return string(b)
}

// put is a PutRecords that fails the first call's last record.
type put struct {
	calls int
	first []types.PutRecordsRequestEntry // the refused call's
	got   [][]types.PutRecordsRequestEntry
}

func (p *put) PutRecords(_ context.Context, in *sdk.PutRecordsInput, _ ...func(*sdk.Options)) (*sdk.PutRecordsOutput, error) {
	p.calls++
	out := &sdk.PutRecordsOutput{Records: make([]types.PutRecordsResultEntry, len(in.Records))}
	for i := range in.Records {
		out.Records[i] = types.PutRecordsResultEntry{SequenceNumber: aws.String(fmt.Sprint(i))}
	}
	if p.calls == 1 {
		p.first = in.Records
		out.FailedRecordCount = aws.Int32(1)
		out.Records[len(in.Records)-1] = types.PutRecordsResultEntry{ErrorCode: aws.String("ProvisionedThroughputExceededException"), ErrorMessage: aws.String("slow down")}
		return out, nil
	}
	p.got = append(p.got, in.Records)
	return out, nil
}

// A batch PutRecords answers in part fails whole, so its Runner delivers
// it again and nothing is lost (PutRecords may put some of a call's
// records and not others, each refused one with an ErrorCode, and
// FailedRecordCount says how many: Kinesis API Reference, PutRecords;
// paraphrased).
func TestHandlePutsAgainWhatKinesisRefused(t *testing.T) {
	p := &put{}
	k := &destination.Kinesis{Client: p, StreamARN: "arn:kinesis"}
	ev := events.DynamoDBEvent{Records: batch(2, "A", "B")}
	if _, err := k.Handle(context.Background(), ev); err == nil || k.Counts().Changes != 0 {
		t.Fatalf("first call: %v, %+v: want an error and nothing counted", err, k.Counts())
	}
	if _, err := k.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if len(p.got) != 1 || len(p.got[0]) != 4 || k.Counts().Changes != 4 {
		t.Fatalf("second call put %v, counts %+v", p.got, k.Counts())
	}
	// the batch put again carries the times of the first try: a change
	// keeps its ApproximateCreationDateTime however often it is put
	if got, want := timesOf(t, p.got[0]), timesOf(t, p.first); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("times on the second try %v, on the first %v", got, want)
	}
}

// timesOf is each entry's eventID and time, sorted by eventID.
func timesOf(t *testing.T, recs []types.PutRecordsRequestEntry) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for i, r := range recs {
		c, err := stream.KinesisChange(r.Data, fmt.Sprint(i+1), "arn:kinesis")
		if err != nil {
			t.Fatal(err)
		}
		out[c.EventID] = c.Change.ApproximateCreationDateTime.Time
	}
	return out
}
