package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
)

// Seed 003 (cooking) through the HTTP API against DynamoDB Local: its six
// access patterns, each checked in the answer and in the raw items' keys
// (the seed's PK/SK and GSI keys), plus recipes by rating, recent and
// trending cookings, sessions and suggestions, which the real projector
// derives from the stream.

func (e *env) createRecipe(token string, body map[string]any) cooking.Recipe {
	e.t.Helper()
	var r cooking.Recipe
	e.ok(201, "POST", "/recipes", token, body, &r)
	return r
}

func (e *env) cook(token string, body map[string]any) cooking.History {
	e.t.Helper()
	var h cooking.History
	e.ok(201, "POST", "/me/cooking-history", token, body, &h)
	return h
}

func TestSeed003AccessPatterns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("c%03d"))
	// Real time: sessions live 24 hours, and DynamoDB Local deletes items
	// whose ttl has passed (the harness's clock starts in 2025).
	e.clock.Advance(time.Since(e.clock.Peek()))
	alice, bob, lan := e.token("alice"), e.token("bob"), e.token("lan")

	// Pattern 1: a user's profile, USER#<id> / PROFILE (GSI1 the same).
	e.ok(200, "PUT", "/me/profile", alice, map[string]any{"name": "Alice", "email": "alice@example.com", "locale": "vi-VN"}, nil)
	var prof map[string]any
	e.ok(200, "GET", "/users/alice/profile", bob, nil, &prof)
	if prof["name"] != "Alice" || prof["locale"] != "vi-VN" || prof["email"] != nil {
		t.Errorf("alice's profile as bob reads it: %v (no e-mail address for others)", prof)
	}
	e.ok(200, "GET", "/users/alice/profile", alice, nil, &prof)
	if prof["email"] != "alice@example.com" {
		t.Errorf("alice's own profile: %v", prof)
	}
	e.problem(e.do("GET", "/users/nobody/profile", bob, nil), 404)
	if it := e.getItem(store.Key{PK: "USER#alice", SK: "PROFILE"}); str(it, "GSI1PK") != "USER#alice" || str(it, "GSI1SK") != "PROFILE" {
		t.Errorf("profile item keys: %v", it)
	}

	// Pattern 4: ingredients by exact normalized name (GSI2 INGREDIENT#SEARCH).
	ids := map[string]string{}
	for _, name := range []string{"Thịt gà", "Đậu phụ", "Rau muống", "Crème fraîche", "Süßkartoffel", "Işık"} {
		var in cooking.Ingredient
		e.ok(201, "POST", "/ingredients", lan, map[string]any{"name": name}, &in)
		ids[in.NormalizedName] = in.IngredientID
	}
	for _, n := range []string{"thit-ga", "dau-phu", "rau-muong", "creme-fraiche", "susskartoffel", "isik"} {
		if ids[n] == "" {
			t.Errorf("no ingredient normalized as %s: %v", n, ids)
		}
	}
	var found struct{ Items []cooking.Ingredient }
	e.ok(200, "GET", "/ingredients?name=TH%E1%BB%8AT+G%C3%80", bob, nil, &found) // "THỊT GÀ"
	if len(found.Items) != 1 || found.Items[0].IngredientID != ids["thit-ga"] {
		t.Errorf("find by name: %+v", found.Items)
	}
	if it := e.getItem(store.IngredientKey(ids["thit-ga"])); str(it, "GSI2PK") != "INGREDIENT#SEARCH" || str(it, "GSI2SK") != "NAME#thit-ga" {
		t.Errorf("ingredient keys: %v", it)
	}

	// Recipes: RECIPE#<id> / METADATA, GSI1 USER#<author> / RECIPE#<createdAt>,
	// GSI2 METHOD#<method> / RATING#<avg>#<createdAt>.
	body := func(title, method string, ingredients ...string) map[string]any {
		var ins []map[string]any
		for _, in := range ingredients {
			ins = append(ins, map[string]any{"ingredientId": ids[in], "quantity": 200, "unit": "g"})
		}
		return map[string]any{"title": title, "method": method, "servings": 2, "prepMinutes": 10, "cookMinutes": 15,
			"steps": []string{"Prepare", "Cook", "Serve"}, "ingredients": ins, "suitableFor": []string{}}
	}
	ga := e.createRecipe(lan, body("Gà xào sả ớt", "stir-fry", "thit-ga"))
	rau := e.createRecipe(lan, body("Rau muống xào tỏi", "stir-fry", "rau-muong"))
	canh := e.createRecipe(lan, body("Canh đậu phụ", "boil", "dau-phu"))
	it := e.getItem(store.RecipeKey(ga.RecipeID))
	if str(it, "GSI1PK") != "USER#lan" || str(it, "GSI1SK") != "RECIPE#"+ga.CreatedAt ||
		str(it, "GSI2PK") != "METHOD#stir-fry" ||
		str(it, "GSI2SK") != "RATING#0.00#"+ga.CreatedAt+"#"+ga.RecipeID {
		t.Errorf("recipe keys: %v", it)
	}
	var mine struct{ Items []cooking.Recipe }
	e.ok(200, "GET", "/recipes?authorId=lan", bob, nil, &mine)
	if len(mine.Items) != 3 || mine.Items[0].RecipeID != canh.RecipeID {
		t.Errorf("lan's recipes, newest first: %+v", mine.Items)
	}
	// Any user id is an author id (the spec's UserId: dots, @ and all).
	e.ok(200, "GET", "/recipes?authorId=lan.nguyen%40example.com", bob, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("recipes of an author with none: %+v", mine.Items)
	}

	// Pattern 2: cooking history, USER#<id> / COOKING#<cookDate>#<historyId>.
	h1 := e.cook(alice, map[string]any{"recipeId": ga.RecipeID, "cookDate": "2025-12-29T19:30:00+07:00", "rating": 5})
	h2 := e.cook(bob, map[string]any{"recipeId": ga.RecipeID, "cookDate": "2025-12-30", "rating": 3})
	h3 := e.cook(bob, map[string]any{"recipeId": rau.RecipeID, "cookDate": "2025-12-31T09:00:00Z", "rating": 4})
	h4 := e.cook(alice, map[string]any{"recipeId": rau.RecipeID, "cookDate": "2026-01-02T18:00:00Z", "favorite": true})
	h5 := e.cook(alice, map[string]any{"recipeId": canh.RecipeID, "cookDate": "2025-11-30T18:00:00Z", "rating": 2})
	if h1.CookDate != "2025-12-29T12:30:00Z" || h2.CookDate != "2025-12-30T12:00:00Z" {
		t.Errorf("cook dates are stored in UTC: %s, %s", h1.CookDate, h2.CookDate)
	}
	if sk := e.partitionSKs("USER#alice"); !contains(sk, "COOKING#2025-12-29T12:30:00Z#"+h1.HistoryID) {
		t.Errorf("alice's partition: %v", sk)
	}
	var page struct {
		Items      []cooking.History
		NextCursor string
	}
	var hist []string
	for cur := ""; ; {
		e.ok(200, "GET", "/me/cooking-history?limit=2&cursor="+cur, alice, nil, &page)
		for _, h := range page.Items {
			hist = append(hist, h.HistoryID)
		}
		if cur = page.NextCursor; cur == "" {
			break
		}
	}
	if want := []string{h4.HistoryID, h1.HistoryID, h5.HistoryID}; strings.Join(hist, ",") != strings.Join(want, ",") {
		t.Errorf("alice's history, newest first, 2 a page: %v, want %v", hist, want)
	}

	// Pattern 5: favourites, the sparse GSI1 USER#<id>#FAVORITE / <cookDate>.
	e.ok(200, "PATCH", "/me/cooking-history/"+h1.HistoryID, alice, map[string]any{"favorite": true}, nil)
	var favs struct{ Items []cooking.History }
	e.ok(200, "GET", "/me/cooking-favorites", alice, nil, &favs)
	if len(favs.Items) != 2 || favs.Items[0].HistoryID != h4.HistoryID || favs.Items[1].HistoryID != h1.HistoryID {
		t.Errorf("alice's favourites: %+v", favs.Items)
	}
	if got := keys(e.queryItems("GSI1", "USER#alice#FAVORITE", ""), "GSI1"); len(got) != 2 || got[0] != "USER#alice#FAVORITE 2025-12-29T12:30:00Z" {
		t.Errorf("favourite GSI1 keys: %v", got)
	}
	e.ok(200, "PATCH", "/me/cooking-history/"+h4.HistoryID, alice, map[string]any{"favorite": false}, nil)
	if it := e.getItem(store.HistoryKey("alice", h4.CookDate, h4.HistoryID)); it["GSI1PK"] != nil || it["GSI1SK"] != nil {
		t.Errorf("an unmarked favourite keeps its GSI1 keys: %v", it)
	}

	// The projector derives recent, trending and ratings.
	e.project()

	// Pattern 3: recipes of a method, best rated first (GSI2 METHOD#…).
	// gà: 5 and 3 → 4.00; rau: 4 → 4.00; a tie, so the newer (rau) first.
	var byMethod struct{ Items []cooking.Recipe }
	e.ok(200, "GET", "/recipes?method=stir-fry", bob, nil, &byMethod)
	if len(byMethod.Items) != 2 || byMethod.Items[0].RecipeID != rau.RecipeID || byMethod.Items[1].AvgRating != 4 || byMethod.Items[1].RatingCount != 2 {
		t.Errorf("stir-fry recipes: %+v", byMethod.Items)
	}
	// the seed's own query: GSI2 where GSI2PK = METHOD#<method>
	if got := keys(e.queryItems("GSI2", "METHOD#stir-fry", ""), "GSI2"); len(got) != 2 ||
		got[1] != "METHOD#stir-fry RATING#4.00#"+rau.CreatedAt+"#"+rau.RecipeID {
		t.Errorf("method GSI2 keys: %v", got)
	}
	// bob re-rates gà 5: 5.00, first now.
	e.ok(200, "PATCH", "/me/cooking-history/"+h2.HistoryID, bob, map[string]any{"rating": 5}, nil)
	e.project()
	e.ok(200, "GET", "/recipes?method=stir-fry", bob, nil, &byMethod)
	if byMethod.Items[0].RecipeID != ga.RecipeID || byMethod.Items[0].AvgRating != 5 || byMethod.Items[0].RatingSum != 10 {
		t.Errorf("stir-fry recipes after a re-rating: %+v", byMethod.Items)
	}
	if it := e.getItem(store.RecipeKey(ga.RecipeID)); str(it, "GSI2SK") != "RATING#5.00#"+ga.CreatedAt+"#"+ga.RecipeID {
		t.Errorf("gà's GSI2SK: %s", str(it, "GSI2SK"))
	}

	// lan hears her recipes were cooked and rated (in-app, ttl 30 days);
	// alice and bob hear nothing of their own cooking.
	var notes struct{ Items []map[string]any }
	e.ok(200, "GET", "/me/notifications?limit=100", lan, nil, &notes)
	kinds, cooked, rated := map[string]int{}, 0, 0
	for _, n := range notes.Items {
		kinds[fmt.Sprint(n["type"])]++
		if n["resourceType"] != "recipe" {
			t.Errorf("cooking notification %v", n)
		}
		c, _ := n["count"].(float64) // one per recipe and day, counting
		switch n["type"] {
		case "recipe-cooked":
			cooked += int(c)
		case "recipe-rated":
			rated += int(c)
			if n["actorId"] != "" || n["rating"] != nil || !strings.HasPrefix(fmt.Sprint(n["notificationId"]), "rated-") {
				t.Errorf("a folded rating note names who or what: %v", n)
			}
		}
	}
	if cooked != 5 || rated != 1 || kinds["recipe-rated"] != 1 || kinds["recipe-cooked"] > 5 {
		t.Errorf("lan's notifications by type: %v; cookings counted %d, want 5; ratings %d, want 1", kinds, cooked, rated)
	}

	// Pattern 6: recent cookings of a month (GSI3 RECENT#<yyyy-mm>).
	// A community feed: the recipe and the day, never who cooked it; the
	// caller's own entries are marked mine, with their history id.
	var recent struct{ Items []map[string]any }
	e.ok(200, "GET", "/cooking/recent?month=2025-12", bob, nil, &recent)
	var got []string
	for _, r := range recent.Items {
		got = append(got, fmt.Sprint(r))
	}
	want := []string{
		fmt.Sprintf("map[cookedOn:2025-12-31 historyId:%s mine:true recipeId:%s recipeTitle:%s]", h3.HistoryID, rau.RecipeID, h3.RecipeTitle),
		fmt.Sprintf("map[cookedOn:2025-12-30 historyId:%s mine:true recipeId:%s recipeTitle:%s]", h2.HistoryID, ga.RecipeID, h2.RecipeTitle),
		fmt.Sprintf("map[cookedOn:2025-12-29 recipeId:%s recipeTitle:%s]", ga.RecipeID, h1.RecipeTitle), // alice's
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("December's cookings as bob sees them, newest first:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// the seed's own query: GSI3 where GSI3PK = RECENT#<yyyy-mm> (the
	// default layout: no write shards)
	if got := keys(e.queryItems("GSI3", "RECENT#2025-12", ""), "GSI3"); len(got) != 3 || got[0] != "RECENT#2025-12 2025-12-29T12:30:00Z#"+h1.HistoryID {
		t.Errorf("recent GSI3 keys: %v", got)
	}
	// the recent item is in its cook's partition, beside the history
	// entry, not in the recipe's (docs/scale.md)
	if e.getItem(store.Key{PK: "USER#" + h1.UserID, SK: "COOKED#2025-12-29T12:30:00Z#" + h1.HistoryID}) == nil {
		t.Error("no recent item under its cook")
	}
	if e.getItem(store.Key{PK: "RECIPE#" + ga.RecipeID, SK: "COOKED#2025-12-29T12:30:00Z#" + h1.HistoryID}) != nil {
		t.Error("a recent item under the recipe")
	}

	// Trending per ISO week: 2025-12-29 … 2026-01-02 are all 2026-W01; a
	// tie in count goes by recipe id, descending.
	var trend struct{ Items []store.Trending }
	e.ok(200, "GET", "/cooking/trending?week=2026-W01", bob, nil, &trend)
	if len(trend.Items) != 2 || trend.Items[0].RecipeID != rau.RecipeID || trend.Items[0].Count != 2 || trend.Items[1].Count != 2 {
		t.Errorf("2026-W01: %+v", trend.Items)
	}
	if got := keys(e.queryItems("GSI3", "TRENDING#2026-W01", ""), "GSI3"); len(got) != 2 || got[1] != fmt.Sprintf("TRENDING#2026-W01 00000002#%s", rau.RecipeID) {
		t.Errorf("trending GSI3 keys: %v", got)
	}

	// A deleted history leaves the recent, trending and rating items.
	e.ok(204, "DELETE", "/me/cooking-history/"+h1.HistoryID, alice, nil, nil)
	e.project()
	var gaNow cooking.Recipe
	e.ok(200, "GET", "/recipes/"+ga.RecipeID, bob, nil, &gaNow)
	if gaNow.RatingCount != 1 || gaNow.RatingSum != 5 || gaNow.AvgRating != 5 {
		t.Errorf("gà after alice's cooking was deleted: %+v", gaNow.Rating)
	}
	e.ok(200, "GET", "/cooking/trending?week=2026-W01", bob, nil, &trend)
	if trend.Items[0].Count != 2 || trend.Items[1].RecipeID != ga.RecipeID || trend.Items[1].Count != 1 {
		t.Errorf("2026-W01 after a deletion: %+v", trend.Items)
	}
	e.problem(e.do("GET", "/me/cooking-history/"+h1.HistoryID, alice, nil), 404)

	// Sessions (ttl 24 h): complete once, even when sent twice.
	var ss cooking.Session
	e.ok(201, "POST", "/me/cooking-sessions", bob, map[string]any{"recipeId": canh.RecipeID}, &ss)
	if it := e.getItem(store.SessionKey("bob", ss.SessionID)); str(it, "SK") != "SESSION#"+ss.SessionID || ss.TTL != e.clock.Peek().Add(24*time.Hour).Unix() {
		t.Errorf("session item %v, ttl %d", it, ss.TTL)
	}
	e.ok(200, "PUT", "/me/cooking-sessions/"+ss.SessionID+"/step", bob, map[string]any{"step": 2}, &ss)
	e.problem(e.do("PUT", "/me/cooking-sessions/"+ss.SessionID+"/step", bob, map[string]any{"step": 3}), 400, "step")
	e.problem(e.do("GET", "/me/cooking-sessions/"+ss.SessionID, alice, nil), 404) // someone else's
	var done1, done2 cooking.History
	e.ok(201, "POST", "/me/cooking-sessions/"+ss.SessionID+"/complete", bob, map[string]any{"rating": 4}, &done1)
	e.ok(200, "POST", "/me/cooking-sessions/"+ss.SessionID+"/complete", bob, map[string]any{"rating": 1}, &done2)
	if done1.HistoryID != done2.HistoryID || done2.Rating != 4 || done1.SessionID != ss.SessionID {
		t.Errorf("completed twice: %+v then %+v", done1, done2)
	}
	if n := len(e.queryItems("", "USER#bob", "COOKING#")); n != 3 {
		t.Errorf("bob has %d history entries, want 3 (one from the session)", n)
	}
	e.problem(e.do("PUT", "/me/cooking-sessions/"+ss.SessionID+"/step", bob, map[string]any{"step": 0}), 409)
	var other cooking.Session
	e.ok(201, "POST", "/me/cooking-sessions", bob, map[string]any{"recipeId": ga.RecipeID}, &other)
	e.ok(200, "POST", "/me/cooking-sessions/"+other.SessionID+"/abandon", bob, nil, &other)
	e.problem(e.do("POST", "/me/cooking-sessions/"+other.SessionID+"/complete", bob, map[string]any{}), 409)
	var late cooking.Session
	e.ok(201, "POST", "/me/cooking-sessions", bob, map[string]any{"recipeId": ga.RecipeID}, &late)
	e.clock.Advance(24*time.Hour + time.Second)
	alice, bob, lan = e.token("alice"), e.token("bob"), e.token("lan")
	e.problem(e.do("GET", "/me/cooking-sessions/"+late.SessionID, bob, nil), 404)
	e.problem(e.do("POST", "/me/cooking-sessions/"+late.SessionID+"/complete", bob, map[string]any{}), 404)

	// Suggestions (derived; ttl 90 days): bob liked lan's recipes.
	e.project()
	var sg cooking.Suggestions
	e.ok(200, "GET", "/me/suggestions", bob, nil, &sg)
	if len(sg.Items) == 0 || e.getItem(store.SuggestionKey("bob")) == nil {
		t.Errorf("bob's suggestions: %+v", sg)
	}

	// Only the author changes a recipe; its ratings stay.
	e.problem(e.do("PUT", "/recipes/"+ga.RecipeID, bob, body("Mine now", "fry", "thit-ga")), 403)
	e.problem(e.do("PUT", "/recipes/"+ga.RecipeID, bob, map[string]any{"title": 1}), 403) // whatever the body
	e.problem(e.do("DELETE", "/recipes/"+ga.RecipeID, bob, nil), 403)
	var upd cooking.Recipe
	e.ok(200, "PUT", "/recipes/"+ga.RecipeID, lan, body("Gà xào sả", "fry", "thit-ga"), &upd)
	if upd.Method != "fry" || upd.RatingCount != 1 || upd.AvgRating != 5 || upd.CreatedAt != ga.CreatedAt {
		t.Errorf("updated recipe: %+v", upd)
	}
	// the method's key as the seed writes it
	if it := e.getItem(store.RecipeKey(ga.RecipeID)); str(it, "GSI2PK") != "METHOD#fry" ||
		str(it, "GSI2SK") != "RATING#5.00#"+ga.CreatedAt+"#"+ga.RecipeID {
		t.Errorf("updated recipe's GSI2 keys: %s %s", str(it, "GSI2PK"), str(it, "GSI2SK"))
	}
	e.ok(204, "DELETE", "/recipes/"+rau.RecipeID, lan, nil, nil)
	e.project()
	if sk := e.partitionSKs("RECIPE#" + rau.RecipeID); len(sk) != 0 {
		t.Errorf("a deleted recipe's partition: %v", sk)
	}
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// Bad input to the cooking routes is a 400 naming the field, and nothing
// is written.
func TestCookingBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("b%03d"))
	lan := e.token("lan")
	var in cooking.Ingredient
	e.ok(201, "POST", "/ingredients", lan, map[string]any{"name": "Gạo"}, &in)
	good := func() map[string]any {
		return map[string]any{"title": "Cơm", "method": "steam", "servings": 2, "steps": []string{"Steam"},
			"ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": 1}}}
	}
	r := e.createRecipe(lan, good())
	before := e.snapshot()
	with := func(k string, v any) map[string]any {
		b := good()
		b[k] = v
		return b
	}
	long := strings.Repeat("x", 201)
	for name, c := range map[string]struct {
		method, path string
		body         any
		fields       []string
	}{
		"unknown method":       {"POST", "/recipes", with("method", "microwave"), []string{"method"}},
		"unknown ingredient":   {"POST", "/recipes", with("ingredients", []map[string]any{{"ingredientId": "nope", "quantity": 1}}), []string{"ingredients[0].ingredientId"}},
		"no ingredients":       {"POST", "/recipes", with("ingredients", []map[string]any{}), []string{"ingredients"}},
		"zero quantity":        {"POST", "/recipes", with("ingredients", []map[string]any{{"ingredientId": in.IngredientID, "quantity": 0}}), []string{"ingredients[0].quantity"}},
		"oversize title":       {"POST", "/recipes", with("title", long), []string{"title"}},
		"oversize step":        {"POST", "/recipes", with("steps", []string{strings.Repeat("y", 1001)}), []string{"steps[0]"}},
		"no servings":          {"POST", "/recipes", with("servings", 0), []string{"servings"}},
		"bad restriction":      {"POST", "/recipes", with("suitableFor", []string{"paleo"}), []string{"suitableFor[0]"}},
		"rating 0":             {"POST", "/me/cooking-history", map[string]any{"recipeId": r.RecipeID, "rating": 0}, nil},
		"rating 6":             {"POST", "/me/cooking-history", map[string]any{"recipeId": r.RecipeID, "rating": 6}, []string{"rating"}},
		"bad cook date":        {"POST", "/me/cooking-history", map[string]any{"recipeId": r.RecipeID, "cookDate": "29/12/2025"}, []string{"cookDate"}},
		"future cook date":     {"POST", "/me/cooking-history", map[string]any{"recipeId": r.RecipeID, "cookDate": "2099-01-01"}, []string{"cookDate"}},
		"unknown recipe":       {"POST", "/me/cooking-history", map[string]any{"recipeId": "nope"}, []string{"recipeId"}},
		"recipe id with #":     {"POST", "/me/cooking-history", map[string]any{"recipeId": "a#b"}, []string{"recipeId"}},
		"oversize notes":       {"POST", "/me/cooking-history", map[string]any{"recipeId": r.RecipeID, "notes": strings.Repeat("n", 1001)}, []string{"notes"}},
		"session of no recipe": {"POST", "/me/cooking-sessions", map[string]any{"recipeId": "nope"}, []string{"recipeId"}},
		"unknown month":        {"GET", "/cooking/recent?month=2025-13", nil, []string{"month"}},
		"unknown week":         {"GET", "/cooking/trending?week=2025-W54", nil, []string{"week"}},
		"method and author":    {"GET", "/recipes?method=steam&authorId=lan", nil, []string{"authorId"}},
		"neither":              {"GET", "/recipes", nil, []string{"method"}},
	} {
		t.Run(name, func(t *testing.T) {
			e := e.withT(t)
			res := e.do(c.method, c.path, lan, c.body)
			if c.fields == nil { // a rating of 0 is "not rated": refused as out of range
				e.problem(res, 400, "rating")
				return
			}
			e.problem(res, 400, c.fields...)
		})
	}
	e.unchanged(before, "bad cooking requests")
}
