package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
)

// pendingHolding returns the pending items of a recipe that hold counts,
// by n.
func pendingHolding(t *testing.T, st *store.Store, recipeID string) map[int]store.Pending {
	t.Helper()
	out := map[int]store.Pending{}
	for n := range store.PendingShards {
		got, err := st.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(st.Table), Key: store.PendingKey(recipeID, n).AV(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if got.Item == nil {
			continue
		}
		p, err := store.PendingFrom(got.Item)
		if err == nil && !p.Empty() {
			out[n] = p
		}
	}
	return out
}

// createPho creates the recipe the drain tests cook.
func createPho(t *testing.T, st *store.Store) {
	t.Helper()
	if err := st.Cooking.CreateRecipe(context.Background(), cooking.Recipe{RecipeID: "pho", AuthorID: "chef", Title: "Pho", Method: "simmer", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}); err != nil {
		t.Fatal(err)
	}
}

// phoCookedOnce is a store with the recipe and one cooking of it (by an,
// rated 5) counted in a pending item, not drained.
func phoCookedOnce(t *testing.T) *store.Store {
	t.Helper()
	st := newStore(t)
	createPho(t, st)
	if _, err := st.Cooking.ApplyCooking(context.Background(), "pho", []store.CookingDelta{cookDelta("ev1", "an", 1, 5, false)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	return st
}

func cookDelta(id, cook string, week int, rating int, remove bool) store.CookingDelta {
	d := store.CookingDelta{SourceID: id, At: time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC), Cook: cook, Week: "2026-W02", WeekDelta: week,
		Recent: &store.RecentCooking{RecipeID: "pho", HistoryID: "h-" + cook, UserID: cook, CookDate: "2026-01-07T12:00:00Z", Title: "Pho"}, Remove: remove}
	if rating > 0 {
		d.RatingCount, d.RatingSum = week, week*rating
	}
	return d
}

// A cooking and its removal counted in two pending items: one of them alone
// counts less than nothing, but a drain moves them together, so the totals
// never go below 0 (a history entry's insert is counted before its removal:
// DynamoDB Streams gives an item's changes in order,
// amazondynamodb/latest/developerguide/Streams.html).
func TestDrainNeverBelowZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	createPho(t, st)
	// a removal whose change lands in another pending item than the insert's
	insert := cookDelta("ev-insert", "an", 1, 4, false)
	if _, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{insert}, time.Hour); err != nil {
		t.Fatal(err)
	}
	first := pendingHolding(t, st, "pho")
	var removal store.CookingDelta
	for i := range 64 {
		removal = cookDelta("ev-remove-"+strings.Repeat("x", i), "an", -1, 4, true)
		if _, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{removal}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if len(pendingHolding(t, st, "pho")) == 2 {
			break
		}
		// same pending item: the two cancel out; undo by counting it again
		if _, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{cookDelta("ev-reinsert-"+strings.Repeat("x", i), "an", 1, 4, false)}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	held := pendingHolding(t, st, "pho")
	if len(first) != 1 || len(held) != 2 {
		t.Fatalf("pending items holding counts: %v, then %v; want one, then two", first, held)
	}
	negative := false
	for _, p := range held {
		negative = negative || p.Weeks["2026-W02"] < 0
	}
	if !negative {
		t.Fatalf("no pending item alone counts below 0: %v", held)
	}
	a, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho")
	if err != nil || a.Applied != 1 {
		t.Fatalf("drain: %+v, %v", a, err)
	}
	r, err := st.Cooking.GetRecipe(ctx, "pho")
	if err != nil || r.Rating.RatingCount != 0 || r.Rating.RatingSum != 0 {
		t.Errorf("rating after the drain: %+v, %v", r.Rating, err)
	}
	if top, _, err := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10}); err != nil || len(top) != 0 {
		t.Errorf("the week's ranking: %+v, %v", top, err)
	}
	if held := pendingHolding(t, st, "pho"); len(held) != 0 {
		t.Errorf("pending items still holding counts: %v", held)
	}
}

