package replay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// recount is a recompute-style projection: on an order record it reads
// the customer's orders from the table and writes their sum. With
// handleRemovals false it has the classic bug of ignoring removals — which
// the table's final state hides.
func recount(tbl *ddblocal.Table, handleRemovals bool) stream.Handler {
	db := dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	return stream.Skip(nil, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if r.EventName == "REMOVE" && !handleRemovals {
				continue
			}
			pk := r.Change.Keys["PK"].String()
			out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true),
				KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :o)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}, ":o": &types.AttributeValueMemberS{Value: "ORDER#"}}})
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			sum := 0
			for _, it := range out.Items {
				var n int
				fmt.Sscan(it["amount"].(*types.AttributeValueMemberN).Value, &n)
				sum += n
			}
			_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "TOTALS"},
				"cents": &types.AttributeValueMemberN{Value: fmt.Sprint(sum)}, "derived": &types.AttributeValueMemberBOOL{Value: true}}})
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
		}
		return events.DynamoDBEventResponse{}, nil
	})
}

func TestSourceTableShowsIntermediateStates(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	put := func(c, o string, amount int) {
		_, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: c}, "SK": &types.AttributeValueMemberS{Value: "ORDER#" + o},
			"amount": &types.AttributeValueMemberN{Value: fmt.Sprint(amount)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("C#1", "o1", 100)
	put("C#1", "o2", 50)
	put("C#2", "o3", 7)
	put("C#2", "o3", 8)
	if _, err := tbl.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl.Name), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "C#1"}, "SK": &types.AttributeValueMemberS{Value: "ORDER#o2"}}}); err != nil {
		t.Fatal(err)
	}
	ev, err := replay.Capture(ctx, tbl.Streams, tbl.StreamARN)
	if err != nil {
		t.Fatal(err)
	}
	ts := replay.TableState{DB: tbl.DB, Table: tbl.Name, Derived: replay.DerivedFlag}
	want := replay.Want([]map[string]any{
		{"PK": "C#1", "SK": "TOTALS", "cents": replay.Number("100"), "derived": true},
		{"PK": "C#2", "SK": "TOTALS", "cents": replay.Number("8"), "derived": true},
	})
	target := func(h stream.Handler, src *replay.SourceTable) replay.Target {
		return replay.Target{Handler: h, Reset: ts.Reset, State: ts.State, Expect: want, Source: src}
	}
	schedules := replay.Schedules(3, 8)

	// Against the final table the buggy projection passes: a false pass.
	rep, err := replay.Check(ctx, ev, target(recount(tbl, false), nil), schedules)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() != nil {
		t.Fatalf("against the final table: %v", rep.Err())
	}
	// Moved through its history, the table shows the bug.
	src := &replay.SourceTable{DB: tbl.DB, Table: tbl.Name}
	rep, err = replay.Check(ctx, ev, target(recount(tbl, false), src), schedules)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), `batch size 1`) || !strings.Contains(err.Error(), "150") {
		t.Fatalf("the removal bug was not caught: %v", err)
	}
	// The correct projection passes in both modes.
	rep, err = replay.Check(ctx, ev, target(recount(tbl, true), src), schedules)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	// and the table is left in its final state
	out, err := tbl.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var core []string
	for _, it := range out.Items {
		if _, ok := it["derived"]; !ok {
			core = append(core, it["PK"].(*types.AttributeValueMemberS).Value+" "+it["SK"].(*types.AttributeValueMemberS).Value+" "+it["amount"].(*types.AttributeValueMemberN).Value)
		}
	}
	if got := strings.Join(slices.Sorted(slices.Values(core)), ", "); got != "C#1 ORDER#o1 100, C#2 ORDER#o3 8" {
		t.Fatalf("after Check the source table holds %s", got)
	}
}

// A stream without old images cannot be replayed into the table.
func TestSourceTableNeedsBothImages(t *testing.T) {
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventID: "e1", EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "1", Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("a")},
		NewImage: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("a")}}}}}
	h := func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	_, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: h, Source: &replay.SourceTable{Table: "x"}}, replay.AsCaptured)
	if err == nil || !strings.Contains(err.Error(), "NEW_AND_OLD_IMAGES") {
		t.Fatal(err)
	}
}
