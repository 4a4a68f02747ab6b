package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
		it, err := store.RecentItemForTest(store.RecentCooking{RecipeID: fmt.Sprintf("rec%02d", i%5),
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

// tieRecipes writes recipes of one method whose sort keys tie (rating keys
// as they were written before they ended with the recipe's id), between
// recipes whose keys do not: n tied, and three on each side of them.
func tieRecipes(t *testing.T, st *store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n + 6 {
		id, day := fmt.Sprintf("tie%02d", i), "05"
		switch {
		case i < 3:
			id, day = fmt.Sprintf("old%02d", i), fmt.Sprintf("%02d", 1+i)
		case i >= n+3:
			id, day = fmt.Sprintf("new%02d", i), fmt.Sprintf("%02d", 10+i)
		}
		r := cooking.Recipe{RecipeID: id, AuthorID: "chef", Title: "bread", Method: "bake", Servings: 2, CreatedAt: "2025-11-" + day + "T08:00:00.000Z"}
		if err := st.Cooking.CreateRecipe(ctx, r); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(id, "tie") { // the sort key without the id
			if _, err := st.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(st.Table), Key: store.RecipeKey(id).AV(),
				UpdateExpression:          aws.String("SET GSI2SK = :sk"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":sk": &types.AttributeValueMemberS{Value: "RATING#0.00#" + r.CreatedAt}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// methodPages reads a method's recipes page by page: each page's ids, and
// whether a cursor followed.
func methodPages(t *testing.T, st *store.Store, limit int32) (pages [][]string, more []bool) {
	t.Helper()
	cursor := ""
	for range 200 {
		items, next, err := st.Cooking.RecipesByMethod(context.Background(), "bake", store.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		var ids []string
		for _, r := range items {
			ids = append(ids, r.RecipeID)
		}
		pages, more = append(pages, ids), append(more, next != "")
		if next == "" {
			return pages, more
		}
		cursor = next
	}
	t.Fatalf("limit %d: no end after 200 pages", limit)
	return nil, nil
}

// Ties beyond a page: more items of one sort key than a page holds, in one
// shard, are read page by page as one key reads them. DynamoDB does not
// document the order of an index's items of one sort key, so among ties
// the sharded list has its own order (shard by shard), and the test
// compares what does not depend on it: the pages' sizes and cursors, the
// sort keys in order (a tie as "tie"), and every item once.
func TestShardedTiesBeyondAPage(t *testing.T) {
	t.Parallel()
	const ties = 12
	one := newStore(t)
	one.Sharding = store.Sharding{Method: 1}
	sharded := newStore(t)
	sharded.Sharding = store.Sharding{Method: 3}
	tieRecipes(t, one, ties)
	tieRecipes(t, sharded, ties)
	perShard := map[string]int{}
	for i := 3; i < ties+3; i++ {
		perShard[store.MethodIndexPK("bake", fmt.Sprintf("tie%02d", i), 3)]++
	}
	if len(perShard) != 3 || slices.Max(slices.Collect(maps.Values(perShard))) < 3 {
		t.Fatalf("the ties' shards %v: want every shard, one with more than two pages of two", perShard)
	}
	// a page by sort key: a tie's id is "tie", the others' their own
	class := func(pages [][]string) (out [][]string) {
		for _, p := range pages {
			var c []string
			for _, id := range p {
				if strings.HasPrefix(id, "tie") {
					id = "tie"
				}
				c = append(c, id)
			}
			out = append(out, c)
		}
		return out
	}
	for _, limit := range []int32{1, 2, 3, 5} {
		wantPages, wantMore := methodPages(t, one, limit)
		gotPages, gotMore := methodPages(t, sharded, limit)
		if d := cmp.Diff(class(wantPages), class(gotPages)); d != "" {
			t.Errorf("limit %d: pages by sort key differ (-one key +sharded):\n%s", limit, d)
		}
		if !slices.Equal(wantMore, gotMore) {
			t.Errorf("limit %d: cursors %v, one key's %v", limit, gotMore, wantMore)
		}
		seen := map[string]int{}
		for _, p := range gotPages {
			for _, id := range p {
				seen[id]++
			}
		}
		if len(seen) != ties+6 {
			t.Errorf("limit %d: %d recipes listed, want %d: %v", limit, len(seen), ties+6, gotPages)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("limit %d: %s listed %d times", limit, id, n)
			}
		}
	}
}

// During the backfill: an item moved from the unsharded key to its shard
// between the read's queries is on the page once, never twice and never
// missing, page after page.
func TestShardedReadDuringTheBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := newStore(t)
	old.Sharding = store.Sharding{Recent: 1, Trending: 1, Method: 1}
	cookings(t, old) // 37 cookings of December on the unsharded key
	want := pages(t, old, "recent", 100)

	sharded := store.New(old.DB, old.Table)
	sharded.Sharding = store.Sharding{Recent: 4, Trending: 1, Method: 1}
	// between the read of the unsharded key and of the shards, the
	// backfill moves the next cooking not moved yet
	moved := 0
	store.BetweenShardReads(sharded, func() {
		if moved == 37 {
			return
		}
		id := fmt.Sprintf("h%03d", moved)
		k := store.RecentKey("u", fmt.Sprintf("2025-12-%02dT12:00:00Z", 1+moved%28), id)
		if _, err := old.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(old.Table), Key: k.AV(),
			UpdateExpression: aws.String("SET GSI3PK = :pk"), ConditionExpression: aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{
				Value: store.RecentIndexPK(fmt.Sprintf("2025-12-%02dT12:00:00Z", 1+moved%28), id, 4)}}}); err != nil {
			t.Error(err)
		}
		moved++
	})
	for _, limit := range []int32{100, 1, 2, 5} {
		var got []string
		for _, p := range pages(t, sharded, "recent", limit) {
			got = append(got, pageItems(p)...)
		}
		if d := cmp.Diff(pageItems(want[0]), got); d != "" {
			t.Errorf("limit %d, %d moved: the month's cookings (-before +during the move):\n%s", limit, moved, d)
		}
	}
	if moved == 0 {
		t.Fatal("nothing was moved between the queries")
	}
}

// pageItems are the items of one of pages' pages ("[a b ] more=false").
func pageItems(page string) []string {
	items, _, _ := strings.Cut(strings.TrimPrefix(page, "["), "]")
	return strings.Fields(items)
}

// The shard counts are part of the data: the table records them, a
// program with a lower count than the items were written with (or than
// another program's) is refused with what to do, a higher one raises the
// record, and STORE_SHARDS_BACKFILLED (reads skip the unsharded key) is
// refused until a backfill has emptied it.
func TestShardCountsAreTheTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := newStore(t) // the seeds' layout: one key each
	with := func(sh store.Sharding) *store.Store {
		st := store.New(first.DB, first.Table)
		st.Sharding = sh
		return st
	}
	if raised, err := first.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); err != nil || raised != nil {
		t.Fatalf("a table without a record: %v, %v", raised, err)
	}
	if rec, found, err := first.ShardRecord(ctx); err != nil || !found || rec.Recent != 1 || rec.Trending != 1 || rec.Method != 1 {
		t.Fatalf("the record made: %+v, %v, %v", rec, found, err)
	}
	cookings(t, first) // on the unsharded keys

	// a deployment opts into shards of the month's key: the program
	// started with them raises the record
	four := with(store.Sharding{Recent: 4, Trending: 1, Method: 1})
	if raised, err := four.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); err != nil || !slices.Equal(raised, []string{"recent"}) {
		t.Fatalf("raise to 4: %v, %v", raised, err)
	}
	if raised, err := four.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); err != nil || raised != nil {
		t.Errorf("the same counts again: %v, %v", raised, err)
	}
	// a program still on the old count would not read the shards: refused
	_, err := with(store.DefaultSharding).AgreeSharding(ctx, store.ShardCheck{Now: time.Now()})
	if !errors.Is(err, store.ErrShardsDisagree) || !strings.Contains(err.Error(), "STORE_SHARDS_RECENT=1 is lower than the 4") ||
		!strings.Contains(err.Error(), "run with STORE_SHARDS_RECENT=4") {
		t.Errorf("a lowered count: %v", err)
	}
	_, err = with(store.Sharding{Recent: 3, Trending: 1, Method: 1}).AgreeSharding(ctx, store.ShardCheck{Now: time.Now()})
	if !errors.Is(err, store.ErrShardsDisagree) {
		t.Errorf("a count between: %v", err)
	}
	// reads may skip the unsharded key only once a backfill emptied it
	skip := with(store.Sharding{Recent: 4, Trending: 1, Method: 1, Backfilled: true})
	if _, err := skip.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); !errors.Is(err, store.ErrShardsDisagree) || !strings.Contains(err.Error(), "run `projector backfill` first") {
		t.Errorf("STORE_SHARDS_BACKFILLED before a backfill: %v", err)
	}
	if _, err := four.Upkeep.BackfillIndexShards(ctx, 2, nil); err != nil {
		t.Fatal(err)
	}
	if kinds, err := four.Upkeep.MarkBackfilled(ctx); err != nil || !slices.Equal(kinds, []string{"recent"}) {
		t.Fatalf("mark the backfill: %v, %v", kinds, err)
	}
	if _, err := skip.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); err != nil {
		t.Errorf("STORE_SHARDS_BACKFILLED after the backfill: %v", err)
	}
	got := pages(t, skip, "recent", 100)
	if n := len(pageItems(got[0])); n != 37 {
		t.Errorf("the month's cookings skipping the unsharded key: %d, want 37", n)
	}
	// an item on the unsharded key (one no program writes now) is no
	// longer read
	stray, err := store.RecentItemForTest(store.RecentCooking{RecipeID: "rec00", HistoryID: "stray", UserID: "u", CookDate: "2025-12-30T12:00:00Z"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(first.Table), Item: stray}); err != nil {
		t.Fatal(err)
	}
	if n := len(pageItems(pages(t, skip, "recent", 100)[0])); n != 37 {
		t.Errorf("skipping the unsharded key, %d read, want 37", n)
	}
	if n := len(pageItems(pages(t, four, "recent", 100)[0])); n != 38 {
		t.Errorf("reading the unsharded key too, %d read, want 38", n)
	}
	// another kind raised from one: its unsharded key holds items, so
	// skipping it is refused, and nothing is raised by the refused program
	if _, err := with(store.Sharding{Recent: 4, Trending: 2, Method: 1, Backfilled: true}).AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); !errors.Is(err, store.ErrShardsDisagree) ||
		!strings.Contains(err.Error(), "TRENDING#") {
		t.Errorf("STORE_SHARDS_BACKFILLED with trending raised: %v", err)
	}
	if _, err := four.Upkeep.MarkBackfilled(ctx); err != nil {
		t.Errorf("the counts are unchanged: %v", err)
	}
	if raised, err := with(store.Sharding{Recent: 4, Trending: 2, Method: 1}).AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); err != nil || !slices.Equal(raised, []string{"trending"}) {
		t.Errorf("raise trending: %v, %v", raised, err)
	}
	if _, err := skip.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); !errors.Is(err, store.ErrShardsDisagree) || !strings.Contains(err.Error(), "STORE_SHARDS_TRENDING=1 is lower") {
		t.Errorf("a program with the old trending count: %v", err)
	}
	// the record of another program's backfill under other counts is refused
	if _, err := four.Upkeep.MarkBackfilled(ctx); !errors.Is(err, store.ErrShardsDisagree) {
		t.Errorf("a backfill's mark after the counts changed: %v", err)
	}
}

