package api_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/collab"
)

// TestInviteLimits: invites are limited per inviter and per resource in a
// window (429 with Retry-After, the limit named, nothing written), and
// allowed again when the window ends.
func TestInviteLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("lim%02d"))
	e.st.InviteLimits = collab.InviteLimits{PerUser: 3, PerResource: 2, Window: time.Hour}
	// Real time, or later: a window's counters expire (TTL) an hour after
	// it ends, and DynamoDB Local deletes expired items, which the
	// harness's clock in 2025 would make of them at once. The start of the
	// next hour's window (the clock ticks a second a call): the test ran
	// across a window's end when it started near one.
	next := time.Now().Truncate(time.Hour).Add(time.Hour + time.Minute)
	e.clock.Advance(next.Sub(e.clock.Peek()))
	alice := e.token("alice")
	var g1, g2 struct{ ResourceID string }
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "One"}, &g1)
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Two"}, &g2)
	invite := func(res string, n int, want int) response {
		t.Helper()
		r := e.do("POST", "/resources/goal/"+res+"/invites", alice, map[string]any{"inviteeEmail": "x" + strconv.Itoa(n) + "@example.com"})
		if r.status != want {
			t.Fatalf("invite %d on %s: %d %s, want %d", n, res, r.status, r.body, want)
		}
		return r
	}
	invite(g1.ResourceID, 1, 201)
	invite(g1.ResourceID, 2, 201)
	r := invite(g1.ResourceID, 3, 429) // the resource's limit
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s <= 0 || s > 3600 {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if p := e.problem(r, 429); p.Detail == "" {
		t.Error("no detail")
	}
	invite(g2.ResourceID, 4, 201)
	invite(g2.ResourceID, 5, 429) // alice's limit (3 sent)
	var list struct{ Items []any }
	e.ok(200, "GET", "/resources/goal/"+g1.ResourceID+"/invites", alice, nil, &list)
	if len(list.Items) != 2 {
		t.Errorf("%d invites on g1, want 2 (refused ones not written)", len(list.Items))
	}
	e.clock.Advance(time.Hour)
	invite(g1.ResourceID, 6, 201)
}

// DynamoDB's limits are the request's: a number it cannot store (nonzero
// below 1e-130 or from 1e126 in magnitude) is a 400 naming the field in
// every place a number is taken, its limits themselves are stored; a name
// whose normalized form does not fit a key is a 400 on create and search.
func TestDynamoDBLimitsAreValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("dl%03d"))
	alice := e.token("alice")
	admin := e.mint(map[string]any{"userId": "root", "groups": []string{"admins"}})
	room := e.createRoom(alice, map[string]any{"name": "r", "searchType": "rent"}).RoomID
	var in struct{ IngredientID string }
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Salt"}, &in)
	recipe := func(q json.Number) map[string]any {
		return map[string]any{"title": "Pho", "method": "boil", "servings": 2, "steps": []string{"Boil"},
			"ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": q}}}
	}
	var rc struct{ RecipeID string }
	e.ok(201, "POST", "/recipes", alice, recipe("1e-130"), &rc)
	reason := map[string]string{}
	for _, bad := range []json.Number{"1e-131", "-9.9e-131", "1e126", "-1e126", "1.7976931348623157e308", "5e-324"} {
		for _, c := range []struct {
			method, path, token, field string
			body                       any
		}{
			{"POST", "/recipes", alice, "ingredients[0].quantity", recipe(bad)},
			{"PUT", "/recipes/" + rc.RecipeID, alice, "ingredients[0].quantity", recipe(bad)},
			{"PUT", "/rooms/" + room + "/criteria", alice, "criteria.priceMax", map[string]any{"criteria": map[string]any{"priceMin": 0, "priceMax": bad}}},
			{"POST", "/rooms/" + room + "/listings", alice, "price", map[string]any{"sourceBrand": "b", "externalId": "x" + string(bad), "title": "t", "location": "l", "price": bad}},
			{"POST", "/rooms/" + room + "/listings", alice, "area", map[string]any{"sourceBrand": "b", "externalId": "y" + string(bad), "title": "t", "location": "l", "area": bad}},
		} {
			p := e.problem(e.do(c.method, c.path, c.token, c.body), 400, c.field)
			reason[c.field] = p.Errors[0].Reason
		}
	}
	if r := reason["price"]; !strings.Contains(r, "1e-130") || !strings.Contains(r, "1e126") {
		t.Errorf("the reason %q does not say the range", r)
	}
	// The limits themselves are stored.
	e.ok(201, "POST", "/rooms/"+room+"/listings", alice, map[string]any{"sourceBrand": "b", "externalId": "max", "title": "t", "location": "l", "price": json.Number("9.9e125"), "area": json.Number("1e-130")}, nil)
	e.ok(201, "POST", "/locations", admin, map[string]any{"locationCode": "tiny-01", "name": "n", "placeId": "p", "formattedAddress": "a", "lat": json.Number("1e-130"), "lng": 0}, nil)
	e.problem(e.do("POST", "/locations", admin, map[string]any{"locationCode": "tiny-02", "name": "n", "placeId": "p", "formattedAddress": "a", "lat": json.Number("1e-131"), "lng": 0}), 400, "lat")

	// 114 Hangul syllables are 342 bytes, and 1,026 once decomposed.
	hangul := strings.Repeat("한", 114)
	e.problem(e.do("POST", "/ingredients", alice, map[string]any{"name": hangul}), 400, "name")
	e.problem(e.do("GET", "/ingredients?name="+url.QueryEscape(hangul), alice, nil), 400, "name")
	e.problem(e.do("GET", "/ingredients?prefix="+url.QueryEscape(hangul), alice, nil), 400, "prefix")
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": strings.Repeat("한", 56)}, nil) // 504 bytes once decomposed
}
