package ddb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/store"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// Each client counts its own requests by operation: the table's client,
// the streams client, and a separate client made with NewDB (as the
// checkpoint store gets).
func TestCountersCountEachClientApart(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	ctx := context.Background()
	base := c.Requests.Counts()
	other := &ddb.Counter{}
	db2 := c.NewDB(other)
	for range 3 {
		if _, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: store.RoomKey("x").AV()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db2.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: store.RoomKey("x").AV()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	got := c.Requests.Counts()
	if n := got.ByOp["GetItem"] - base.ByOp["GetItem"]; n != 3 {
		t.Errorf("table client: %d GetItem calls counted, want 3 (%+v)", n, got)
	}
	if got.Attempts < got.Calls || got.Calls-base.Calls != 3 {
		t.Errorf("table client: %d calls, %d attempts (before: %+v)", got.Calls, got.Attempts, base)
	}
	if o := other.Counts(); o.Calls != 1 || o.ByOp["GetItem"] != 1 || o.Attempts != 1 {
		t.Errorf("NewDB client counted %+v, want one GetItem", o)
	}
	if s := c.StreamRequests.Counts(); s.ByOp["DescribeStream"] < 1 {
		t.Errorf("streams client counted %+v", s)
	}
}

// With Capacity, a counter sums the units DynamoDB reports: a put of a
// small item is one write unit, a strongly consistent read of it one read
// unit. A transaction it prices itself at AWS's rates (DynamoDB Local
// reports 2 units for a transaction of three small puts): twice per item,
// per KB, and per index the item is in.
func TestCounterSumsCapacity(t *testing.T) {
	c, table, _ := ddbtest.Table(t)
	ctx := context.Background()
	counter := &ddb.Counter{Capacity: true, IndexPKs: []string{"GSI1PK", "GSI2PK"}}
	db := c.NewDB(counter)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	item := func(sk string, attrs ...string) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{"PK": s("CAP"), "SK": s(sk)}
		for i := 0; i+1 < len(attrs); i += 2 {
			it[attrs[i]] = s(attrs[i+1])
		}
		return it
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item("a"), ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	got := counter.Counts()
	if got.WriteUnits != 1 || got.ReadUnits != 1 {
		t.Errorf("put and get: %v write and %v read units, want 1 and 1", got.WriteUnits, got.ReadUnits)
	}
	put := func(it map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: it}}
	}
	big := strings.Repeat("x", 1500)
	for _, tc := range []struct {
		name  string
		items []types.TransactWriteItem
		want  float64
	}{
		{"three small puts", []types.TransactWriteItem{put(item("b")), put(item("c")), put(item("d"))}, 6},
		{"a put of 1.5 KB", []types.TransactWriteItem{put(item("e", "body", big))}, 4},
		{"a put in one index", []types.TransactWriteItem{put(item("f", "GSI1PK", "x", "GSI1SK", "y"))}, 4},
		{"a check and a put", []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: item("a"), ConditionExpression: aws.String("attribute_exists(PK)")}},
			put(item("g"))}, 4},
		{"an update of an index key", []types.TransactWriteItem{{Update: &types.Update{TableName: aws.String(table), Key: item("f"),
			UpdateExpression: aws.String("SET GSI2SK = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("z")}}}}, 6},
	} {
		before := counter.Counts().WriteUnits
		if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tc.items}); err != nil {
			t.Fatal(err)
		}
		if w := counter.Counts().WriteUnits - before; w != tc.want {
			t.Errorf("a transaction of %s: %v write units, want %v", tc.name, w, tc.want)
		}
	}
	// without Capacity nothing is asked or summed
	if c.Requests.Counts().WriteUnits != 0 {
		t.Error("a counter without Capacity summed units")
	}
}

// A call made with a labelled context is counted under its label too,
// with the capacity it used; an unlabelled one only in the totals.
func TestCounterCountsByLabel(t *testing.T) {
	c, table, _ := ddbtest.Table(t)
	counter := &ddb.Counter{Capacity: true}
	db := c.NewDB(counter)
	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "LABEL"}, "SK": &types.AttributeValueMemberS{Value: "a"}}
	ctx := ddb.WithLabel(context.Background(), "POST /things")
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key}); err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []context.Context{ctx, context.Background()} {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	got := counter.Counts()
	u, ok := got.ByLabel["POST /things"]
	if !ok || len(got.ByLabel) != 1 {
		t.Fatalf("labels %v, want POST /things only", got.ByLabel)
	}
	if u.Calls != 2 || u.ByOp["PutItem"] != 1 || u.ByOp["GetItem"] != 1 {
		t.Errorf("label counted %+v, want one put and one get", u)
	}
	if u.WriteUnits != 1 || u.ReadUnits != 1 {
		t.Errorf("label used %v write and %v read units, want 1 and 1", u.WriteUnits, u.ReadUnits)
	}
	if got.Calls != 3 || got.ReadUnits != 2 {
		t.Errorf("totals %d calls, %v read units; want 3 and 2", got.Calls, got.ReadUnits)
	}
}
