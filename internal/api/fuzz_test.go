package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/gateway"
	"github.com/dynastream/dynastream/internal/store"
)

// fuzzRoutes are the writer's operations; {param}s are filled from the
// fuzzed id, except where a seed names a real one.
var fuzzRoutes = []string{
	"POST /dev/tokens", "POST /rooms", "GET /rooms/{roomId}", "GET /me/rooms", "POST /rooms/{roomId}/members",
	"GET /rooms/{roomId}/members", "PUT /rooms/{roomId}/criteria", "GET /rooms/{roomId}/criteria",
	"GET /rooms/{roomId}/criteria/latest", "GET /rooms/{roomId}/combined-criteria", "GET /rooms/{roomId}/compatibility",
	"PATCH /rooms/{roomId}", "DELETE /rooms/{roomId}", "GET /rooms/{roomId}/members/{userId}",
	"DELETE /rooms/{roomId}/members/{userId}", "POST /rooms/{roomId}/listings", "GET /rooms/{roomId}/listings",
	"GET /rooms/{roomId}/listings/lookup", "GET /rooms/{roomId}/listings/{listingId}",
	"PUT /rooms/{roomId}/listings/{listingId}/status", "POST /rooms/{roomId}/listings/{listingId}/seen",
	"GET /rooms/{roomId}/compatibility/history", "GET /rooms/{roomId}/activities", "POST /resources",
	"GET /resources/{type}/{id}", "POST /resources/{type}/{id}/invites", "GET /resources/{type}/{id}/invites",
	"GET /resources/{type}/{id}/invites/{inviteId}", "POST /resources/{type}/{id}/invites/{inviteId}/accept",
	"POST /resources/{type}/{id}/invites/{inviteId}/decline", "GET /resources/{type}/{id}/collaborators",
	"GET /resources/{type}/{id}/collaborators/{userId}", "POST /resources/{type}/{id}/comments",
	"GET /resources/{type}/{id}/comments", "GET /comments/{commentId}", "PATCH /comments/{commentId}",
	"DELETE /comments/{commentId}", "GET /comments/{commentId}/replies", "GET /comments/{commentId}/reactions",
	"PUT /comments/{commentId}/reactions/{emoji}", "DELETE /comments/{commentId}/reactions/{emoji}",
	"GET /comments/{commentId}/reactions/{emoji}/users/{userId}", "GET /me/invites", "GET /me/collaborations",
	"GET /me/notification-preferences", "PUT /me/notification-preferences", "GET /me/profile", "PUT /me/profile",
	"GET /me/notifications", "POST /locations", "GET /locations", "GET /locations/by-code/{code}",
	"GET /locations/{locationId}", "PATCH /locations/{locationId}", "DELETE /locations/{locationId}",
	"PUT /locations/{locationId}/code", "POST /ingredients", "GET /ingredients", "GET /ingredients/{ingredientId}",
	"GET /me/cooking-preferences", "PUT /me/cooking-preferences",
	// Appended, so that the corpus's route numbers keep their meaning.
	"GET /users/{userId}/profile", "POST /recipes", "GET /recipes", "GET /recipes/{recipeId}", "PUT /recipes/{recipeId}",
	"DELETE /recipes/{recipeId}", "GET /cooking/recent", "GET /cooking/trending", "POST /me/cooking-history",
	"GET /me/cooking-history", "GET /me/cooking-history/{historyId}", "PATCH /me/cooking-history/{historyId}",
	"DELETE /me/cooking-history/{historyId}", "GET /me/cooking-favorites", "POST /me/cooking-sessions",
	"GET /me/cooking-sessions/{sessionId}", "PUT /me/cooking-sessions/{sessionId}/step",
	"POST /me/cooking-sessions/{sessionId}/complete", "POST /me/cooking-sessions/{sessionId}/abandon", "GET /me/suggestions",
	"GET /chat/rooms/{roomId}", "GET /chat/rooms/{roomId}/messages",
}

// FuzzWriter: any request to any operation — fuzzed ids in the path, query
// string, body and caller (alice, an admin, nobody, a garbage token) —
// answers below 500, and every error is a problem+json document. It runs
// the real handler on DynamoDB Local; the seeds are valid-looking
// requests, so that mutations reach past validation.
func FuzzWriter(f *testing.F) { fuzzWriter(f, false) }

