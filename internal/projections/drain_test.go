package projections_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// A call holding records of all eight of a recipe's pending items drains
// the recipe once: the projector keys a pending item's records by recipe
// (one group), so a hot recipe's totals are written once per call however
// many of its pending records the call holds (the combiner's invariant,
// internal/store/combiner.go; the project's own design, not AWS's).
func TestProjectorDrainsOncePerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	if err := st.Cooking.CreateRecipe(ctx, cooking.Recipe{RecipeID: "pho", AuthorID: "chef", Title: "Pho", Method: "simmer", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}); err != nil {
		t.Fatal(err)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for n := range store.PendingShards { // a week's +1 on each pending item
		k := store.PendingKey("pho", n)
		if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"PK": s(k.PK), "SK": s(k.SK), "itemType": s(store.TypeCookingPending), "derived": &types.AttributeValueMemberBOOL{Value: true},
			"recipeId": s("pho"), "w#2026-W02": &types.AttributeValueMemberN{Value: "1"}}}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	var pending []events.DynamoDBEventRecord
	for _, r := range ev.Records {
		if store.IsPendingKey(r.Change.Keys["PK"].String(), r.Change.Keys["SK"].String()) {
			pending = append(pending, r)
		}
	}
	if len(pending) != store.PendingShards {
		t.Fatalf("%d pending records, want %d", len(pending), store.PendingShards)
	}
	before := c.Requests.Counts().ByOp
	out, err := (&projections.Projector{Store: st}).Handle(ctx, events.DynamoDBEvent{Records: pending})
	if err != nil || len(out.BatchItemFailures) > 0 {
		t.Fatalf("%+v %v", out, err)
	}
	after := c.Requests.Counts().ByOp
	reads, writes := after["TransactGetItems"]-before["TransactGetItems"], after["TransactWriteItems"]-before["TransactWriteItems"]
	if reads != 1 || writes != 1 {
		t.Errorf("%d snapshot reads and %d transactions for one call of %d pending records, want 1 and 1", reads, writes, len(pending))
	}
	top, _, err := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10})
	if err != nil || len(top) != 1 || top[0].Count != store.PendingShards {
		t.Errorf("the week: %s, %v", fmt.Sprint(top), err)
	}
}
