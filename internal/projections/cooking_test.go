package projections_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// kitchen writes a cooking scenario through the store.
type kitchen struct {
	t   *testing.T
	st  *store.Store
	now time.Time
	n   int
}

func (k *kitchen) tick() time.Time {
	k.now = k.now.Add(time.Second)
	return k.now
}

func (k *kitchen) id(prefix string) string {
	k.n++
	return fmt.Sprintf("%s%03d", prefix, k.n)
}

func (k *kitchen) recipe(author, method string, ingredients []string, suitable ...string) cooking.Recipe {
	k.t.Helper()
	at := store.Timestamp(k.tick())
	r := cooking.Recipe{RecipeID: k.id("r"), AuthorID: author, Title: "Dish by " + author, Method: method, Steps: []string{"cook", "serve"},
		Servings: 2, SuitableFor: append([]string{}, suitable...), CreatedAt: at, UpdatedAt: at}
	for _, in := range ingredients {
		r.Ingredients = append(r.Ingredients, cooking.RecipeIngredient{IngredientID: in, Quantity: 1, Unit: "g"})
	}
	if err := k.st.Cooking.CreateRecipe(context.Background(), r); err != nil {
		k.t.Fatal(err)
	}
	return r
}

func (k *kitchen) cook(user string, r cooking.Recipe, cookDate string, rating int, fav bool) cooking.History {
	k.t.Helper()
	at := store.Timestamp(k.tick())
	h := cooking.History{UserID: user, HistoryID: k.id("h"), RecipeID: r.RecipeID, RecipeTitle: r.Title, CookDate: cookDate, Rating: rating, Favorite: fav, CreatedAt: at, UpdatedAt: at}
	if err := k.st.Cooking.RecordCooking(context.Background(), h); err != nil {
		k.t.Fatal(err)
	}
	return h
}