// A table written before it kept a record of its shards, when the default
// was four each: a program on the seeds' one key is refused (it would not
// read the shards), and the backfill records one key and moves the items
// back to the unsharded keys, where it reads them.
func TestShardsFromBeforeTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before := newStore(t)
	before.Sharding = store.Sharding{Recent: 4, Trending: 4, Method: 4}
	cookings(t, before) // no record
	want := map[string][]string{}
	for _, list := range []string{"recent", "trending", "method"} {
		want[list] = pages(t, before, list, 100)
	}
	now := store.New(before.DB, before.Table) // the default
	// a program started on it is refused, naming a key in shards (its
	// month's, as the last day of it is now; or a method's) and the counts
	dec31 := time.Date(2025, 12, 31, 12, 0, 0, 0, time.UTC)
	_, err := now.AgreeSharding(ctx, store.ShardCheck{Now: dec31})
	if !errors.Is(err, store.ErrShardsDisagree) || !strings.Contains(err.Error(), "STORE_SHARDS_RECENT=4 STORE_SHARDS_TRENDING=4 STORE_SHARDS_METHOD=4") ||
		!strings.Contains(err.Error(), "RECENT#2025-12#") && !strings.Contains(err.Error(), "METHOD#bake#") {
		t.Fatalf("a program on one key, the table in shards without a record: %v", err)
	}
	if _, found, _ := now.ShardRecord(ctx); found {
		t.Fatal("the refused program recorded its counts")
	}
	// the backfill may: it records one key, and moves them there
	if _, err := now.AgreeSharding(ctx, store.ShardCheck{Now: dec31, Backfill: true}); err != nil {
		t.Fatal(err)
	}
	st, err := now.Upkeep.BackfillIndexShards(ctx, 2, nil)
	if err != nil || st.Moved != 37+23+17 {
		t.Fatalf("backfill to one key: %+v, %v; want 77 moved", st, err)
	}
	for _, list := range []string{"recent", "trending", "method"} {
		if d := cmp.Diff(want[list], pages(t, now, list, 100)); d != "" {
			t.Errorf("%s on one key (-in shards +moved back):\n%s", list, d)
		}
	}
	if n := len(queryIndex(t, now, "RECENT#2025-12")); n != 37 {
		t.Errorf("%d cookings on the month's key, want 37", n)
	}
}
