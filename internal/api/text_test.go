package api_test

import (
	"strings"
	"testing"
	"time"
)

// Text that shows nothing (zero-width spaces, a byte order mark, a Hangul
// filler) is blank wherever text is required, and a single-line name may
// not hold bidirectional overrides or isolates ("invoice\u202Egpj.exe"
// shows as "invoiceexe.jpg"); free text may.
func TestInvisibleAndBidiText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("tx%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	alice := e.token("alice")
	admin := e.mint(map[string]any{"userId": "root", "groups": []string{"admins"}})
	room := e.createRoom(alice, map[string]any{"name": "r", "searchType": "rent"}).RoomID
	var goal struct{ ResourceID string }
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Run"}, &goal)
	var in struct{ IngredientID string }
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Salt"}, &in)
	for _, blank := range []string{"\u200B", "\uFEFF", "\u200B\u200C \u2060", "\u3164", "\u00AD\u200E"} {
		for _, c := range []struct {
			method, path, field string
			body                map[string]any
			token               string
		}{
			{"POST", "/rooms", "name", map[string]any{"name": blank, "searchType": "rent"}, alice},
			{"POST", "/resources", "title", map[string]any{"resourceType": "goal", "title": blank}, alice},
			{"POST", "/resources/goal/" + goal.ResourceID + "/comments", "text", map[string]any{"text": blank}, alice},
			{"POST", "/rooms/" + room + "/listings", "title", map[string]any{"sourceBrand": "b", "externalId": "x", "title": blank, "location": "l"}, alice},
			{"POST", "/ingredients", "name", map[string]any{"name": blank}, alice},
			{"POST", "/recipes", "title", map[string]any{"title": blank, "method": "boil", "servings": 1, "steps": []string{"Boil"},
				"ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": 1}}}, alice},
			{"POST", "/locations", "name", map[string]any{"locationCode": "blank-01", "name": blank, "placeId": "p", "formattedAddress": "a", "lat": 1, "lng": 1}, admin},
			{"PUT", "/me/profile", "name", map[string]any{"name": blank}, alice},
		} {
			r := e.do(c.method, c.path, c.token, c.body)
			if r.status != 400 || !strings.Contains(string(r.body), `"field":"`+c.field+`"`) {
				t.Errorf("%s %s with %s %+q: %d %s, want 400 on %s", c.method, c.path, c.field, blank, r.status, r.body, c.field)
			}
		}
	}
	rlo := "invoice\u202Egpj.exe"
	e.problem(e.do("POST", "/rooms", alice, map[string]any{"name": rlo, "searchType": "rent"}), 400, "name")
	e.problem(e.do("POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "a\u2066b\u2069"}), 400, "title")
	e.ok(201, "POST", "/resources/goal/"+goal.ResourceID+"/comments", alice, map[string]any{"text": "quoting " + rlo}, nil)
	e.ok(201, "POST", "/rooms", alice, map[string]any{"name": "דירה בתל אביב", "searchType": "rent"}, nil)
}
