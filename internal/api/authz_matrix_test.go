package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/store"
)

// The callers of the authorization matrix.
const (
	cOwner     = "owner"     // alice: owns the room, the goal, the comment
	cMember    = "member"    // bob: room member, goal collaborator
	cOutsider  = "outsider"  // carol: signed in, nothing to do with them
	cAdmin     = "admin"     // root: in the admins group, nothing else
	cAnonymous = "anonymous" // no Authorization header
	cMalformed = "malformed" // "Bearer x.y.z"
	cWrongSig  = "wrongsig"  // HS256 with another secret
	cAlgNone   = "algnone"   // alg none
	cExpired   = "expired"   // signed right, expired an hour ago
)

var matrixCallers = []string{cOwner, cMember, cOutsider, cAdmin, cAnonymous, cMalformed, cWrongSig, cAlgNone, cExpired}

// authzExpected is the matrix: for each operation of the spec, what each
// signed-in caller gets ("2xx", or the status). Every bad token (none,
// malformed, wrong signature, alg none, expired) gets 401 on every
// operation that is not public; public ones (publicOps) answer everyone.
// A new operation in the spec without a row fails the test.
//
//	operation                                                     owner member outsider admin
var authzExpected = map[string][4]string{
	"POST /dev/tokens":                        {"2xx", "2xx", "2xx", "2xx"},
	"GET /healthz":                            {"2xx", "2xx", "2xx", "2xx"},
	"GET /openapi.yaml":                       {"2xx", "2xx", "2xx", "2xx"},
	"GET /openapi.json":                       {"2xx", "2xx", "2xx", "2xx"},
	"POST /rooms":                             {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/rooms":                           {"2xx", "2xx", "2xx", "2xx"},
	"GET /rooms/{roomId}":                     {"2xx", "2xx", "404", "404"},
	"PATCH /rooms/{roomId}":                   {"2xx", "403", "404", "404"},
	"DELETE /rooms/{roomId}":                  {"2xx", "403", "404", "404"},
	"POST /rooms/{roomId}/members":            {"2xx", "403", "404", "404"},
	"GET /rooms/{roomId}/members":             {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/members/{userId}":    {"2xx", "2xx", "404", "404"},
	"DELETE /rooms/{roomId}/members/{userId}": {"2xx", "2xx", "404", "404"},
	"PUT /rooms/{roomId}/criteria":            {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/criteria":            {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/criteria/latest":     {"2xx", "2xx", "404", "404"},
	// No projector runs here, so nothing is derived: 404 for everyone who
	// may look, the same 404 for those who may not.
	"GET /rooms/{roomId}/combined-criteria":           {"404", "404", "404", "404"},
	"GET /rooms/{roomId}/compatibility":               {"404", "404", "404", "404"},
	"GET /rooms/{roomId}/compatibility/history":       {"2xx", "2xx", "404", "404"},
	"POST /rooms/{roomId}/listings":                   {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/listings":                    {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/listings/lookup":             {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/listings/{listingId}":        {"2xx", "2xx", "404", "404"},
	"PUT /rooms/{roomId}/listings/{listingId}/status": {"2xx", "2xx", "404", "404"},
	"POST /rooms/{roomId}/listings/{listingId}/seen":  {"2xx", "2xx", "404", "404"},
	"GET /rooms/{roomId}/activities":                  {"2xx", "2xx", "404", "404"},
	// The room's chat (alice connected to it): its members only.
	"GET /chat/rooms/{roomId}":            {"2xx", "2xx", "404", "404"},
	"GET /chat/rooms/{roomId}/messages":   {"2xx", "2xx", "404", "404"},
	"POST /resources":                     {"2xx", "2xx", "2xx", "2xx"},
	"GET /resources/{type}/{id}":          {"2xx", "2xx", "404", "404"},
	"POST /resources/{type}/{id}/invites": {"2xx", "403", "404", "404"},
	"GET /resources/{type}/{id}/invites":  {"2xx", "403", "404", "404"},
	// An invite is between the owner and the invitee (dave): a collaborator
	// does not see it; the owner sees it but only the invitee answers it.
	"GET /resources/{type}/{id}/invites/{inviteId}":              {"2xx", "404", "404", "404"},
	"POST /resources/{type}/{id}/invites/{inviteId}/accept":      {"403", "404", "404", "404"},
	"POST /resources/{type}/{id}/invites/{inviteId}/decline":     {"403", "404", "404", "404"},
	"GET /resources/{type}/{id}/collaborators":                   {"2xx", "2xx", "404", "404"},
	"GET /resources/{type}/{id}/collaborators/{userId}":          {"2xx", "2xx", "404", "404"},
	"POST /resources/{type}/{id}/comments":                       {"2xx", "2xx", "404", "404"},
	"GET /resources/{type}/{id}/comments":                        {"2xx", "2xx", "404", "404"},
	"GET /comments/{commentId}":                                  {"2xx", "2xx", "404", "404"},
	"PATCH /comments/{commentId}":                                {"2xx", "403", "404", "404"},
	"DELETE /comments/{commentId}":                               {"2xx", "403", "404", "404"},
	"GET /comments/{commentId}/replies":                          {"2xx", "2xx", "404", "404"},
	"GET /comments/{commentId}/reactions":                        {"2xx", "2xx", "404", "404"},
	"PUT /comments/{commentId}/reactions/{emoji}":                {"2xx", "2xx", "404", "404"},
	"DELETE /comments/{commentId}/reactions/{emoji}":             {"2xx", "2xx", "404", "404"}, // none of bob's: removed all the same
	"GET /comments/{commentId}/reactions/{emoji}/users/{userId}": {"2xx", "2xx", "404", "404"},
	"GET /me/invites":                                            {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/collaborations":                                     {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/notification-preferences":                           {"2xx", "2xx", "2xx", "2xx"},
	"PUT /me/notification-preferences":                           {"2xx", "2xx", "2xx", "2xx"},
	// Only alice has a profile in the world.
	"GET /me/profile":                  {"2xx", "404", "404", "404"},
	"PUT /me/profile":                  {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/notifications":            {"2xx", "2xx", "2xx", "2xx"},
	"POST /locations":                  {"403", "403", "403", "2xx"},
	"GET /locations":                   {"2xx", "2xx", "2xx", "2xx"},
	"GET /locations/by-code/{code}":    {"2xx", "2xx", "2xx", "2xx"},
	"GET /locations/{locationId}":      {"2xx", "2xx", "2xx", "2xx"},
	"PATCH /locations/{locationId}":    {"403", "403", "403", "2xx"},
	"DELETE /locations/{locationId}":   {"403", "403", "403", "2xx"},
	"PUT /locations/{locationId}/code": {"403", "403", "403", "2xx"},
	"POST /ingredients":                {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/cooking-preferences":      {"2xx", "2xx", "2xx", "2xx"},
	"PUT /me/cooking-preferences":      {"2xx", "2xx", "2xx", "2xx"},
	"GET /ingredients":                 {"2xx", "2xx", "2xx", "2xx"},
	"GET /ingredients/{ingredientId}":  {"2xx", "2xx", "2xx", "2xx"},
	"GET /users/{userId}/profile":      {"2xx", "2xx", "2xx", "2xx"},
	"POST /recipes":                    {"2xx", "2xx", "2xx", "2xx"},
	"GET /recipes":                     {"2xx", "2xx", "2xx", "2xx"},
	"GET /recipes/{recipeId}":          {"2xx", "2xx", "2xx", "2xx"},
	"PUT /recipes/{recipeId}":          {"2xx", "403", "403", "403"}, // the author only
	"DELETE /recipes/{recipeId}":       {"2xx", "403", "403", "403"},
	"GET /cooking/recent":              {"2xx", "2xx", "2xx", "2xx"},
	"GET /cooking/trending":            {"2xx", "2xx", "2xx", "2xx"},
	"POST /me/cooking-history":         {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/cooking-history":          {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/cooking-favorites":        {"2xx", "2xx", "2xx", "2xx"},
	"GET /me/suggestions":              {"2xx", "2xx", "2xx", "2xx"},
	"POST /me/cooking-sessions":        {"2xx", "2xx", "2xx", "2xx"},
	// The owner's history entry and session: nobody else's /me reaches them.
	"GET /me/cooking-history/{historyId}":            {"2xx", "404", "404", "404"},
	"PATCH /me/cooking-history/{historyId}":          {"2xx", "404", "404", "404"},
	"DELETE /me/cooking-history/{historyId}":         {"2xx", "404", "404", "404"},
	"GET /me/cooking-sessions/{sessionId}":           {"2xx", "404", "404", "404"},
	"PUT /me/cooking-sessions/{sessionId}/step":      {"2xx", "404", "404", "404"},
	"POST /me/cooking-sessions/{sessionId}/complete": {"2xx", "404", "404", "404"},
	"POST /me/cooking-sessions/{sessionId}/abandon":  {"2xx", "404", "404", "404"},
}

// publicOps need no token at all.
var publicOps = map[string]bool{"POST /dev/tokens": true, "GET /healthz": true, "GET /openapi.yaml": true, "GET /openapi.json": true}

// matrixBodies are valid bodies, so that a cell shows authorization, not
// validation.
var matrixBodies = map[string]string{
	"POST /dev/tokens":                                `{"userId":"zed"}`,
	"POST /rooms":                                     `{"name":"Another","searchType":"rent"}`,
	"PATCH /rooms/{roomId}":                           `{"context":{"description":"Renamed"}}`,
	"POST /rooms/{roomId}/members":                    `{"userId":"dave"}`,
	"PUT /rooms/{roomId}/criteria":                    `{"criteria":{"locations":["Bern"]}}`,
	"POST /rooms/{roomId}/listings":                   `{"sourceBrand":"homegate","externalId":"HG-2","title":"Two","location":"Bern"}`,
	"PUT /rooms/{roomId}/listings/{listingId}/status": `{"status":"SHORTLISTED"}`,
	"POST /resources":                                 `{"resourceType":"goal","title":"Another"}`,
	"POST /resources/{type}/{id}/invites":             `{"inviteeId":"erin"}`,
	"POST /resources/{type}/{id}/comments":            `{"text":"hello"}`,
	"PATCH /comments/{commentId}":                     `{"text":"edited"}`,
	"PUT /me/notification-preferences":                `{"emailOnInvite":false}`,
	"PUT /me/profile":                                 `{"name":"Someone"}`,
	"POST /locations":                                 `{"locationCode":"bern-main","name":"Bern","placeId":"p2","formattedAddress":"b","lat":46.9,"lng":7.4}`,
	"PATCH /locations/{locationId}":                   `{"name":"Zurich HB"}`,
	"PUT /locations/{locationId}/code":                `{"locationCode":"zurich-two"}`,
	"POST /ingredients":                               `{"name":"Basil {n}"}`, // {n}: the world's number
	"PUT /me/cooking-preferences":                     `{"favoriteMethods":["steam"],"skillLevel":"beginner"}`,
	"POST /recipes":                                   `{"title":"Pho {n}","method":"boil","ingredients":[{"ingredientId":"{ingredientId}","quantity":1,"unit":"kg"}],"steps":["Boil"],"servings":2}`,
	"PUT /recipes/{recipeId}":                         `{"title":"Pho again","method":"simmer","ingredients":[{"ingredientId":"{ingredientId}","quantity":2}],"steps":["Simmer"],"servings":4}`,
	"POST /me/cooking-history":                        `{"recipeId":"{recipeId}","rating":4}`,
	"PATCH /me/cooking-history/{historyId}":           `{"rating":5,"favorite":true}`,
	"POST /me/cooking-sessions":                       `{"recipeId":"{recipeId}"}`,
	"PUT /me/cooking-sessions/{sessionId}/step":       `{"step":0}`,
	"POST /me/cooking-sessions/{sessionId}/complete":  `{"rating":3}`,
}

// body is an operation's body in world n, with the world's ids (nil: none).
func (w matrixWorld) body(op string, n int) any {
	if b, ok := matrixBodies[op]; ok {
		return json.RawMessage(w.path(strings.ReplaceAll(b, "{n}", fmt.Sprint(n))))
	}
	return nil
}

// matrixWorld is what the cells act on: alice's room with bob as member,
// a listing; alice's goal with bob as collaborator, a pending invite to
// dave, alice's comment with her reaction; a location.
type matrixWorld struct {
	room, listing, goal, invite, comment, location, code, ingredient, recipe, history, session string
}

func buildWorld(t *testing.T, e *env, tok map[string]string, n int) matrixWorld {
	t.Helper()
	var w matrixWorld
	var v struct{ RoomID, ListingID, ResourceID, InviteID, CommentID, LocationID string }
	e.ok(201, "POST", "/rooms", tok[cOwner], map[string]any{"name": "Flat", "searchType": "rent"}, &v)
	w.room = v.RoomID
	e.ok(201, "POST", "/rooms/"+w.room+"/members", tok[cOwner], map[string]any{"userId": "bob"}, nil)
	e.ok(201, "PUT", "/rooms/"+w.room+"/criteria", tok[cOwner], map[string]any{"criteria": map[string]any{"locations": []string{"Zurich"}}}, nil)
	e.ok(201, "PUT", "/rooms/"+w.room+"/criteria", tok[cMember], map[string]any{"criteria": map[string]any{"locations": []string{"Zurich"}}}, nil)
	e.ok(201, "POST", "/rooms/"+w.room+"/listings", tok[cOwner], map[string]any{"sourceBrand": "homegate", "externalId": "HG-1", "title": "One", "location": "Zurich"}, &v)
	w.listing = v.ListingID
	if err := e.st.Chat.Connect(context.Background(), chat.Connection{ConnectionID: "c-" + w.room, UserID: "alice", RoomID: w.room,
		ConnectedAt: store.Timestamp(e.clock.Peek()), TTL: e.clock.Peek().Add(chat.ConnectionTTL).Unix(), SearchRoom: true}); err != nil {
		t.Fatal(err)
	}
	e.ok(201, "POST", "/resources", tok[cOwner], map[string]any{"resourceType": "goal", "title": "Run"}, &v)
	w.goal = v.ResourceID
	e.ok(201, "POST", "/resources/goal/"+w.goal+"/invites", tok[cOwner], map[string]any{"inviteeId": "bob"}, &v)
	e.ok(200, "POST", "/resources/goal/"+w.goal+"/invites/"+v.InviteID+"/accept", tok[cMember], nil, nil)
	e.ok(201, "POST", "/resources/goal/"+w.goal+"/invites", tok[cOwner], map[string]any{"inviteeId": "dave"}, &v)
	w.invite = v.InviteID
	e.ok(201, "POST", "/resources/goal/"+w.goal+"/comments", tok[cOwner], map[string]any{"text": "hi @bob"}, &v)
	w.comment = v.CommentID
	e.ok(201, "PUT", "/comments/"+w.comment+"/reactions/%F0%9F%91%8D", tok[cOwner], nil, nil)
	e.ok(200, "PUT", "/me/profile", tok[cOwner], map[string]any{"name": "Alice"}, nil)
	w.code = fmt.Sprintf("zurich-%03d", n)
	e.ok(201, "POST", "/locations", tok[cAdmin], map[string]any{"locationCode": w.code, "name": "Zurich", "placeId": "p1", "formattedAddress": "a", "lat": 47.3, "lng": 8.5}, &v)
	w.location = v.LocationID
	var in struct{ IngredientID string }
	e.ok(201, "POST", "/ingredients", tok[cOwner], map[string]any{"name": fmt.Sprintf("Thịt gà %d", n)}, &in)
	w.ingredient = in.IngredientID
	var rc struct{ RecipeID, HistoryID, SessionID string }
	e.ok(201, "POST", "/recipes", tok[cOwner], map[string]any{"title": "Canh chua", "method": "simmer", "servings": 2, "steps": []string{"Simmer", "Serve"},
		"ingredients": []map[string]any{{"ingredientId": w.ingredient, "quantity": 0.5, "unit": "kg"}}}, &rc)
	w.recipe = rc.RecipeID
	e.ok(201, "POST", "/me/cooking-history", tok[cOwner], map[string]any{"recipeId": w.recipe, "rating": 4}, &rc)
	w.history = rc.HistoryID
	e.ok(201, "POST", "/me/cooking-sessions", tok[cOwner], map[string]any{"recipeId": w.recipe}, &rc)
	w.session = rc.SessionID
	return w
}

func (w matrixWorld) path(p string) string {
	for from, to := range map[string]string{
		"{roomId}": w.room, "{listingId}": w.listing, "{type}": "goal", "{id}": w.goal, "{inviteId}": w.invite,
		"{commentId}": w.comment, "{emoji}": "%F0%9F%91%8D", "{locationId}": w.location, "{code}": w.code,
		"{ingredientId}": w.ingredient, "{recipeId}": w.recipe, "{historyId}": w.history, "{sessionId}": w.session,
	} {
		p = strings.ReplaceAll(p, from, to)
	}
	// A member's own membership; the owner's reaction.
	p = strings.Replace(p, "/members/{userId}", "/members/bob", 1)
	p = strings.Replace(p, "/collaborators/{userId}", "/collaborators/bob", 1)
	p = strings.Replace(p, "/users/{userId}", "/users/alice", 1)
	if p == "/recipes" {
		p += "?method=simmer"
	}
	if strings.HasSuffix(p, "/listings/lookup") {
		p += "?sourceBrand=homegate&externalId=HG-1"
	}
	return p
}

// specOperations lists every operation of the served spec.
func specOperations(t *testing.T, e *env) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	r := e.do("GET", "/openapi.json", "", nil)
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for path, item := range doc.Paths {
		for method := range item {
			switch m := strings.ToUpper(method); m {
			case "GET", "POST", "PUT", "PATCH", "DELETE":
				ops = append(ops, m+" "+path)
			}
		}
	}
	sort.Strings(ops)
	return ops
}

func class(status int) string {
	if status >= 200 && status < 300 {
		return "2xx"
	}
	return fmt.Sprint(status)
}

// matrixEnv is a writer on real time (DynamoDB Local deletes items whose
// ttl has passed, the harness's clock starts in 2025, and sessions live
// 24 hours), with invite limits out of the way, and the matrix's signed-in
// callers' tokens.
func matrixEnv(t *testing.T, ids string) (*env, map[string]string) {
	t.Helper()
	e := newEnv(t, sequence(ids))
	e.clock.Advance(time.Since(e.clock.Peek()))
	e.st.InviteLimits.PerUser, e.st.InviteLimits.PerResource, e.st.InviteLimits.Window = 1000, 1000, time.Hour
	return e, map[string]string{
		cOwner: e.token("alice"), cMember: e.token("bob"), cOutsider: e.token("carol"),
		cAdmin: e.mint(map[string]any{"userId": "root", "groups": []string{"admins"}}),
	}
}

// TestAuthorizationMatrix runs every operation of the spec as every kind
// of caller — owner, member or collaborator, outsider, admin, no token, a
// malformed token, a wrong signature, alg none, an expired token — each
// signed-in caller on a world of its own where the call changes something
// (the bad tokens, refused before anything is read or written, on the
// last one's), and compares the outcome with authzExpected; a 5xx
// anywhere fails. It also checks that an
// outsider's answer about a room that exists is the same as about one
// that does not.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	e, tok := matrixEnv(t, "m%03d")
	claims := jwt.MapClaims{"sub": "alice", "iss": "dynastream-test", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	wrong, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte("another secret, 32 bytes long..."))
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	expired, _ := auth.DevTokens{Secret: []byte("test secret, 32 bytes long......"), Issuer: "dynastream-test"}.Mint("alice", nil, e.clock.Peek().Add(-3*time.Hour), time.Hour)
	bad := map[string]string{cMalformed: "x.y.z", cWrongSig: wrong, cAlgNone: none, cExpired: expired}

	ops := specOperations(t, e)
	n := 0
	var shared matrixWorld
	var reads *matrixWorld // the world every GET is made on: reads change nothing
	for _, op := range ops {
		want, ok := authzExpected[op]
		if !ok {
			t.Errorf("operation %s is in the spec but has no row in authzExpected: add one", op)
			continue
		}
		method, path, _ := strings.Cut(op, " ")
		got := [4]string{}
		for i, caller := range matrixCallers {
			// A world of its own where the call may change something:
			// a signed-in caller's, or anyone's on a public operation. A
			// bad token's call is refused before it reads or writes
			// (asserted below), so it shares the last caller's world; a
			// call that got through would fail the test on its own.
			// Every GET reads one world, made for the first.
			switch {
			case method == "GET" && i == 0 && reads == nil:
				n++
				w := buildWorld(t, e, tok, n)
				reads = &w
				fallthrough
			case method == "GET" && i == 0:
				shared = *reads
			case method != "GET" && (i < 4 || publicOps[op]):
				n++
				shared = buildWorld(t, e, tok, n)
			}
			token := tok[caller]
			if b, isBad := bad[caller]; isBad {
				token = b
			}
			r := e.do(method, shared.path(path), token, shared.body(op, n))
			if r.status >= 500 {
				t.Errorf("%s as %s: %d %s", op, caller, r.status, r.body)
			}
			if i < 4 {
				got[i] = class(r.status)
				continue
			}
			wantBad := "401"
			if publicOps[op] {
				wantBad = "2xx"
			}
			if c := class(r.status); c != wantBad {
				t.Errorf("%s with a %s token: %s, want %s (%s)", op, caller, c, wantBad, r.body)
			}
		}
		if got != want {
			t.Errorf("%s: owner/member/outsider/admin got %v, want %v", op, got, want)
		}
		// An outsider learns nothing about whether a room exists.
		if strings.Contains(path, "{roomId}") {
			real := e.do(method, shared.path(path), tok[cOutsider], shared.body(op, n))
			ghost := e.do(method, strings.Replace(shared.path(path), shared.room, "no-such-room", 1), tok[cOutsider], shared.body(op, n))
			if real.status != ghost.status || strings.ReplaceAll(string(real.body), shared.room, "X") != strings.ReplaceAll(string(ghost.body), "no-such-room", "X") {
				t.Errorf("%s: an outsider tells a room that exists (%d %s) from one that does not (%d %s)", op, real.status, real.body, ghost.status, ghost.body)
			}
		}
	}
}

// TestForeignCursorsRefused: a cursor from one room's list, used on
// another room's same list, or on another list of the same room, is a 400.
func TestForeignCursorsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("fc%03d"))
	alice := e.token("alice")
	var rooms [2]string
	for i := range rooms {
		rooms[i] = e.createRoom(alice, map[string]any{"name": "r", "searchType": "rent"}).RoomID
		for _, u := range []string{"bob", "carol", "dave"} {
			e.ok(201, "POST", "/rooms/"+rooms[i]+"/members", alice, map[string]any{"userId": u}, nil)
		}
	}
	var page struct{ NextCursor string }
	e.ok(200, "GET", "/rooms/"+rooms[0]+"/members?limit=1", alice, nil, &page)
	if page.NextCursor == "" {
		t.Fatal("no cursor")
	}
	for _, p := range []string{"/rooms/" + rooms[1] + "/members", "/rooms/" + rooms[0] + "/criteria", "/rooms/" + rooms[0] + "/listings", "/rooms/" + rooms[0] + "/activities", "/me/rooms", "/locations"} {
		if r := e.do("GET", p+"?cursor="+page.NextCursor, alice, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s with a foreign cursor: %d %s, want 400", p, r.status, r.body)
		}
	}
}