func (k *kitchen) patch(h cooking.History, p store.HistoryPatch) {
	k.t.Helper()
	p.UpdatedAt = store.Timestamp(k.tick())
	if _, err := k.st.Cooking.UpdateHistory(context.Background(), h.UserID, h.HistoryID, p); err != nil {
		k.t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// runKitchen writes the cooking scenario: five users cooking six recipes
// on dates around the turn of 2025/2026 (ISO weeks 2025-W52 and 2026-W01),
// with ratings added, changed and removed, favourites toggled, histories
// deleted, sessions completed twice, preferences written and a recipe
// deleted after it was cooked. The random choices come from a fixed seed.
func runKitchen(t *testing.T, st *store.Store) {
	ctx := context.Background()
	k := &kitchen{t: t, st: st, now: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}
	for _, in := range []cooking.Ingredient{{IngredientID: "i-rice", Name: "Rice"}, {IngredientID: "i-pork", Name: "Thịt heo"}, {IngredientID: "i-basil", Name: "Basil"}} {
		in.NormalizedName, in.CreatedAt, in.CreatedBy = cooking.Normalize(in.Name), store.Timestamp(k.tick()), "chef"
		if err := st.Cooking.CreateIngredient(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	recipes := []cooking.Recipe{
		k.recipe("chef", "stir-fry", []string{"i-rice", "i-pork"}),
		k.recipe("chef", "steam", []string{"i-rice"}, "vegetarian", "vegan"),
		k.recipe("lan", "boil", []string{"i-pork", "i-basil"}),
		k.recipe("lan", "stir-fry", []string{"i-basil"}, "vegetarian"),
		k.recipe("minh", "grill", []string{"i-pork"}),
		k.recipe("minh", "steam", []string{"i-rice", "i-basil"}, "vegetarian"),
	}
	users := []string{"an", "binh", "chi", "dung", "lan"}
	dates := []string{"2025-12-27T19:00:00Z", "2025-12-28T23:59:59Z", "2025-12-29T00:00:00Z", "2025-12-31T12:00:00Z", "2026-01-01T08:30:00Z", "2026-01-04T20:00:00Z", "2026-01-05T07:00:00Z"}
	rng := rand.New(rand.NewPCG(20261123, 3))
	var hs []cooking.History
	for i := 0; i < 36; i++ {
		r := recipes[0] // the hot recipe: about a third of all cookings
		if rng.IntN(3) > 0 {
			r = recipes[rng.IntN(len(recipes))]
		}
		hs = append(hs, k.cook(users[rng.IntN(len(users))], r, dates[rng.IntN(len(dates))], rng.IntN(6), rng.IntN(4) == 0))
	}
	for i, h := range hs {
		switch i % 7 {
		case 0: // a rating changed, added or removed
			k.patch(h, store.HistoryPatch{Rating: ptr(rng.IntN(6))})
		case 1: // a favourite toggled, twice for some
			k.patch(h, store.HistoryPatch{Favorite: ptr(!h.Favorite)})
			if i%2 == 0 {
				k.patch(h, store.HistoryPatch{Favorite: ptr(h.Favorite)})
			}
		case 2: // notes only: nothing to derive
			k.patch(h, store.HistoryPatch{Notes: ptr("salty")})
		case 3: // deleted (rated or not)
			if err := st.Cooking.DeleteHistory(ctx, h.UserID, h.HistoryID); err != nil {
				t.Fatal(err)
			}
		case 4: // rated again and again
			k.patch(h, store.HistoryPatch{Rating: ptr(5)})
			k.patch(h, store.HistoryPatch{Rating: ptr(1)})
		}
	}
	// Sessions: completed (twice: recorded once), and abandoned.
	for i, u := range users[:3] {
		now := k.tick()
		ss := cooking.Session{UserID: u, SessionID: k.id("s"), RecipeID: recipes[i].RecipeID, RecipeTitle: recipes[i].Title, StepCount: 2,
			Status: cooking.SessionActive, StartedAt: store.Timestamp(now), UpdatedAt: store.Timestamp(now), TTL: now.Add(cooking.SessionTTL).Unix()}
		if err := st.Cooking.StartSession(ctx, ss); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			at := k.tick()
			h := cooking.History{UserID: u, HistoryID: k.id("h"), RecipeID: ss.RecipeID, RecipeTitle: ss.RecipeTitle, SessionID: ss.SessionID,
				CookDate: "2026-01-02T18:00:00Z", Rating: 4, CreatedAt: store.Timestamp(at), UpdatedAt: store.Timestamp(at)}
			if _, _, err := st.Cooking.CompleteSession(ctx, h, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, u := range users[:2] {
		p := cooking.Preferences{UserID: u, FavoriteMethods: []string{"stir-fry", "steam"}, DietaryRestrictions: []string{}, DislikedIngredients: []string{"i-pork"}, UpdatedAt: store.Timestamp(k.tick())}
		if u == "binh" {
			p.FavoriteMethods, p.DislikedIngredients, p.DietaryRestrictions = []string{}, []string{}, []string{"vegetarian"}
		}
		if err := st.Cooking.PutCookingPreferences(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// minh's grill recipe is cooked, then deleted: its derived items go.
	k.cook("an", recipes[4], dates[2], 5, false)
	if err := st.Cooking.DeleteRecipe(ctx, recipes[4].RecipeID, "minh"); err != nil {
		t.Fatal(err)
	}
}

// cookingState is the projector's cooking state: the derived items and
// the rating fields it keeps on the recipes (core items).
type cookingState struct {
	ts replay.TableState
}

func (cs cookingState) recipes(ctx context.Context) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(cs.ts.DB, &dynamodb.ScanInput{TableName: aws.String(cs.ts.Table), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("itemType = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: store.TypeRecipe}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
	}
	return out, nil
}

func (cs cookingState) Reset(ctx context.Context) error {
	if err := cs.ts.Reset(ctx); err != nil {
		return err
	}
	rs, err := cs.recipes(ctx)
	if err != nil {
		return err
	}
	for _, it := range rs {
		var r cooking.Recipe
		if err := attributevalue.UnmarshalMap(it, &r); err != nil {
			return err
		}
		_, err := cs.ts.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(cs.ts.Table), Key: store.RecipeKey(r.RecipeID).AV(),
			UpdateExpression: aws.String("SET ratingCount = :z, ratingSum = :z, avgRating = :z, GSI2SK = :sk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"},
				":sk": &types.AttributeValueMemberS{Value: cooking.RatingSortKey(0, r.CreatedAt, r.RecipeID)}}})
		if err != nil {
			return err
		}
	}
	return nil
}

// ratingRow is a recipe's derived fields.
type ratingRow struct {
	RecipeID               string
	RatingCount, RatingSum int
	AvgRating              float64
	GSI2SK                 string
}

func (cs cookingState) State(ctx context.Context) (any, error) {
	derived, err := cs.ts.State(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := cs.recipes(ctx)
	if err != nil {
		return nil, err
	}
	var rows []ratingRow
	for _, it := range rs {
		var r ratingRow
		if err := attributevalue.UnmarshalMap(it, &r); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].RecipeID < rows[j].RecipeID })
	items, ledgers := ddbtest.FoldLedgers(derived.([]map[string]any))
	return struct {
		Derived []map[string]any
		Ledgers map[string][]string
		Ratings []ratingRow
	}{items, ledgers, rows}, nil
}

// The cooking derivations are exact and order-free: with every record
// twice, re-batched, shuffled across items, with injected failures and
// crashes between requests, the 4 fixed schedules, 10 random ones with
// ParallelizationFactor 1 and 6 with 10 (a recipe's cooks
// then race on it from several lanes) give the state of the captured order, and
// that state is what a direct computation from the final core items gives
// — rating counts, sums and averages, GSI2 sort keys, weekly trending
// counts, recent items — and nothing is left of the deleted recipe.
func TestCookingReplayExactCounts(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	runKitchen(t, st)
	ctx := context.Background()
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	cs := cookingState{replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}}
	schedules := slices.Concat(replay.Schedules(20261123, 10), replay.Parallel(replay.Schedules(20261124, 6), 10),
		// as a Kinesis data stream for DynamoDB delivers: a history entry's
		// removal may come before its insertion, and either twice
		replay.KinesisSchedules(20261125, 2), replay.Parallel(replay.KinesisSchedules(20261126, 1), 10))
	rep, err := replay.Check(ctx, ev, replay.Target{Handler: p.Handle, Reset: cs.Reset, State: cs.State, Follow: ddbtest.FollowPending(t, c.Streams, arn)}, schedules)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) < 20 {
		t.Fatalf("%d schedules, want at least 20", len(rep.Runs))
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	dups, failures := 0, 0
	for _, r := range rep.Runs {
		if r.Schedule.Duplicate {
			dups++
		}
		failures += r.Stats.InjectedFailures
	}
	if dups == 0 || failures == 0 {
		t.Fatalf("schedules exercised %d duplicate runs and %d injected failures; want both > 0", dups, failures)
	}
	assertNoDrift(t, st) // the last schedule's derived items, checked by drift's own computation

	// The direct computation, from the final core items.
	var histories []cooking.History
	var recipes []cooking.Recipe
	scan := dynamodb.NewScanPaginator(c.DB, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for scan.HasMorePages() {
		page, err := scan.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			var v struct{ ItemType string }
			attributevalue.UnmarshalMap(it, &v)
			switch it["itemType"].(*types.AttributeValueMemberS).Value {
			case store.TypeCookingHistory:
				var h cooking.History
				attributevalue.UnmarshalMap(it, &h)
				histories = append(histories, h)
			case store.TypeRecipe:
				var r cooking.Recipe
				attributevalue.UnmarshalMap(it, &r)
				recipes = append(recipes, r)
			}
		}
	}
	live := map[string]cooking.Recipe{}
	for _, r := range recipes {
		live[r.RecipeID] = r
	}
	want := map[string]cooking.Rating{}
	trending := map[[2]string]int{}
	recent := map[string]bool{}
	for _, h := range histories {
		if _, ok := live[h.RecipeID]; !ok {
			continue
		}
		if h.Rating > 0 {
			want[h.RecipeID] = want[h.RecipeID].Add(1, h.Rating)
		}
		w, _ := cooking.Week(h.CookDate)
		trending[[2]string{h.RecipeID, w}]++
		recent[store.RecentKey(h.UserID, h.CookDate, h.HistoryID).SK+"@"+h.RecipeID] = true
	}
	for _, r := range recipes {
		got, err := st.Cooking.GetRecipe(ctx, r.RecipeID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rating != want[r.RecipeID] {
			t.Errorf("recipe %s: rating %+v, want %+v", r.RecipeID, got.Rating, want[r.RecipeID])
		}
	}
	gotTrending := map[[2]string]int{}
	gotRecent := map[string]bool{}
	for _, w := range []string{"2025-W52", "2026-W01", "2026-W02"} {
		items, _, err := st.Cooking.TrendingRecipes(ctx, w, store.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range items {
			gotTrending[[2]string{it.RecipeID, it.Week}] = it.Count
			if i > 0 && items[i-1].Count < it.Count {
				t.Errorf("week %s is not in count order: %+v", w, items)
			}
		}
	}
	if diff := cmp.Diff(trending, gotTrending); diff != "" {
		t.Errorf("trending counts (-direct +derived):\n%s", diff)
	}
	for _, m := range []string{"2025-12", "2026-01"} {
		for cur := ""; ; {
			items, next, err := st.Cooking.RecentCookings(ctx, m, store.Page{Limit: 7, Cursor: cur})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				gotRecent[store.RecentKey(it.UserID, it.CookDate, it.HistoryID).SK+"@"+it.RecipeID] = true
			}
			if cur = next; cur == "" {
				break
			}
		}
	}
	if diff := cmp.Diff(recent, gotRecent); diff != "" {
		t.Errorf("recent cookings (-direct +derived):\n%s", diff)
	}
	// Each recent item is in its cook's partition and named by its recipe's
	// ledger, which the recipe's cascade reads; no marker or recent item is
	// in a recipe's partition.
	derived, err := cs.ts.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	items, ledgers := ddbtest.FoldLedgers(derived.([]map[string]any))
	for _, h := range histories {
		k := store.RecentKey(h.UserID, h.CookDate, h.HistoryID)
		if _, ok := live[h.RecipeID]; ok && !slices.Contains(ledgers[store.RecipePK(h.RecipeID)], k.PK+" "+k.SK) {
			t.Errorf("recipe %s's ledgers do not name %s", h.RecipeID, k)
		}
	}
	for _, it := range items {
		if pk, _ := it["PK"].(string); strings.HasPrefix(pk, "RECIPE#") && it["itemType"] != store.TypeTrending {
			t.Errorf("a per-cooking item in a recipe's partition: %v", it)
		}
	}
	// Week boundaries: 2025-12-28 is in 2025-W52, 2025-12-29 in 2026-W01,
	// and 2026-01-05 in 2026-W02.
	for d, w := range map[string]string{"2025-12-28T23:59:59Z": "2025-W52", "2025-12-29T00:00:00Z": "2026-W01", "2026-01-04T20:00:00Z": "2026-W01", "2026-01-05T07:00:00Z": "2026-W02"} {
		if got, _ := cooking.Week(d); got != w {
			t.Errorf("week of %s = %s, want %s", d, got, w)
		}
	}
	// The deleted recipe's partition holds nothing.
	var deleted string
	for _, h := range histories {
		if _, ok := live[h.RecipeID]; !ok {
			deleted = h.RecipeID
		}
	}
	left, err := c.DB.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: store.RecipePK(deleted)}}})
	if deleted == "" || err != nil || len(left.Items) != 0 {
		t.Errorf("deleted recipe %q's partition: %v (err %v)", deleted, left, err)
	}
	// Suggestions exist for every user who cooked, and follow the rule.
	for _, u := range []string{"an", "binh"} {
		sg, err := st.Cooking.GetSuggestions(ctx, u, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		r := st.Cooking.SuggestInputs(ctx, []string{u}, 1)[u]
		in, newest := r.In, r.Newest
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if sg.GeneratedAt != newest || !cmp.Equal(sg.Items, cooking.Suggest(in)) {
			t.Errorf("%s's suggestions %+v, want %+v as of %s", u, sg, cooking.Suggest(in), newest)
		}
		for _, s := range sg.Items {
			r := live[s.RecipeID]
			for _, ing := range r.Ingredients {
				if u == "an" && ing.IngredientID == "i-pork" {
					t.Errorf("an dislikes pork, and %s has it", s.RecipeID)
				}
			}
		}
	}
}

// A recipe's top-10 notification is written once, not at every drain that
// raises the recipe in that week (the hot recipe's author took a write per
// drain): the projector reads which are stored first. A mark put on the
// stored notification survives the recipe's next raise (a put would have
// replaced the item); a notification gone from the table is written again.
func TestTopTenNotificationWrittenOnce(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	k := &kitchen{t: t, st: st, now: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}
	if err := st.Cooking.CreateIngredient(ctx, cooking.Ingredient{IngredientID: "i-rice", Name: "Rice", NormalizedName: "rice", CreatedAt: store.Timestamp(k.tick())}); err != nil {
		t.Fatal(err)
	}
	r := k.recipe("chef", "boil", []string{"i-rice"})
	day := time.Now().UTC().Format(cooking.CookDateLayout)
	week, _ := cooking.Week(day)
	start, _ := cooking.WeekStart(week)
	noteKey := store.NotificationKey("chef", store.Timestamp(start), "top10-"+week+"-"+r.RecipeID)
	follow := ddbtest.FollowPending(t, c.Streams, arn)
	p := &projections.Projector{Store: st}
	project := func() {
		ev, err := replay.Capture(ctx, c.Streams, arn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := replay.Deliver(ctx, ev, replay.Target{Handler: p.Handle, Follow: follow}, replay.AsCaptured); err != nil {
			t.Fatal(err)
		}
	}
	note := func() map[string]types.AttributeValue {
		out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: noteKey.AV(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	k.cook("eater", r, day, 0, false)
	project()
	if note() == nil {
		t.Fatal("no top-10 notification after the recipe's first cooking")
	}
	if _, err := c.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: noteKey.AV(),
		UpdateExpression: aws.String("SET probe = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "kept"}}}); err != nil {
		t.Fatal(err)
	}
	k.cook("eater", r, day, 0, false)
	project()
	if it := note(); it == nil || it["probe"] == nil {
		t.Errorf("the top-10 notification was written again when the recipe climbed: %v", it)
	}
	if _, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: noteKey.AV()}); err != nil {
		t.Fatal(err)
	}
	k.cook("eater", r, day, 0, false)
	project()
	if note() == nil {
		t.Error("a top-10 notification gone from the table was not written again at the recipe's next raise")
	}
}

// A recipe's author hears when it enters a week's top 10, once, and not
// while it is 11th.
func TestTopTenNotification(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	// One instant for the cookings' dates and the kitchen's clock: 01:00
	// UTC of today, or of yesterday before 02:00, so that no date of the
	// test falls on either side of a midnight (it failed once just after
	// one, its dates read from the clock at different times).
	base := time.Now().UTC().Add(-2 * time.Hour).Truncate(24 * time.Hour).Add(time.Hour)
	k := &kitchen{t: t, st: st, now: base}
	if err := st.Cooking.CreateIngredient(ctx, cooking.Ingredient{IngredientID: "i-rice", Name: "Rice", NormalizedName: "rice", CreatedAt: store.Timestamp(k.tick())}); err != nil {
		t.Fatal(err)
	}
	var rs []cooking.Recipe
	for i := range 11 {
		rs = append(rs, k.recipe(fmt.Sprintf("author%02d", i), "boil", []string{"i-rice"}))
	}
	// This week: a top-10 notification lives 30 days after its week's
	// Monday (one about a long-gone week is expired at once).
	now := base
	day := now.Format(cooking.CookDateLayout)
	week, _ := cooking.Week(day)
	for _, r := range rs[:10] {
		k.cook("eater", r, day, 0, false)
		k.cook("eater", r, day, 0, false)
	}
	k.cook("eater", rs[10], day, 0, false) // 11th, with 1
	p := &projections.Projector{Store: st}
	follow := ddbtest.FollowPending(t, c.Streams, arn)
	project := func() {
		ev, err := replay.Capture(ctx, c.Streams, arn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := replay.Deliver(ctx, ev, replay.Target{Handler: p.Handle, Follow: follow}, replay.AsCaptured); err != nil {
			t.Fatal(err)
		}
	}
	top10 := func(author string) []string {
		notes, _, err := st.Collab.ListNotifications(ctx, author, time.Now(), store.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range notes {
			if n.Type == "recipe-top10" {
				out = append(out, n.Week)
			}
		}
		return out
	}
	project()
	if got := top10("author10"); len(got) != 0 {
		t.Errorf("the 11th recipe's author was told it is in the top 10: %v", got)
	}
	if got := top10("author00"); len(got) != 1 || got[0] != week {
		t.Errorf("a top-10 recipe's author: %v", got)
	}
	k.cook("eater", rs[10], day, 0, false)
	k.cook("eater", rs[10], day, 0, false) // 3: first now
	project()
	project() // again: still one notification
	if got := top10("author10"); len(got) != 1 || got[0] != week {
		t.Errorf("the recipe that climbed to the top: %v", got)
	}
	// Cooked notifications: one per recipe and day, for the author, counting
	// the cookings (three, projected twice), beside the top-10 one.
	notes, _, err := st.Collab.ListNotifications(ctx, "author10", time.Now(), store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Found by type, not by place: the list is newest first, and on a
	// Monday the top-10 one (dated its week's Monday) and the cooked one
	// (dated its day) have the same time. The cooked one's id has the
	// cooking's day, as the test wrote it.
	cooked := slices.IndexFunc(notes, func(n collab.Notification) bool { return n.Type == "recipe-cooked" })
	if len(notes) != 2 || cooked < 0 || notes[cooked].Count != 3 || notes[cooked].ActorID != "" || notes[cooked].ResourceID != rs[10].RecipeID ||
		notes[cooked].NotificationID != "cooked-"+rs[10].RecipeID+"-"+now.Format("2006-01-02") {
		t.Errorf("author10's notifications: %+v", notes)
	}
}
