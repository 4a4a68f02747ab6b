package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
)

// cookings writes a month's recent cookings and a week's trending counts
// (ties included) with st's sharding.
func cookings(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 37 {
		it, err := store.RecentItemForTest(fmt.Sprintf("rec%02d", i%5), store.RecentCooking{RecipeID: fmt.Sprintf("rec%02d", i%5),
			HistoryID: fmt.Sprintf("h%03d", i), UserID: "u", CookDate: fmt.Sprintf("2025-12-%02dT12:00:00Z", 1+i%28), Title: "dish"}, st.Sharding.Recent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 23 {
		w := st.Cooking.TrendingWriteForTest(fmt.Sprintf("rec%02d", i), "2026-W01", 1+i%6)
		if _, err := st.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{w}}); err != nil {
			t.Fatal(err)
		}
	}
	// 17 recipes of one method, some created at the same instant (their
	// sort keys then differ by id), some rated
	for i := range 17 {
		r := cooking.Recipe{RecipeID: fmt.Sprintf("bake%02d", i), AuthorID: "chef", Title: "bread", Method: "bake", Servings: 2,
			CreatedAt: fmt.Sprintf("2025-11-%02dT08:00:00.000Z", 1+i%9)}
		if err := st.Cooking.CreateRecipe(ctx, r); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			avg := float64(i%5) + 0.5
			if _, err := st.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(st.Table), Key: store.RecipeKey(r.RecipeID).AV(),
				UpdateExpression:          aws.String("SET avgRating = :a, GSI2SK = :sk"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: fmt.Sprint(avg)}, ":sk": &types.AttributeValueMemberS{Value: cooking.RatingSortKey(avg, r.CreatedAt, r.RecipeID)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pages reads a list page by page with limit; each page is its items'
// ids, and whether a cursor followed.
func pages(t *testing.T, st *store.Store, list string, limit int32) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	cursor := ""
	for range 100 {
		var page string
		var next string
		var err error
		switch list {
		case "method":
			var items []cooking.Recipe
			items, next, err = st.Cooking.RecipesByMethod(ctx, "bake", store.Page{Limit: limit, Cursor: cursor})
			for _, it := range items {
				page += it.RecipeID + " "
			}
		case "recent":
			var items []store.RecentCooking
			items, next, err = st.Cooking.RecentCookings(ctx, "2025-12", store.Page{Limit: limit, Cursor: cursor})
			for _, it := range items {
				page += it.HistoryID + " "
			}
		default:
			var items []store.Trending
			items, next, err = st.Cooking.TrendingRecipes(ctx, "2026-W01", store.Page{Limit: limit, Cursor: cursor})
			for _, it := range items {
				page += fmt.Sprintf("%s:%d ", it.RecipeID, it.Count)
			}
		}
		if err != nil {
			t.Fatalf("%s, limit %d: %v", list, limit, err)
		}
		out = append(out, fmt.Sprintf("[%s] more=%v", page, next != ""))
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatalf("%s, limit %d: no end after 100 pages", list, limit)
	return nil
}

// Sharded index keys answer item for item, page for page, as one key
// does: the month's cookings newest first, the week's counts highest
// first, a method's recipes best rated first (ties on creation time by
// id), at every page size, cursors included.
func TestShardedListsAnswerAsOneKey(t *testing.T) {
	t.Parallel()
	one := newStore(t)
	one.Sharding = store.Sharding{Recent: 1, Trending: 1}
	sharded := newStore(t)
	sharded.Sharding = store.Sharding{Recent: 4, Trending: 3, Method: 5}
	cookings(t, one)
	cookings(t, sharded)
	if n := len(queryIndex(t, sharded, "RECENT#2025-12")); n != 0 {
		t.Fatalf("the sharded store wrote %d items to the month's one key", n)
	}
	for _, list := range []string{"recent", "trending", "method"} {
		for _, limit := range []int32{1, 2, 3, 5, 10, 22, 23, 24, 25, 36, 37, 38, 100} {
			if d := cmp.Diff(pages(t, one, list, limit), pages(t, sharded, list, limit)); d != "" {
				t.Errorf("%s, limit %d: sharded pages differ (-one key +sharded):\n%s", list, limit, d)
			}
		}
	}
	// A cursor of another list is refused as input, not sent to DynamoDB.
	_, next, err := sharded.Cooking.TrendingRecipes(context.Background(), "2026-W01", store.Page{Limit: 2})
	if err != nil || next == "" {
		t.Fatalf("first page: %q, %v", next, err)
	}
	if _, _, err := sharded.Cooking.RecentCookings(context.Background(), "2025-12", store.Page{Limit: 2, Cursor: next}); !errs.Is(err, errs.Invalid) {
		t.Errorf("a trending cursor for the recent list: %v, want invalid input", err)
	}
}

// The migration: items written to one key are read by a sharded store
// at once (it queries the key too), a cursor of the unsharded list
// resumes the sharded one, and the backfill moves every item to its shard
// once — a second run finds nothing to do — with the answers unchanged.
func TestShardMigration(t *testing.T) {
	t.Parallel()
	old := newStore(t)
	old.Sharding = store.Sharding{Recent: 1, Trending: 1, Method: 1}
	cookings(t, old)
	// recipes written before their sort keys ended with their id
	for id, day := range map[string]string{"bake01": "02", "bake02": "03"} { // created on 1 + i%9
		if _, err := old.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(old.Table), Key: store.RecipeKey(id).AV(),
			UpdateExpression:          aws.String("SET GSI2SK = :sk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":sk": &types.AttributeValueMemberS{Value: "RATING#0.00#2025-11-" + day + "T08:00:00.000Z"}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string][]string{}
	for _, list := range []string{"recent", "trending", "method"} {
		before[list] = pages(t, old, list, 4)
	}
	_, cursor, err := old.Cooking.RecentCookings(context.Background(), "2025-12", store.Page{Limit: 8})
	if err != nil {
		t.Fatal(err)
	}
	wantRest, _, err := old.Cooking.RecentCookings(context.Background(), "2025-12", store.Page{Limit: 100, Cursor: cursor})
	if err != nil {
		t.Fatal(err)
	}

	migrated := *old
	migrated.Sharding = store.Sharding{Recent: 4, Trending: 4, Method: 4}
	migrated.Upkeep.Store = &migrated
	migrated.Cooking.Store = &migrated
	check := func(when string) {
		t.Helper()
		for _, list := range []string{"recent", "trending", "method"} {
			if d := cmp.Diff(before[list], pages(t, &migrated, list, 4)); d != "" {
				t.Errorf("%s, %s: pages differ (-before +now):\n%s", when, list, d)
			}
		}
		rest, _, err := migrated.Cooking.RecentCookings(context.Background(), "2025-12", store.Page{Limit: 100, Cursor: cursor})
		if err != nil || !cmp.Equal(rest, wantRest) {
			t.Errorf("%s: the unsharded list's cursor resumed to %d items (%v), want %d", when, len(rest), err, len(wantRest))
		}
	}
	check("before the backfill")
	st, err := migrated.Upkeep.BackfillIndexShards(context.Background(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Indexed != 37+23+17 || st.Moved != 37+23+17 {
		t.Errorf("first backfill: %+v, want 77 items moved", st)
	}
	if n := len(queryIndex(t, &migrated, "RECENT#2025-12")) + len(queryIndex(t, &migrated, "TRENDING#2026-W01")) + len(queryGSI2(t, &migrated, "METHOD#bake")); n != 0 {
		t.Errorf("%d items left on the unsharded keys", n)
	}
	check("after the backfill")
	st, err = migrated.Upkeep.BackfillIndexShards(context.Background(), 2, nil)
	if err != nil || st.Moved != 0 || st.Unmoved != 77 {
		t.Errorf("second backfill: %+v, %v; want nothing moved", st, err)
	}
}

func queryGSI2(t *testing.T, st *store.Store, pk string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := st.DB.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(st.Table), IndexName: aws.String(store.IndexGSI2),
		KeyConditionExpression: aws.String("GSI2PK = :pk"), ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

func newStore(t *testing.T) *store.Store {
	c, table, _ := ddbtest.Table(t)
	return store.New(c.DB, table)
}

func queryIndex(t *testing.T, st *store.Store, pk string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := st.DB.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(st.Table), IndexName: aws.String(store.IndexGSI3),
		KeyConditionExpression: aws.String("GSI3PK = :pk"), ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// A shard's answer cut short by DynamoDB's 1 MB neither ends the list nor
// skips that shard's unread items: the page ends at its last item, with a
// cursor. Big recipes (about 300 KB each) make every query stop after
// three or four, far short of a page of 25; read page by page, the
// sharded list has the items of the one key's, in its order.
func TestShardedListsSurviveCutPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one := newStore(t)
	one.Sharding = store.Sharding{Method: 1}
	sharded := newStore(t)
	sharded.Sharding = store.Sharding{Method: 3}
	big := strings.Repeat("flour, water, salt. ", 15000) // 300 KB
	for _, st := range []*store.Store{one, sharded} {
		for i := range 20 {
			r := cooking.Recipe{RecipeID: fmt.Sprintf("big%02d", i), AuthorID: "chef", Title: "loaf", Description: big, Method: "bake",
				Servings: 2, CreatedAt: fmt.Sprintf("2025-10-%02dT08:00:00.000Z", 1+i)}
			if err := st.Cooking.CreateRecipe(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(st *store.Store) (ids []string, pages int) {
		cursor := ""
		for pages = 1; pages < 50; pages++ {
			items, next, err := st.Cooking.RecipesByMethod(ctx, "bake", store.Page{Limit: 25, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range items {
				ids = append(ids, r.RecipeID)
			}
			if next == "" {
				return ids, pages
			}
			cursor = next
		}
		t.Fatal("no end after 50 pages")
		return nil, 0
	}
	want, onePages := read(one)
	got, shardedPages := read(sharded)
	if len(want) != 20 || !cmp.Equal(got, want) {
		t.Errorf("sharded list %v (%d pages), want %v (%d pages)", got, shardedPages, want, onePages)
	}
	if onePages < 3 {
		t.Errorf("one key's list took %d pages of 25: its queries were not cut short", onePages)
	}
}

// A recipe re-rated between the backfill's scan and its move (the
// projector sets only the sort key) is read again and moved: none stays
// on the unsharded key.
func TestShardMigrationRacesARating(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := newStore(t)
	old.Sharding = store.Sharding{Method: 1}
	r := cooking.Recipe{RecipeID: "raced", AuthorID: "chef", Title: "pie", Method: "bake", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}
	if err := old.Cooking.CreateRecipe(ctx, r); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	hooked := dynamodb.New(old.DB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("rate-between", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if _, ok := in.Parameters.(*dynamodb.UpdateItemInput); ok {
					once.Do(func() { // the projector's rating update, first
						_, err := old.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(old.Table), Key: store.RecipeKey("raced").AV(),
							UpdateExpression:          aws.String("SET avgRating = :a, GSI2SK = :sk"),
							ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: "4"}, ":sk": &types.AttributeValueMemberS{Value: cooking.RatingSortKey(4, r.CreatedAt, "raced")}}})
						if err != nil {
							t.Error(err)
						}
					})
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
	})
	migrated := store.New(hooked, old.Table)
	migrated.Sharding = store.Sharding{Method: 4}
	st, err := migrated.Upkeep.BackfillIndexShards(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Moved != 1 || st.Overtook != 1 {
		t.Errorf("backfill %+v, want the recipe moved after one race", st)
	}
	if n := len(queryGSI2(t, migrated, "METHOD#bake")); n != 0 {
		t.Errorf("%d recipe(s) left on the unsharded key", n)
	}
	items, _, err := migrated.Cooking.RecipesByMethod(ctx, "bake", store.Page{})
	if err != nil || len(items) != 1 || items[0].AvgRating != 4 {
		t.Errorf("the method's recipes after the move: %+v, %v", items, err)
	}
}
