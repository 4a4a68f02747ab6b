package api_test

import (
	"strings"
	"testing"
)

// TestIngredients: seed 003's pattern 4 through the API — create, the
// normalized name unique (409 naming the one there), find by exact name
// and by prefix (paginated), through GSI2 INGREDIENT#SEARCH / NAME#… and a
// name lookup item, and bad input refused with nothing written.
func TestIngredients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("ing%02d"))
	alice := e.token("alice")
	type ingredient struct {
		IngredientID, Name, NormalizedName, Category, CreatedByUserID string
	}
	var ga, bo, thom ingredient
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Thịt gà", "category": "meat"}, &ga)
	if ga.NormalizedName != "thit-ga" || ga.Name != "Thịt gà" || ga.CreatedByUserID != "alice" {
		t.Errorf("created %+v", ga)
	}
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Thịt bò"}, &bo)
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Thơm"}, &thom)
	r := e.do("POST", "/ingredients", alice, map[string]any{"name": "  THIT   GA! "})
	if r.status != 409 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(r.body), `"existingIngredientId":"`+ga.IngredientID+`"`) {
		t.Errorf("duplicate name: %s", r.body)
	}
	var found struct {
		Items      []ingredient
		NextCursor string
	}
	e.ok(200, "GET", "/ingredients?name=TH%E1%BB%8AT%20G%C3%80", alice, nil, &found)
	if len(found.Items) != 1 || found.Items[0].IngredientID != ga.IngredientID {
		t.Errorf("by name: %+v", found.Items)
	}
	var names []string
	cursor := ""
	for i := 0; i < 5; i++ {
		q := "/ingredients?prefix=th&limit=1"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		e.ok(200, "GET", q, alice, nil, &found)
		for _, it := range found.Items {
			names = append(names, it.NormalizedName)
		}
		if cursor = found.NextCursor; cursor == "" {
			break
		}
	}
	if want := "thit-bo,thit-ga,thom"; strings.Join(names, ",") != want {
		t.Errorf("prefix th, page by page: %v, want %s", names, want)
	}
	e.ok(200, "GET", "/ingredients?prefix=thit-b", alice, nil, &found)
	if len(found.Items) != 1 || found.Items[0].IngredientID != bo.IngredientID {
		t.Errorf("prefix thit-b: %+v", found.Items)
	}
	e.ok(200, "GET", "/ingredients/"+thom.IngredientID, alice, nil, nil)
	e.problem(e.do("GET", "/ingredients/nope", alice, nil), 404)
	for field, body := range map[string]map[string]any{"name": {"name": "!!!"}, "category": {"name": "x", "category": strings.Repeat("c", 61)}} {
		e.problem(e.do("POST", "/ingredients", alice, body), 400, field)
	}
	e.problem(e.do("POST", "/ingredients", alice, map[string]any{}), 400, "name")
	e.problem(e.do("GET", "/ingredients?name=a&prefix=b", alice, nil), 400, "prefix")

	// The raw items: the ingredient with its GSI2 keys, and the lookup.
	keys := map[string]bool{}
	for _, it := range e.snapshot() {
		pk, _ := it["PK"].(string)
		sk, _ := it["SK"].(string)
		keys[pk+" "+sk] = true
		if pk == "INGREDIENT#"+ga.IngredientID && (it["GSI2PK"] != "INGREDIENT#SEARCH" || it["GSI2SK"] != "NAME#thit-ga") {
			t.Errorf("ingredient item %v", it)
		}
	}
	for _, k := range []string{"INGREDIENT#" + ga.IngredientID + " METADATA", "INGREDIENT_NAME#thit-ga META", "INGREDIENT_NAME#thom META"} {
		if !keys[k] {
			t.Errorf("no item %s", k)
		}
	}
	if len(keys) != 6 {
		t.Errorf("%d items, want 6 (3 ingredients, 3 lookups; nothing of the refused ones): %v", len(keys), keys)
	}
}

// TestCookingPreferences: defaults, then a replacement with repeats
// dropped; closed sets and unknown ingredients refused, each named.
func TestCookingPreferences(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("cp%02d"))
	alice := e.token("alice")
	var pref struct {
		UserID                                                    string
		FavoriteMethods, DietaryRestrictions, DislikedIngredients []string
		SkillLevel                                                string
		Servings                                                  int
	}
	e.ok(200, "GET", "/me/cooking-preferences", alice, nil, &pref)
	if pref.UserID != "alice" || pref.FavoriteMethods == nil || len(pref.FavoriteMethods) != 0 {
		t.Errorf("defaults %+v", pref)
	}
	var gar struct{ IngredientID string }
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Tỏi"}, &gar)
	e.ok(200, "PUT", "/me/cooking-preferences", alice, map[string]any{"favoriteMethods": []string{"steam", "stir-fry", "steam"},
		"dietaryRestrictions": []string{"halal"}, "dislikedIngredients": []string{gar.IngredientID, gar.IngredientID}, "skillLevel": "beginner", "servings": 2}, nil)
	e.ok(200, "GET", "/me/cooking-preferences", alice, nil, &pref)
	if strings.Join(pref.FavoriteMethods, ",") != "steam,stir-fry" || len(pref.DislikedIngredients) != 1 || pref.Servings != 2 || pref.SkillLevel != "beginner" {
		t.Errorf("stored %+v", pref)
	}
	e.problem(e.do("PUT", "/me/cooking-preferences", alice, map[string]any{"favoriteMethods": []string{"microwave"}}), 400, "favoriteMethods[0]")
	e.problem(e.do("PUT", "/me/cooking-preferences", alice, map[string]any{"dislikedIngredients": []string{gar.IngredientID, "nope"}}), 400, "dislikedIngredients[1]")
	e.problem(e.do("PUT", "/me/cooking-preferences", alice, map[string]any{"servings": 21}), 400, "servings")
	// Nothing changed by the refused ones.
	e.ok(200, "GET", "/me/cooking-preferences", alice, nil, &pref)
	if pref.Servings != 2 {
		t.Errorf("a refused request changed the preferences: %+v", pref)
	}
	for _, it := range e.snapshot() {
		if it["SK"] == "PREFERENCES" && (it["GSI1PK"] != "USER#alice" || it["GSI1SK"] != "PREFERENCES" || it["PK"] != "USER#alice") {
			t.Errorf("preferences item %v: want USER#alice / PREFERENCES on the table and GSI1", it)
		}
	}
}