// FuzzWriterAtLimits is FuzzWriter seeded with every field of every
// seed's request at each of DynamoDB's limits in turn (limitClasses): a
// sweep of thousands of requests, which make test leaves to make
// test-long.
func FuzzWriterAtLimits(f *testing.F) { fuzzWriter(f, true) }

// fuzzWriter is FuzzWriter, with the limit classes' seeds when atLimits
// (and only those).
func fuzzWriter(f *testing.F, atLimits bool) {
	c, table, _ := ddbtest.Table(f)
	st := store.New(c.DB, table)
	st.Bookkeeping = ddbtest.Bookkeeping(f, c, table)
	dev := &auth.DevTokens{Secret: []byte("fuzz secret, 32 bytes long......"), Issuer: "dynastream-test", Now: time.Now}
	var n atomic.Int64
	srv := &api.Server{Store: st, Auth: dev, DevTokens: dev, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		NewID: func() string { return fmt.Sprintf("id%06d", n.Add(1)) }}
	h := srv.Handler()
	alice, _ := dev.Mint("alice", nil, time.Now(), 24*time.Hour)
	admin, _ := dev.Mint("root", []string{"admins"}, time.Now(), 24*time.Hour)
	callers := []string{"Bearer " + alice, "Bearer " + admin, "", "Bearer x.y.z"}
	do := func(method, target, authz string, body []byte) *httptest.ResponseRecorder {
		req, err := http.NewRequestWithContext(context.Background(), method, "http://writer"+target, bytes.NewReader(body))
		if err != nil {
			return nil
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	// Something to reach: a room, a goal, a comment, a location.
	do("POST", "/rooms", callers[0], []byte(`{"name":"r","searchType":"rent"}`))                                                                                                      // id000001
	do("POST", "/resources", callers[0], []byte(`{"resourceType":"goal","title":"g"}`))                                                                                               // id000002
	do("POST", "/ingredients", callers[0], []byte(`{"name":"Rau muống"}`))                                                                                                            // id000003
	do("POST", "/recipes", callers[0], []byte(`{"title":"Rau muống xào","method":"stir-fry","servings":2,"steps":["Fry"],"ingredients":[{"ingredientId":"id000003","quantity":1}]}`)) // id000004
	do("POST", "/me/cooking-history", callers[0], []byte(`{"recipeId":"id000004","rating":5}`))                                                                                       // id000005
	do("POST", "/me/cooking-sessions", callers[0], []byte(`{"recipeId":"id000004"}`))                                                                                                 // id000006
	seeds := map[string]string{
		"POST /rooms":                                    `{"name":"Flat","searchType":"rent","context":{"combineMode":"strict"}}`,
		"PUT /rooms/{roomId}/criteria":                   `{"criteria":{"locations":["Zurich"],"priceMin":1,"priceMax":2},"weights":{"price":5}}`,
		"POST /rooms/{roomId}/members":                   `{"userId":"bob"}`,
		"POST /rooms/{roomId}/listings":                  `{"sourceBrand":"homegate","externalId":"HG-1","title":"t","location":"Zurich","price":1}`,
		"POST /resources":                                `{"resourceType":"goal","title":"Run"}`,
		"POST /resources/{type}/{id}/invites":            `{"inviteeId":"bob","message":"hi\nthere"}`,
		"POST /resources/{type}/{id}/comments":           `{"text":"hi @alice"}`,
		"PUT /me/profile":                                `{"name":"Alice","email":"a@example.com"}`,
		"PUT /me/notification-preferences":               `{"emailOnInvite":true}`,
		"POST /locations":                                `{"locationCode":"zurich-main","name":"Zurich","placeId":"p","formattedAddress":"a","lat":1,"lng":2}`,
		"POST /dev/tokens":                               `{"userId":"bob"}`,
		"POST /ingredients":                              `{"name":"Thịt gà","category":"meat"}`,
		"PUT /me/cooking-preferences":                    `{"favoriteMethods":["steam","grill"],"dietaryRestrictions":["halal"],"dislikedIngredients":["id000003"],"skillLevel":"advanced","servings":4}`,
		"POST /recipes":                                  `{"title":"Canh chua","description":"sour\nsoup","method":"simmer","servings":4,"prepMinutes":10,"cookMinutes":20,"steps":["Boil","Season"],"ingredients":[{"ingredientId":"id000003","quantity":0.5,"unit":"kg"}],"suitableFor":["halal"]}`,
		"PUT /recipes/{recipeId}":                        `{"title":"Rau muống","method":"stir-fry","servings":2,"steps":["Fry"],"ingredients":[{"ingredientId":"id000003","quantity":2}]}`,
		"POST /me/cooking-history":                       `{"recipeId":"id000004","cookDate":"2025-12-29T08:00:00+07:00","rating":4,"notes":"good","favorite":true}`,
		"PATCH /me/cooking-history/{historyId}":          `{"rating":null,"notes":"x","favorite":false}`,
		"POST /me/cooking-sessions":                      `{"recipeId":"id000004"}`,
		"PUT /me/cooking-sessions/{sessionId}/step":      `{"step":0}`,
		"POST /me/cooking-sessions/{sessionId}/complete": `{"rating":5}`,
	}
	for i, r := range fuzzRoutes {
		id := "id000001"
		switch {
		case strings.Contains(r, "{type}"):
			id = "id000002"
		case strings.Contains(r, "{recipeId}"):
			id = "id000004"
		case strings.Contains(r, "{historyId}"):
			id = "id000005"
		case strings.Contains(r, "{sessionId}"):
			id = "id000006"
		}
		if !atLimits {
			f.Add(uint8(i), uint8(0), id, "limit=2", []byte(seeds[r]), uint8(0), uint8(0))
		}
	}
	if !atLimits {
		f.Add(uint8(22), uint8(0), "id000001", "after=2026-01-01T00:00:00.000Z&cursor=eyJQSyI6IlJPT00jaWQwMDAwMDEiLCJTSyI6IkFDVElWSVRZIzIwMDAifQ", []byte(nil), uint8(0), uint8(0))
		f.Add(uint8(2), uint8(0), strings.Repeat("a", 3000), "", []byte(nil), uint8(0), uint8(0))
	}
	// The limit classes: each value of each seed's body, query and id in
	// turn made a number at DynamoDB's limits or a multi-byte text at
	// keys' limits (limitClasses), so that every field meets them.
	if atLimits {
		for i, r := range fuzzRoutes {
			body, query := seeds[r], "limit=2"
			if r == "GET /ingredients" {
				query = "name=x"
			}
			n := len(limitLeaves(body, query))
			for leaf := range n + 1 { // n: the id
				for class := range limitClassCount {
					f.Add(uint8(i), uint8(0), "id000001", query, []byte(body), uint8(leaf+1), uint8(class))
				}
			}
		}
		f.Add(uint8(slices.Index(fuzzRoutes, "GET /ingredients")), uint8(0), "id000001", "prefix=x", []byte(nil), uint8(1), uint8(limitClassCount-1))
	}
	f.Fuzz(func(t *testing.T, ri, ci uint8, id, query string, body []byte, leaf, class uint8) {
		if leaf > 0 {
			body, query, id = atLimit(body, query, id, int(leaf)-1, int(class))
		}
		method, path, _ := strings.Cut(fuzzRoutes[int(ri)%len(fuzzRoutes)], " ")
		for _, p := range []string{"{roomId}", "{userId}", "{listingId}", "{id}", "{inviteId}", "{commentId}", "{locationId}", "{code}", "{ingredientId}", "{recipeId}", "{historyId}", "{sessionId}"} {
			path = strings.ReplaceAll(path, p, url.PathEscape(id))
		}
		path = strings.ReplaceAll(path, "{type}", "goal")
		path = strings.ReplaceAll(path, "{emoji}", "%F0%9F%91%8D")
		target := path
		if query != "" {
			target += "?" + query
		}
		rec := do(method, target, callers[int(ci)%len(callers)], body)
		if rec == nil {
			return // not a request http.NewRequest makes
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s %s: %d with Content-Type %q", method, target, rec.Code, rec.Header().Get("Content-Type"))
		}
	})
}

// FuzzChatFrame: any frame a client sends over the chat's WebSocket API
// is answered with one JSON frame, sent, joined or an error with a reason,
// and never an internal error. It runs the real routes on DynamoDB Local.
func FuzzChatFrame(f *testing.F) {
	c, table, _ := ddbtest.Table(f)
	st := store.New(c.DB, table)
	dev := &auth.DevTokens{Secret: []byte("fuzz secret, 32 bytes long......"), Issuer: "dynastream-test", Now: time.Now}
	var n atomic.Int64
	srv := &api.Server{Store: st, Auth: dev, Tokens: dev, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		NewID: func() string { return fmt.Sprintf("id%06d", n.Add(1)) }}
	routes := srv.Chat()
	tok, _ := dev.Mint("alice", nil, time.Now(), 24*time.Hour)
	ctx := context.Background()
	if err := routes.Connect(ctx, gateway.ConnectRequest{ConnectionID: "fuzz", Token: tok, Query: url.Values{}}); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"action":"sendMessage","content":"hi"}`, `{"action":"joinRoom","roomId":"kitchen"}`, `{"action":"sendMessage","content":"\u0000"}`, `[]`, `{"action":null}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var out chat.Outbound
		if err := json.Unmarshal(routes.Message(ctx, "fuzz", frame), &out); err != nil {
			t.Fatalf("%q: the reply is not JSON: %v", frame, err)
		}
		switch out.Type {
		case chat.FrameSent, chat.FrameJoined:
		case chat.FrameError:
			if out.Reason == "" || strings.Contains(out.Reason, "internal") {
				t.Fatalf("%q: %+v", frame, out)
			}
		default:
			t.Fatalf("%q: frame type %q", frame, out.Type)
		}
	})
}

