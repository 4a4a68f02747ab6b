package ddb_test

import (
	"context"
	"fmt"
	"maps"
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
	counter := &ddb.Counter{Capacity: true, Indexes: []ddb.Index{{Name: "GSI1", PK: "GSI1PK", SK: "GSI1SK"}, {Name: "GSI2", PK: "GSI2PK", SK: "GSI2SK"}}}
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

// With ByKey, a counter shares each call's units among the partition keys
// it used, the table's and each index's apart: an index entry moved by an
// update is a delete under its old key and a put under its new one, a
// delete's entry is found from the old item (asked for, then dropped from
// the answer), a query's units go to its partition key, and an entry a
// transaction changes without naming its key is the one last seen.
func TestCounterByKey(t *testing.T) {
	c, table, _ := ddbtest.Table(t)
	ctx := context.Background()
	counter := &ddb.Counter{Capacity: true, ByKey: true, Indexes: store.Indexes}
	db := c.NewDB(counter)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	gsi1 := ddb.Target(table, "GSI1")
	step := func(name string, call func() error, want map[string]map[string]ddb.KeyUnits) {
		t.Helper()
		before := counter.KeyCounts()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		after := counter.KeyCounts()
		for target, keys := range want {
			for k, w := range keys {
				got := after[target][k]
				got.Read -= before[target][k].Read
				got.Write -= before[target][k].Write
				if got.Read != w.Read || got.Write != w.Write {
					t.Errorf("%s: %s %q used %v read and %v write units, want %v and %v", name, target, k, got.Read, got.Write, w.Read, w.Write)
				}
			}
		}
	}
	step("a put in an index", func() error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"PK": s("A"), "SK": s("1"), "GSI1PK": s("X"), "GSI1SK": s("1")}})
		return err
	}, map[string]map[string]ddb.KeyUnits{table: {"A": {Write: 1}}, gsi1: {"X": {Write: 1}}})
	step("an update moving its entry", func() error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"PK": s("A"), "SK": s("1")}, UpdateExpression: aws.String("SET #g = :g"),
			ExpressionAttributeNames: map[string]string{"#g": "GSI1PK"}, ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("Q")}})
		return err
	}, map[string]map[string]ddb.KeyUnits{table: {"A": {Write: 1}}, gsi1: {"X": {Write: 1}, "Q": {Write: 1}}})
	step("a transaction's update after the entry moved", func() error { // seen where the update left it, not where the put did
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": s("A"), "SK": s("1")},
				UpdateExpression: aws.String("SET GSI1SK = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("5")}}},
		}})
		return err
	}, map[string]map[string]ddb.KeyUnits{gsi1: {"Q": {Write: 4}, "X": {}, ddb.UnknownKey: {}}})
	step("an update answered ALL_NEW, its entry kept", func() error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), ReturnValues: types.ReturnValueAllNew,
			Key: map[string]types.AttributeValue{"PK": s("A"), "SK": s("1")}, UpdateExpression: aws.String("SET GSI1SK = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("2")}})
		return err
	}, map[string]map[string]ddb.KeyUnits{gsi1: {"Q": {Write: 2}, ddb.UnknownKey: {}}})
	step("a query of the index", func() error {
		_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("GSI1"),
			KeyConditionExpression: aws.String("GSI1PK = :k"), ExpressionAttributeValues: map[string]types.AttributeValue{":k": s("Q")}})
		return err
	}, map[string]map[string]ddb.KeyUnits{gsi1: {"Q": {Read: 0.5}}})
	var deleted *dynamodb.DeleteItemOutput
	step("a delete", func() error {
		var err error
		deleted, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": s("A"), "SK": s("1")}})
		return err
	}, map[string]map[string]ddb.KeyUnits{table: {"A": {Write: 1}}, gsi1: {"Q": {Write: 1}}})
	if deleted.Attributes != nil {
		t.Errorf("a delete that asked for nothing back got the old item: %v", deleted.Attributes)
	}
	step("a transaction", func() error {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"PK": s("B"), "SK": s("1"), "GSI1PK": s("X"), "GSI1SK": s("1")}}},
			{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": s("C"), "SK": s("1")},
				UpdateExpression: aws.String("SET GSI1SK = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("3")}}},
		}})
		return err
	}, map[string]map[string]ddb.KeyUnits{table: {"B": {Write: 2}, "C": {Write: 2}}, gsi1: {"X": {Write: 2}, ddb.UnknownKey: {Write: 4}}})
	step("a transaction's update of an entry the counter saw", func() error {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": s("B"), "SK": s("1")}}); err != nil {
			return err
		}
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": s("B"), "SK": s("1")},
				UpdateExpression: aws.String("SET GSI1SK = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("4")}}},
		}})
		return err
	}, map[string]map[string]ddb.KeyUnits{gsi1: {"X": {Write: 4}, ddb.UnknownKey: {}}})
	step("a batch write", func() error {
		_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
			{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"PK": s("D"), "SK": s("1"), "GSI1PK": s("Y"), "GSI1SK": s("1")}}},
			{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"PK": s("E"), "SK": s("1"), "body": s(strings.Repeat("x", 1500))}}},
		}}})
		return err
	}, map[string]map[string]ddb.KeyUnits{table: {"D": {Write: 1}, "E": {Write: 2}}, gsi1: {"Y": {Write: 1}}})
	step("a batch read", func() error {
		_, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {
			Keys: []map[string]types.AttributeValue{{"PK": s("D"), "SK": s("1")}, {"PK": s("F"), "SK": s("1")}}}}})
		return err
	}, map[string]map[string]ddb.KeyUnits{table: {"D": {Read: 0.25}, "F": {Read: 0.25}}}) // DynamoDB Local's 0.5, shared evenly

	// Writes counts the calls that wrote in a key; an index key's Top, the
	// items whose entries wrote in it (the write units above: the put's and
	// the update's of A, the transaction's puts and update of B; D by batch
	// is not named).
	keys := counter.KeyCounts()
	if got := keys[table]["A"].Writes; got != 5 {
		t.Errorf("A: %d write calls, want 5 (a put, three updates, a delete)", got)
	}
	top := map[string]float64{}
	for _, it := range keys[gsi1]["X"].Top {
		if it.Item != "" {
			top[it.Item] = it.Write
		}
	}
	if want := map[string]float64{"A": 2, "B": 6}; !maps.Equal(top, want) {
		t.Errorf("GSI1 X's top items %v, want %v", top, want)
	}
}

// KeyUnits.AddTop keeps an index key's busiest items (space-saving: a new
// item past the fourth takes the least's place with its units added), and
// a negative count takes units off an item there only: how make load
// subtracts the snapshot before a phase from the one after it.
func TestKeyUnitsAddTop(t *testing.T) {
	var u ddb.KeyUnits
	for i, w := range []float64{5, 1, 3, 2} {
		u.AddTop(fmt.Sprintf("I%d", i), w)
	}
	u.AddTop("I0", 1)
	u.AddTop("new", 4)   // takes I1's place (1): 5
	u.AddTop("I3", -2)   // taken off
	u.AddTop("gone", -7) // not there: nothing
	want := [4]ddb.ItemUnits{{Item: "I0", Write: 6}, {Item: "new", Write: 5}, {Item: "I2", Write: 3}, {Item: "I3", Write: 0}}
	if u.Top != want {
		t.Errorf("top %v, want %v", u.Top, want)
	}
}
