package stream_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

func TestSkipDerived(t *testing.T) {
	derived := map[string]events.DynamoDBAttributeValue{"derived": events.NewBooleanAttribute(true)}
	core := map[string]events.DynamoDBAttributeValue{"derived": events.NewBooleanAttribute(false), "x": events.NewStringAttribute("1")}
	for _, c := range []struct {
		name     string
		old, new map[string]events.DynamoDBAttributeValue
		skip     bool
	}{
		{"insert of a derived item", nil, derived, true},
		{"modify of a derived item", derived, derived, true},
		{"removal of a derived item", derived, nil, true},
		{"core item", nil, core, false},
		{"no flag", nil, map[string]events.DynamoDBAttributeValue{"x": events.NewStringAttribute("1")}, false},
		{"derived as a string", nil, map[string]events.DynamoDBAttributeValue{"derived": events.NewStringAttribute("true")}, false},
		{"keys only", nil, nil, false},
		{"core item turned derived", core, derived, true},
	} {
		r := events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{OldImage: c.old, NewImage: c.new}}
		if got := stream.SkipDerived(r); got != c.skip {
			t.Errorf("%s: SkipDerived = %v", c.name, got)
		}
		if stream.SkipNone(r) {
			t.Errorf("%s: SkipNone skipped", c.name)
		}
	}
}

func TestSkipHandler(t *testing.T) {
	var got [][]string
	h := stream.Skip(nil, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		var ids []string
		for _, r := range ev.Records {
			ids = append(ids, r.EventID)
		}
		got = append(got, ids)
		return events.DynamoDBEventResponse{}, nil
	})
	rec := func(id string, derived bool) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: id, Change: events.DynamoDBStreamRecord{
			NewImage: map[string]events.DynamoDBAttributeValue{"derived": events.NewBooleanAttribute(derived)}}}
	}
	ctx := context.Background()
	_, _ = h(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("a", false), rec("b", true), rec("c", false)}})
	_, _ = h(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("d", true)}})
	_, _ = h(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec("e", false)}})
	if fmt.Sprint(got) != "[[a c] [e]]" {
		t.Fatalf("calls %v", got)
	}
}

// A consumer that writes into the table it reads: with the default guard
// its own (derived) writes never reach it, are counted as skipped, and the
// checkpoint moves past them; with the guard as the mapping's filter
// (LoopGuard) they are filtered out before the guard, and counted so; with
// SkipNone it sees them.
func TestRunnerSkipsItsOwnWrites(t *testing.T) {
	c, table, arn := newTable(t)
	for _, guard := range []struct {
		name   string
		skip   stream.SkipFunc
		filter filter.Criteria
	}{{"default", nil, nil}, {"filter", nil, stream.LoopGuard("PK")}, {"none", stream.SkipNone, nil}} {
		t.Run(guard.name, func(t *testing.T) {
			r := newRunner(t, c.Streams, arn, "skip-"+guard.name)
			r.Skip, r.Filter = guard.skip, guard.filter
			var mu sync.Mutex
			seen := map[string]int{}
			h := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				for _, rec := range ev.Records {
					pk := rec.Change.Keys["PK"].String()
					mu.Lock()
					seen[pk]++
					mu.Unlock()
					if rec.Change.NewImage["derived"].DataType() == events.DataTypeBoolean {
						continue // (with SkipNone) its own write: derive nothing from it
					}
					_, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{
						"PK": &ddbtypes.AttributeValueMemberS{Value: "TOTAL#" + pk}, "SK": &ddbtypes.AttributeValueMemberS{Value: "T"},
						"derived": &ddbtypes.AttributeValueMemberBOOL{Value: true},
					}})
					if err != nil {
						return events.DynamoDBEventResponse{}, err
					}
				}
				return events.DynamoDBEventResponse{}, nil
			}
			if guard.name == "default" { // the second run reads the same stream: rewriting the same items adds no records
				putItems(t, c.DB, table, 0, 5)
			}
			run := start(t, r, h)
			waitFor(t, "the derived writes' records to be read", func() bool { return r.Stats().RecordsRead == 10 })
			shard := shardID(t, c.Streams, arn)
			recs := readStream(t, c.Streams, arn, 10)
			waitCheckpoint(t, r.Checkpoints, r.Consumer, shard, aws.ToString(recs[9].Dynamodb.SequenceNumber))
			run.stop()
			mu.Lock()
			defer mu.Unlock()
			derivedSeen := 0
			for pk, n := range seen {
				if strings.HasPrefix(pk, "TOTAL#") {
					derivedSeen += n
				}
			}
			st := r.Stats()
			switch guard.name {
			case "default":
				if derivedSeen != 0 || st.Skipped != 5 || st.FilteredOut != 0 || len(seen) != 5 {
					t.Fatalf("handler saw %v; stats %+v", seen, st)
				}
			case "filter":
				if derivedSeen != 0 || st.Skipped != 0 || st.FilteredOut != 5 || len(seen) != 5 {
					t.Fatalf("handler saw %v; stats %+v", seen, st)
				}
			case "none":
				if derivedSeen != 5 || st.Skipped != 0 {
					t.Fatalf("handler saw %v; stats %+v", seen, st)
				}
			}
		})
	}
}

// TestLoopGuardIsSkipDerived: the loop guard written as a filter keeps
// exactly the records SkipDerived does not skip, for inserts, modifies and
// removals of items with derived true, false, absent or of another type.
func TestLoopGuardIsSkipDerived(t *testing.T) {
	guard := stream.LoopGuard("PK")
	flags := []*events.DynamoDBAttributeValue{nil, ptr(events.NewBooleanAttribute(true)), ptr(events.NewBooleanAttribute(false)),
		ptr(events.NewStringAttribute("true")), ptr(events.NewNullAttribute())}
	item := func(flag *events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		m := map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("A#1"), "SK": events.NewStringAttribute("B")}
		if flag != nil {
			m["derived"] = *flag
		}
		return m
	}
	n := 0
	for _, old := range flags {
		for _, new := range flags {
			for _, name := range []string{"INSERT", "MODIFY", "REMOVE"} {
				r := events.DynamoDBEventRecord{EventName: name, Change: events.DynamoDBStreamRecord{
					Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("A#1"), "SK": events.NewStringAttribute("B")}}}
				if name != "INSERT" {
					r.Change.OldImage = item(old)
				}
				if name != "REMOVE" {
					r.Change.NewImage = item(new)
				}
				if kept, skip := guard.Match(r), stream.SkipDerived(r); kept == skip {
					t.Errorf("%s old=%v new=%v: filter keeps=%v, SkipDerived skips=%v", name, old, new, kept, skip)
				}
				n++
			}
		}
	}
	if len(guard.Patterns()) != 4 || n != 75 {
		t.Fatalf("%d patterns, %d records", len(guard.Patterns()), n)
	}
}

func ptr[T any](v T) *T { return &v }