// A pending item that cannot be read (written by someone else) is left and
// reported; the others are drained; a drain again writes nothing and
// reports it again, so its record is dead-lettered after its retries rather
// than holding the shard. A recipe item that cannot be read deletes nothing.
// (Not AWS's: the project's own items.)
func TestDrainLeavesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := phoCookedOnce(t)
	var bad int
	for n := range store.PendingShards {
		if _, ok := pendingHolding(t, st, "pho")[n]; !ok {
			bad = n
			break
		}
	}
	put := func(it map[string]types.AttributeValue) {
		t.Helper()
		if _, err := st.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	k := store.PendingKey("pho", bad)
	put(map[string]types.AttributeValue{"PK": s(k.PK), "SK": s(k.SK), "itemType": s(store.TypeCookingPending),
		"derived": &types.AttributeValueMemberBOOL{Value: true}, "w#not-a-week": &types.AttributeValueMemberN{Value: "1"}})
	a, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho")
	if err == nil || !strings.Contains(err.Error(), k.PK) || a.Applied != 1 {
		t.Fatalf("drain: %+v, %v; want the good item drained and the bad one named", a, err)
	}
	if r, _ := st.Cooking.GetRecipe(ctx, "pho"); r.Rating.RatingCount != 1 || r.Rating.RatingSum != 5 {
		t.Errorf("rating: %+v", r.Rating)
	}
	if a, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho"); err == nil || a.Applied != 0 {
		t.Errorf("second drain: %+v, %v; want nothing moved and the bad item named", a, err)
	}
	// An unreadable recipe item: an error, and its pending partitions stay.
	if _, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{cookDelta("ev2", "binh", 1, 3, false)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	put(map[string]types.AttributeValue{"PK": s("RECIPE#pho"), "SK": s("METADATA"), "itemType": s(store.TypeRecipe), "recipeId": &types.AttributeValueMemberN{Value: "7"}})
	if a, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho"); err == nil || a.Gone {
		t.Errorf("drain of an unreadable recipe: %+v, %v; want an error, not a cascade", a, err)
	}
	if held := pendingHolding(t, st, "pho"); len(held) != 1 {
		t.Errorf("pending items after it: %v, want the one holding binh's cooking", held)
	}
}

// A call counted after its recipe's cascade (it read the recipe before the
// deletion) leaves a pending item; its drain finds the recipe gone and
// deletes the pending partitions and the recent items their ledgers name.
// (The project's own items: AWS documents nothing of them.)
func TestDrainOfADeletedRecipe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := phoCookedOnce(t)
	if _, err := st.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(st.Table), Key: store.RecipeKey("pho").AV()}); err != nil {
		t.Fatal(err)
	}
	a, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho")
	if err != nil || !a.Gone {
		t.Fatalf("drain: %+v, %v", a, err)
	}
	for n := range store.PendingShards {
		out, err := st.DB.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(st.Table), KeyConditionExpression: aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: store.PendingPK("pho", n)}}})
		if err != nil || len(out.Items) != 0 {
			t.Errorf("pending partition %d: %d items, %v", n, len(out.Items), err)
		}
	}
	k := store.RecentKey("an", "2026-01-07T12:00:00Z", "h-an")
	if got, err := st.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.Table), Key: k.AV(), ConsistentRead: aws.Bool(true)}); err != nil || got.Item != nil {
		t.Errorf("the recent item outlived its recipe: %v, %v", got.Item, err)
	}
}

// A history entry's removal counted before its insertion, as a Kinesis data
// stream for DynamoDB may deliver one item's records ("Change data capture
// for Kinesis Data Streams with DynamoDB": out of order, more than once):
// the insertion still counts (+1 after −1), but its recent item, whose
// entry is gone, is not written back; an entry that exists gets its own.
func TestRecentItemNotBackAfterItsRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	createPho(t, st)
	removal, insert := cookDelta("ev-remove", "an", -1, 4, true), cookDelta("ev-insert", "an", 1, 4, false)
	other := cookDelta("ev-other", "bao", 1, 0, false)
	putHistory(t, st, *other.Recent) // bao's entry exists; an's is gone
	for _, d := range []store.CookingDelta{removal, insert, other} {
		if a, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{d}, time.Hour); err != nil || a.Applied != 1 {
			t.Fatalf("%s: applied %d, %v", d.SourceID, a.Applied, err)
		}
	}
	if it := getItem(t, st, store.RecentKey("an", insert.Recent.CookDate, insert.Recent.HistoryID)); it != nil {
		t.Error("an's recent item is back after its removal")
	}
	if it := getItem(t, st, store.RecentKey("bao", other.Recent.CookDate, other.Recent.HistoryID)); it == nil {
		t.Error("bao's recent item is not written, though the entry exists")
	}
}
