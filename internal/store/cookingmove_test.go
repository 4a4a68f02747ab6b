package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
)

// The writer, started first on a new table, leaves the move to the
// projector (and would count, if it did, where the old build does); the
// projector finds no recent item in a recipe's partition and records the
// epoch: every change is counted in its cook's partition, nothing is left
// to move.
func TestLayoutOfANewTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	writer := newStore(t)
	if _, err := writer.AgreeSharding(ctx, store.ShardCheck{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := writer.ShardRecord(ctx); err != nil || rec.CookingMoved != "" || !writer.Layout.LegacyRecents || writer.Layout.LegacyBefore.Year() != 9999 {
		t.Fatalf("after the writer: record %+v (%v), layout %+v", rec, err, writer.Layout)
	}
	projector := store.New(writer.DB, writer.Table)
	if _, err := projector.AgreeSharding(ctx, store.ShardCheck{Now: time.Now(), CountsCooking: true}); err != nil {
		t.Fatal(err)
	}
	if projector.Layout != (store.Layout{}) {
		t.Errorf("layout of a new table: %+v", projector.Layout)
	}
}

// A deployment with data, upgraded in place: changes counted by the old
// build (markers and recent items in the recipe's partition) count nothing
// when they come again; changes after the move's time are counted in the
// cook's partition; the backfill moves the old recent items with a ledger
// naming each, reads find every item before and after, a second run moves
// nothing, and the recipe's cascade deletes them wherever they are.
func TestCookingMoveInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	r := cooking.Recipe{RecipeID: "pho", AuthorID: "chef", Title: "Pho", Method: "boil", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}
	if err := st.Cooking.CreateRecipe(ctx, r); err != nil {
		t.Fatal(err)
	}
	put := func(it map[string]types.AttributeValue) {
		t.Helper()
		if _, err := st.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	// The old build's table: a record without the move, two cookings
	// counted with their markers and recent items in the recipe's partition.
	put(map[string]types.AttributeValue{"PK": s("STORE#SHARDS"), "SK": s("COUNTS"), "itemType": s(store.TypeShardRecord),
		"recent": n("1"), "trending": n("1"), "method": n("1")})
	deploy := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	old := []store.RecentCooking{
		{RecipeID: "pho", HistoryID: "h1", UserID: "an", CookDate: "2026-01-05T12:00:00Z", Title: "Pho"},
		{RecipeID: "pho", HistoryID: "h2", UserID: "binh", CookDate: "2026-01-06T12:00:00Z", Title: "Pho"},
	}
	for _, rc := range old {
		it, err := store.RecentItemForTest(rc, 1)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range store.LegacyRecentKey(rc.RecipeID, rc.CookDate, rc.HistoryID).AV() {
			it[k] = v
		}
		put(it)
		put(map[string]types.AttributeValue{"PK": s("RECIPE#pho"), "SK": s("COUNTED#old-" + rc.HistoryID), "itemType": s(store.TypeCookingMarker),
			"derived": &types.AttributeValueMemberBOOL{Value: true}})
	}
	if _, err := st.AgreeSharding(ctx, store.ShardCheck{Now: deploy, CountsCooking: true}); err != nil {
		t.Fatal(err)
	}
	if !st.Layout.LegacyBefore.Equal(deploy.Add(store.MoveOverlap)) || !st.Layout.LegacyRecents {
		t.Fatalf("layout after the upgrade: %+v", st.Layout)
	}
	recents := func() []string {
		t.Helper()
		got, _, err := st.Cooking.RecentCookings(ctx, "2026-01", store.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, rc := range got {
			ids = append(ids, rc.HistoryID)
		}
		slices.Sort(ids)
		return ids
	}
	delta := func(id string, at time.Time, rc store.RecentCooking, remove bool) store.CookingDelta {
		d := store.CookingDelta{SourceID: id, At: at, Cook: rc.UserID, Recent: &rc, Remove: remove, Week: "2026-W02", WeekDelta: 1}
		if remove {
			d.WeekDelta = -1
		}
		return d
	}
	// h1's insert again (the old build counted it): nothing; h3, counted
	// in the overlap, keeps its marker in the recipe's partition; h4,
	// after it, in its cook's.
	h3 := store.RecentCooking{RecipeID: "pho", HistoryID: "h3", UserID: "chi", CookDate: "2026-01-07T12:00:00Z", Title: "Pho"}
	h4 := store.RecentCooking{RecipeID: "pho", HistoryID: "h4", UserID: "dao", CookDate: "2026-01-08T12:00:00Z", Title: "Pho"}
	putHistory(t, st, h3, h4)
	a, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{
		delta("old-h1", deploy.Add(-time.Minute), old[0], false),
		delta("new-h3", deploy.Add(time.Minute), h3, false),
		delta("new-h4", deploy.Add(2*time.Hour), h4, false),
	}, 24*time.Hour)
	if err != nil || a.Applied != 2 {
		t.Fatalf("applied %d (err %v), want 2: the old build's change counts nothing", a.Applied, err)
	}
	for key, want := range map[store.Key]bool{
		{PK: "RECIPE#pho", SK: "COUNTED#new-h3"}: true, {PK: "USER#chi", SK: "COUNTED#new-h3"}: false,
		{PK: "USER#dao", SK: "COUNTED#new-h4"}: true, {PK: "RECIPE#pho", SK: "COUNTED#new-h4"}: false,
		store.RecentKey("chi", h3.CookDate, "h3"): true, store.RecentKey("dao", h4.CookDate, "h4"): true,
		store.LegacyRecentKey("pho", h4.CookDate, "h4"): false,
	} {
		if got := getItem(t, st, key) != nil; got != want {
			t.Errorf("%s / %s there: %v, want %v", key.PK, key.SK, got, want)
		}
	}
	// A change the old build counted after the overlap (it ran too long)
	// is still found, for a day: it counts nothing.
	put(map[string]types.AttributeValue{"PK": s("RECIPE#pho"), "SK": s("COUNTED#late-h5"), "itemType": s(store.TypeCookingMarker)})
	h5 := store.RecentCooking{RecipeID: "pho", HistoryID: "h5", UserID: "em", CookDate: "2026-01-08T13:00:00Z", Title: "Pho"}
	if a, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{delta("late-h5", deploy.Add(3*time.Hour), h5, false)}, 24*time.Hour); err != nil || a.Applied != 0 {
		t.Fatalf("a change the old build counted late: applied %d, %v", a.Applied, err)
	}
	// h2 removed before the backfill: both of its keys are deleted.
	if _, err := st.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{delta("rm-h2", deploy.Add(3*time.Hour), old[1], true)}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if getItem(t, st, store.LegacyRecentKey("pho", old[1].CookDate, "h2")) != nil {
		t.Error("a removed history's recent item is left in the recipe's partition")
	}
	before := recents()
	if !slices.Equal(before, []string{"h1", "h3", "h4"}) {
		t.Fatalf("recent cookings before the backfill: %v", before)
	}

	if _, err := st.Upkeep.BackfillCookingPartitions(ctx, 2, deploy, nil); !errors.Is(err, store.ErrMoveTooEarly) {
		t.Fatalf("a backfill while the old build may still count: %v", err)
	}
	stats, err := st.Upkeep.BackfillCookingPartitions(ctx, 2, deploy.Add(2*time.Hour), nil)
	if err != nil || stats.Moved != 1 || stats.Recents != 3 {
		t.Fatalf("backfill: %+v, %v; want h1 moved of 3 recent items", stats, err)
	}
	if getItem(t, st, store.LegacyRecentKey("pho", old[0].CookDate, "h1")) != nil || getItem(t, st, store.RecentKey("an", old[0].CookDate, "h1")) == nil {
		t.Error("h1's recent item was not moved to its cook's partition")
	}
	if after := recents(); !slices.Equal(after, before) {
		t.Errorf("recent cookings after the backfill: %v, want %v", after, before)
	}
	if again, err := st.Upkeep.BackfillCookingPartitions(ctx, 2, deploy.Add(2*time.Hour), nil); err != nil || again.Moved != 0 {
		t.Errorf("a second backfill: %+v, %v; want nothing moved", again, err)
	}
	next := store.New(st.DB, st.Table)
	if _, err := next.AgreeSharding(ctx, store.ShardCheck{Now: deploy.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if !next.Layout.LegacyBefore.Equal(st.Layout.LegacyBefore) || next.Layout.LegacyRecents {
		t.Errorf("layout after the backfill: %+v (the move's time stays)", next.Layout)
	}

	// A ledger written by someone else names a profile: the cascade
	// deletes recent items only.
	profile := map[string]types.AttributeValue{"PK": s("USER#an"), "SK": s("PROFILE"), "itemType": s("Profile")}
	put(profile)
	put(map[string]types.AttributeValue{"PK": s("RECIPE#pho"), "SK": s("COOKS#forged"), "itemType": s(store.TypeCookLedger), "derived": &types.AttributeValueMemberBOOL{Value: true},
		"keys": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"PK": s("USER#an"), "SK": s("PROFILE")}}}}})
	if _, err := st.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(st.Table), Key: store.RecipeKey("pho").AV()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Cooking.DeleteRecipeCascade(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	if left := recents(); len(left) != 0 {
		t.Errorf("recent cookings of the deleted recipe: %v", left)
	}
	if getItem(t, st, store.Key{PK: "USER#an", SK: "PROFILE"}) == nil {
		t.Error("the cascade deleted an item a forged ledger named")
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// putHistory writes the history entry a recent item comes from:
// ApplyCooking writes an inserted entry's recent item only while the entry
// exists.
func putHistory(t *testing.T, st *store.Store, rcs ...store.RecentCooking) {
	t.Helper()
	for _, rc := range rcs {
		k := store.HistoryKey(rc.UserID, rc.CookDate, rc.HistoryID)
		_, err := st.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: k.PK}, "SK": &types.AttributeValueMemberS{Value: k.SK},
			"itemType": &types.AttributeValueMemberS{Value: store.TypeCookingHistory}, "historyId": &types.AttributeValueMemberS{Value: rc.HistoryID},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func getItem(t *testing.T, st *store.Store, k store.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := st.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(st.Table), Key: k.AV(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// One call of ApplyCooking writes nothing in the recipe's partition however
// many cookings it counts: the markers and recent items go to the cooks'
// partitions, the counts and a ledger to one of the recipe's pending
// partitions; the drain its record asks for writes the recipe and the
// week's trending item once, and a drain delivered again writes nothing.
// (The partition limits are DynamoDB's: 1,000 write units a second per
// partition, developerguide/bp-partition-key-design.html.)
func TestApplyCookingWritesTheRecipeOncePerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := newStore(t)
	var mu sync.Mutex
	var written []store.Key
	db := dynamodb.New(base.DB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("keys", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if tw, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
					mu.Lock()
					for _, it := range tw.TransactItems {
						var k map[string]types.AttributeValue
						switch {
						case it.Put != nil:
							k = it.Put.Item
						case it.Update != nil:
							k = it.Update.Key
						case it.Delete != nil:
							k = it.Delete.Key
						case it.ConditionCheck != nil:
							continue
						}
						written = append(written, store.Key{PK: k["PK"].(*types.AttributeValueMemberS).Value, SK: k["SK"].(*types.AttributeValueMemberS).Value})
					}
					mu.Unlock()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	st := store.New(db, base.Table)
	if err := st.Cooking.CreateRecipe(ctx, cooking.Recipe{RecipeID: "hot", AuthorID: "chef", Title: "Hot", Method: "boil", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}); err != nil {
		t.Fatal(err)
	}
	var deltas []store.CookingDelta
	at := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		cook := fmt.Sprintf("cook%d", i)
		deltas = append(deltas, store.CookingDelta{SourceID: fmt.Sprintf("ev%d", i), At: at, Cook: cook, Week: "2026-W02", WeekDelta: 1, RatingCount: 1, RatingSum: 4,
			Recent: &store.RecentCooking{RecipeID: "hot", HistoryID: fmt.Sprintf("h%d", i), UserID: cook, CookDate: "2026-01-07T12:00:00Z", Title: "Hot"}})
		putHistory(t, st, *deltas[i].Recent)
	}
	if a, err := st.Cooking.ApplyCooking(ctx, "hot", deltas, time.Hour); err != nil || a.Applied != 10 {
		t.Fatalf("applied %d, %v", a.Applied, err)
	}
	count := func() (inRecipe, inPending map[string]int, pendingPK string, cooks int) {
		mu.Lock()
		defer mu.Unlock()
		inRecipe, inPending = map[string]int{}, map[string]int{}
		for _, k := range written {
			switch {
			case k.PK == "RECIPE#hot":
				inRecipe[strings.SplitN(k.SK, "#", 2)[0]]++
			case strings.HasPrefix(k.PK, "PENDING#hot#"):
				inPending[strings.SplitN(k.SK, "#", 2)[0]]++
				pendingPK = k.PK
			case strings.HasPrefix(k.PK, "USER#cook"):
				cooks++
			}
		}
		written = nil
		return
	}
	inRecipe, inPending, pk, cooks := count()
	if len(inRecipe) != 0 || len(inPending) != 2 || inPending["PENDING"] != 1 || inPending["COOKS"] != 1 || cooks != 20 {
		t.Fatalf("the call wrote in the recipe's partition %v (want nothing), in a pending one %v (want its counts and a ledger), in the cooks' %d (want 20)", inRecipe, inPending, cooks)
	}
	// The pending item's record asks for its drain: the totals, written once.
	if recipeID, _, ok := store.PendingOf(pk); !ok || recipeID != "hot" {
		t.Fatalf("pending key %q", pk)
	}
	a, err := (store.Combiner{Store: st}).DrainPending(ctx, "hot")
	if err != nil || a.Applied != 1 || !slices.Equal(a.Raised, []string{"2026-W02"}) {
		t.Fatalf("drain: %+v, %v", a, err)
	}
	inRecipe, inPending, _, cooks = count()
	if len(inRecipe) != 2 || inRecipe["METADATA"] != 1 || inRecipe["TRENDING"] != 1 || inPending["PENDING"] != 1 || cooks != 0 {
		t.Errorf("the drain wrote in the recipe's partition %v (want the recipe and a trending item), in the pending one %v (want its counts)", inRecipe, inPending)
	}
	r, err := st.Cooking.GetRecipe(ctx, "hot")
	if err != nil || r.Rating.RatingCount != 10 || r.Rating.RatingSum != 40 {
		t.Errorf("recipe after the drain: %+v, %v", r.Rating, err)
	}
	top, _, err := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10})
	if err != nil || len(top) != 1 || top[0].Count != 10 {
		t.Errorf("the week's trending: %+v, %v", top, err)
	}
	// A drain delivered again moves nothing and writes nothing.
	if a, err := (store.Combiner{Store: st}).DrainPending(ctx, "hot"); err != nil || a.Applied != 0 {
		t.Errorf("second drain: %+v, %v", a, err)
	}
	if inRecipe, inPending, _, _ := count(); len(inRecipe)+len(inPending) != 0 {
		t.Errorf("a second drain wrote %v %v", inRecipe, inPending)
	}
}