// Numbers at DynamoDB's limits (it stores 0 and magnitudes from 1e-130 to
// below 1e126) and just past them, and the extremes of float64.
var limitNumbers = []string{"1e-130", "-1e-130", "1e-131", "-9.9e-131", "9.9e125", "-9.99999999999999e125", "1e126", "-1e126",
	"1.7976931348623157e308", "5e-324", "-0", "0.1e-129"}

// Text at keys' limits (DynamoDB: 2,048 bytes of partition key, 1,024 of
// sort key), in characters of every width and in what normalizing
// expands: 114 Hangul syllables (each three 3-byte letters once
// decomposed), 200 of them, 4-byte characters, U+FDFA (18 letters once
// compatibility-decomposed), fullwidth letters, combining marks alone, and
// 2-byte letters past 1,024 bytes.
var limitStrings = []string{strings.Repeat("한", 114), strings.Repeat("한", 200), strings.Repeat("𝄞", 200), strings.Repeat("\uFDFA", 60),
	strings.Repeat("Ｓ", 200), strings.Repeat("\u0301", 200), strings.Repeat("é", 513), "a" + strings.Repeat("\u0301", 199)}

var limitClassCount = max(len(limitNumbers), len(limitStrings))

// limitLeaves lists the values a limit class can replace: the body's
// numbers and strings (depth first, members in name order), then the
// query's values.
func limitLeaves(body, query string) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case json.Number, string:
			out = append(out, fmt.Sprint(x))
		}
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) == nil {
		walk(doc)
	}
	q, _ := url.ParseQuery(query)
	for _, k := range slices.Sorted(maps.Keys(q)) {
		out = append(out, q[k]...)
	}
	return out
}

// atLimit replaces the leaf-th value (limitLeaves; one past them: the id)
// with limit class class: a number becomes limitNumbers[class], a string
// limitStrings[class] (modulo their lengths).
func atLimit(body []byte, query, id string, leaf, class int) ([]byte, string, string) {
	str := limitStrings[class%len(limitStrings)]
	num := json.Number(limitNumbers[class%len(limitNumbers)])
	n := 0
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				x[k] = walk(x[k])
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case json.Number:
			if n++; n-1 == leaf {
				return num
			}
		case string:
			if n++; n-1 == leaf {
				return str
			}
		}
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) == nil {
		if b, err := json.Marshal(walk(doc)); err == nil {
			body = b
		}
	}
	q, err := url.ParseQuery(query)
	if err == nil {
		for _, k := range slices.Sorted(maps.Keys(q)) {
			for i := range q[k] {
				if n++; n-1 == leaf {
					if _, err := strconv.ParseFloat(q[k][i], 64); err == nil {
						q[k][i] = string(num)
					} else {
						q[k][i] = str
					}
				}
			}
		}
		query = q.Encode()
	}
	if n == leaf {
		id = str
	}
	return body, query, id
}
