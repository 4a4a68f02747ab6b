package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

func (e *env) createRoom(token string, body any) room.Room {
	e.t.Helper()
	var rm room.Room
	e.ok(http.StatusCreated, "POST", "/rooms", token, body, &rm)
	return rm
}

func TestHealthAndTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	var h map[string]string
	e.ok(http.StatusOK, "GET", "/healthz", "", nil, &h)
	if h["status"] != "ok" {
		t.Errorf("healthz = %v", h)
	}

	var tr struct {
		Token     string `json:"token"`
		UserID    string `json:"userId"`
		ExpiresAt string `json:"expiresAt"`
	}
	e.ok(http.StatusCreated, "POST", "/dev/tokens", "", map[string]any{"userId": "alice", "groups": []string{"beta"}}, &tr)
	if want := store.Timestamp(e.clock.Peek().Add(12 * time.Hour)); tr.ExpiresAt != want || tr.UserID != "alice" {
		t.Errorf("token response %+v, want expiresAt %s", tr, want)
	}
	var rooms list[room.Member]
	e.ok(http.StatusOK, "GET", "/me/rooms", tr.Token, nil, &rooms)
	if rooms.Items == nil || len(rooms.Items) != 0 || rooms.NextCursor != "" {
		t.Errorf("a new user's rooms = %+v, want an empty list", rooms)
	}

	e.problem(e.do("POST", "/dev/tokens", "", `{"userId":"a#b"}`), 400, "userId")
	e.problem(e.do("POST", "/dev/tokens", "", `{}`), 400, "userId")
	e.problem(e.do("POST", "/dev/tokens", "", `{"userId":"bob","admin":true}`), 400, "admin")
	e.problem(e.do("POST", "/dev/tokens", "", ``), 400, "body")
	e.problem(e.do("GET", "/dev/tokens", "", nil), 405)
}

// TestRoomsWalkthrough drives every writer route through HTTP.
func TestRoomsWalkthrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	alice, bob, carol := e.token("alice"), e.token("bob"), e.token("carol")

	// Create (combineMode defaults to mixed) and read back.
	rm := e.createRoom(alice, map[string]any{"name": "  Flat in Zurich ", "searchType": "rent", "context": map[string]any{"description": "family of 4", "familySize": 4}})
	want := room.Room{RoomID: "room01", Name: "Flat in Zurich", CreatedByUserID: "alice", CreatedAt: rm.CreatedAt, SearchType: "rent",
		Context: room.Context{Description: "family of 4", FamilySize: ip(4), CombineMode: room.ModeMixed}}
	if diff := cmp.Diff(want, rm); diff != "" {
		t.Errorf("created room (-want +got):\n%s", diff)
	}
	if _, err := store.ParseTimestamp(rm.CreatedAt); err != nil {
		t.Errorf("createdAt %q: %v", rm.CreatedAt, err)
	}
	var got room.Room
	e.ok(http.StatusOK, "GET", "/rooms/room01", alice, nil, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET room (-want +got):\n%s", diff)
	}
	strict := e.createRoom(alice, map[string]any{"name": "Strict", "searchType": "buy", "context": map[string]any{"combineMode": "strict"}})
	if strict.RoomID != "room02" || strict.Context.CombineMode != room.ModeStrict {
		t.Errorf("strict room = %+v", strict)
	}
	noCtx := e.createRoom(alice, map[string]any{"name": "No context", "searchType": "buy"})
	if noCtx.Context.CombineMode != room.ModeMixed {
		t.Errorf("room without context: combineMode %q, want mixed", noCtx.Context.CombineMode)
	}
	r := e.do("POST", "/rooms", alice, map[string]any{"name": "Loc", "searchType": "buy"})
	if loc := r.header.Get("Location"); r.status != 201 || loc != "/rooms/room04" {
		t.Errorf("POST /rooms: status %d, Location %q", r.status, loc)
	}

	// GET /me/rooms, one per page.
	var ids []string
	cursor, pages := "", 0
	for {
		pages++
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		var page list[room.Member]
		e.ok(http.StatusOK, "GET", "/me/rooms?limit=1&cursor="+url.QueryEscape(cursor), alice, nil, &page)
		if len(page.Items) > 1 {
			t.Fatalf("page of %d items with limit=1", len(page.Items))
		}
		for _, m := range page.Items {
			if m.UserID != "alice" || m.Role != room.RoleOwner {
				t.Errorf("my room %+v", m)
			}
			ids = append(ids, m.RoomID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if diff := cmp.Diff([]string{"room01", "room02", "room03", "room04"}, ids); diff != "" {
		t.Errorf("my rooms across pages (-want +got):\n%s", diff)
	}
	var all list[room.Member]
	e.ok(http.StatusOK, "GET", "/me/rooms", alice, nil, &all)
	if len(all.Items) != 4 || all.NextCursor != "" {
		t.Errorf("default page: %d items, cursor %q", len(all.Items), all.NextCursor)
	}
	var first list[room.Member]
	e.ok(http.StatusOK, "GET", "/me/rooms?limit=1", alice, nil, &first)
	e.problem(e.do("GET", "/me/rooms?cursor=not-a-cursor", alice, nil), 400, "cursor")
	e.problem(e.do("GET", "/me/rooms?cursor="+url.QueryEscape(first.NextCursor), bob, nil), 400, "cursor") // alice's cursor, bob's list
	e.problem(e.do("GET", "/rooms/room01/members?cursor="+url.QueryEscape(first.NextCursor), alice, nil), 400, "cursor")
	for _, l := range []string{"0", "101", "abc", "-1", "1.5", ""} {
		if l == "" {
			continue
		}
		e.problem(e.do("GET", "/me/rooms?limit="+l, alice, nil), 400, "limit")
		e.problem(e.do("GET", "/rooms/room01/members?limit="+l, alice, nil), 400, "limit")
		e.problem(e.do("GET", "/rooms/room01/criteria?limit="+l, alice, nil), 400, "limit")
	}
	e.ok(http.StatusOK, "GET", "/me/rooms?limit=100", alice, nil, nil)

	// Members: only the owner adds.
	var m room.Member
	e.ok(http.StatusCreated, "POST", "/rooms/room01/members", alice, map[string]string{"userId": "bob"}, &m)
	if m.RoomID != "room01" || m.UserID != "bob" || m.Role != room.RoleMember || m.JoinedAt == "" {
		t.Errorf("added member %+v", m)
	}
	e.problem(e.do("POST", "/rooms/room01/members", bob, map[string]string{"userId": "carol"}), 403)
	e.problem(e.do("POST", "/rooms/room01/members", carol, map[string]string{"userId": "carol"}), 404)
	// A member already (a retry): the same 201 with the membership as it is.
	var again room.Member
	e.ok(http.StatusCreated, "POST", "/rooms/room01/members", alice, map[string]string{"userId": "bob"}, &again)
	if again != m {
		t.Errorf("adding bob again: %+v, want %+v", again, m)
	}
	e.ok(http.StatusCreated, "POST", "/rooms/room01/members", alice, map[string]string{"userId": "alice"}, &again)
	if again.Role != room.RoleOwner {
		t.Errorf("adding the owner: %+v", again)
	}
	e.problem(e.do("POST", "/rooms/room01/members", alice, map[string]string{"userId": "b#ob"}), 400, "userId")
	e.problem(e.do("POST", "/rooms/room01/members", alice, map[string]string{"userId": ""}), 400, "userId")
	e.problem(e.do("POST", "/rooms/nope/members", alice, map[string]string{"userId": "carol"}), 404)
	if got := e.partitionSKs("USER#carol"); len(got) != 0 {
		t.Errorf("rejected adds wrote carol's memberships: %v", got)
	}

	var members list[room.Member]
	e.ok(http.StatusOK, "GET", "/rooms/room01/members", bob, nil, &members)
	var who []string
	for _, m := range members.Items {
		who = append(who, m.UserID+":"+m.Role)
	}
	if diff := cmp.Diff([]string{"alice:owner", "bob:member"}, who); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	var page1, page2 list[room.Member]
	e.ok(http.StatusOK, "GET", "/rooms/room01/members?limit=1", bob, nil, &page1)
	e.ok(http.StatusOK, "GET", "/rooms/room01/members?limit=1&cursor="+url.QueryEscape(page1.NextCursor), bob, nil, &page2)
	if len(page1.Items) != 1 || len(page2.Items) != 1 || page1.Items[0].UserID != "alice" || page2.Items[0].UserID != "bob" {
		t.Errorf("member pages %+v / %+v", page1, page2)
	}
	var bobRooms list[room.Member]
	e.ok(http.StatusOK, "GET", "/me/rooms", bob, nil, &bobRooms)
	if len(bobRooms.Items) != 1 || bobRooms.Items[0].RoomID != "room01" || bobRooms.Items[0].Role != room.RoleMember {
		t.Errorf("bob's rooms %+v", bobRooms)
	}
	e.ok(http.StatusOK, "GET", "/rooms/room01", bob, nil, &got)

	// Criteria versions.
	var a1, a2, b1 room.CriteriaVersion
	e.ok(http.StatusCreated, "PUT", "/rooms/room01/criteria", alice, map[string]any{
		"criteria": map[string]any{"locations": []string{"Zurich", "Basel"}, "priceMin": 1500, "priceMax": 3000, "roomsMin": 3, "features": []string{"balcony"}},
		"weights":  map[string]any{"price": 5},
	}, &a1)
	wantA1 := room.CriteriaVersion{RoomID: "room01", UserID: "alice", Timestamp: a1.Timestamp, Source: room.SourceManual,
		Criteria: room.Criteria{Locations: []string{"Zurich", "Basel"}, PriceMin: fp(1500), PriceMax: fp(3000), RoomsMin: fp(3), Features: []string{"balcony"}},
		Weights:  room.Weights{Price: ip(5)}}
	if diff := cmp.Diff(wantA1, a1); diff != "" {
		t.Errorf("first version (-want +got):\n%s", diff)
	}
	e.ok(http.StatusCreated, "PUT", "/rooms/room01/criteria", bob, map[string]any{
		"criteria": map[string]any{"locations": []string{"Zurich"}, "priceMin": 2000, "priceMax": 3500},
		"source":   "ai_proposed",
	}, &b1)
	e.ok(http.StatusCreated, "PUT", "/rooms/room01/criteria", alice, map[string]any{
		"criteria": map[string]any{"locations": []string{"Zurich"}, "areaMin": 80},
		"weights":  map[string]any{"locations": 0, "area": 4},
	}, &a2)
	if !(a1.Timestamp < b1.Timestamp && b1.Timestamp < a2.Timestamp) {
		t.Errorf("timestamps not increasing: %s %s %s", a1.Timestamp, b1.Timestamp, a2.Timestamp)
	}
	if b1.Source != room.SourceAIProposed || a2.Weights.Locations == nil || *a2.Weights.Locations != 0 {
		t.Errorf("versions %+v / %+v", b1, a2)
	}

	var aliceVersions list[room.CriteriaVersion]
	e.ok(http.StatusOK, "GET", "/rooms/room01/criteria?userId=alice", bob, nil, &aliceVersions)
	if diff := cmp.Diff([]room.CriteriaVersion{a2, a1}, aliceVersions.Items); diff != "" {
		t.Errorf("alice's versions, newest first (-want +got):\n%s", diff)
	}
	var allVersions list[room.CriteriaVersion]
	e.ok(http.StatusOK, "GET", "/rooms/room01/criteria", alice, nil, &allVersions)
	// Newest first within each user (the key orders by user, then time).
	if diff := cmp.Diff([]room.CriteriaVersion{b1, a2, a1}, allVersions.Items); diff != "" {
		t.Errorf("all versions (-want +got):\n%s", diff)
	}
	var cp1, cp2 list[room.CriteriaVersion]
	e.ok(http.StatusOK, "GET", "/rooms/room01/criteria?userId=alice&limit=1", alice, nil, &cp1)
	e.ok(http.StatusOK, "GET", "/rooms/room01/criteria?userId=alice&limit=1&cursor="+url.QueryEscape(cp1.NextCursor), alice, nil, &cp2)
	if len(cp1.Items) != 1 || len(cp2.Items) != 1 || cp1.Items[0].Timestamp != a2.Timestamp || cp2.Items[0].Timestamp != a1.Timestamp {
		t.Errorf("criteria pages %+v / %+v", cp1, cp2)
	}
	e.problem(e.do("GET", "/rooms/room01/criteria?userId=a%23b", alice, nil), 400, "userId")

	var latest list[room.CriteriaVersion]
	e.ok(http.StatusOK, "GET", "/rooms/room01/criteria/latest", bob, nil, &latest)
	if diff := cmp.Diff([]room.CriteriaVersion{a2, b1}, latest.Items); diff != "" {
		t.Errorf("latest per member (-want +got):\n%s", diff)
	}
	var one room.CriteriaVersion
	e.ok(http.StatusOK, "GET", "/rooms/room01/criteria/latest?userId=alice", bob, nil, &one)
	if diff := cmp.Diff(a2, one); diff != "" {
		t.Errorf("alice's latest (-want +got):\n%s", diff)
	}
	e.problem(e.do("GET", "/rooms/room01/criteria/latest?userId=carol", bob, nil), 404)
	e.problem(e.do("GET", "/rooms/room01/criteria/latest?userId=a%23b", bob, nil), 400, "userId")
	var none list[room.CriteriaVersion]
	e.ok(http.StatusOK, "GET", "/rooms/room02/criteria/latest", alice, nil, &none)
	if none.Items == nil || len(none.Items) != 0 {
		t.Errorf("latest in a room without criteria = %+v, want []", none)
	}

	// Derived items: none before a projector ran.
	e.problem(e.do("GET", "/rooms/room01/combined-criteria", alice, nil), 404)
	e.problem(e.do("GET", "/rooms/room01/compatibility", bob, nil), 404)

	// The table holds exactly what was written.
	wantKeys := []string{
		"ROOM#room01 CRITERIA#alice#" + a1.Timestamp, "ROOM#room01 CRITERIA#alice#" + a2.Timestamp, "ROOM#room01 CRITERIA#bob#" + b1.Timestamp,
		"ROOM#room01 MEMBER#alice", "ROOM#room01 MEMBER#bob", "ROOM#room01 ROOM",
		"ROOM#room02 MEMBER#alice", "ROOM#room02 ROOM", "ROOM#room03 MEMBER#alice", "ROOM#room03 ROOM", "ROOM#room04 MEMBER#alice", "ROOM#room04 ROOM",
		"USER#alice ROOM#room01", "USER#alice ROOM#room02", "USER#alice ROOM#room03", "USER#alice ROOM#room04", "USER#bob ROOM#room01",
	}
	sort.Strings(wantKeys)
	if diff := cmp.Diff(wantKeys, e.tableKeys()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	alice := e.token("alice")
	e.createRoom(alice, map[string]any{"name": "n", "searchType": "buy"})

	routes := []struct{ method, path, body string }{
		{"POST", "/rooms", `{"name":"n","searchType":"buy"}`},
		{"GET", "/rooms/room01", ""},
		{"GET", "/me/rooms", ""},
		{"POST", "/rooms/room01/members", `{"userId":"bob"}`},
		{"GET", "/rooms/room01/members", ""},
		{"PUT", "/rooms/room01/criteria", `{"criteria":{}}`},
		{"GET", "/rooms/room01/criteria", ""},
		{"GET", "/rooms/room01/criteria/latest", ""},
		{"GET", "/rooms/room01/combined-criteria", ""},
		{"GET", "/rooms/room01/compatibility", ""},
	}
	other := auth.DevTokens{Secret: []byte("some other secret................"), Issuer: "dynastream-test"}
	forged, err := other.Mint("alice", nil, e.clock.Peek(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes {
		for name, header := range map[string]string{"no token": "", "garbage": "Bearer garbage", "forged": "Bearer " + forged, "basic": "Basic YWxpY2U6"} {
			req, _ := http.NewRequest(rt.method, e.url+rt.path, strings.NewReader(rt.body))
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			t.Run(rt.method+" "+rt.path+" "+name, func(t *testing.T) {
				e := e.withT(t)
				e.problem(response{status: res.StatusCode, header: res.Header, body: b}, 401)
				if res.Header.Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
				}
			})
		}
	}

	// Expired: 12 h and a bit later the same token is refused.
	e.ok(http.StatusOK, "GET", "/me/rooms", alice, nil, nil)
	e.clock.Advance(12*time.Hour + time.Second)
	e.problem(e.do("GET", "/me/rooms", alice, nil), 401)
	e.problem(e.do("GET", "/rooms/room01", alice, nil), 401)
	e.ok(http.StatusOK, "GET", "/me/rooms", e.token("alice"), nil, nil)

	// Nothing was written by the refused requests.
	if diff := cmp.Diff([]string{"ROOM#room01 MEMBER#alice", "ROOM#room01 ROOM", "USER#alice ROOM#room01"}, e.tableKeys()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestNonMemberSeesNotFound: a non-member gets the very 404 a missing room
// gets, so room ids cannot be probed.
func TestNonMemberSeesNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	alice, carol := e.token("alice"), e.token("carol")
	rm := e.createRoom(alice, map[string]any{"name": "n", "searchType": "buy"})
	e.ok(http.StatusCreated, "PUT", "/rooms/"+rm.RoomID+"/criteria", alice, `{"criteria":{"priceMax":10}}`, nil)
	for _, rt := range []struct{ method, suffix, body string }{
		{"GET", "", ""},
		{"GET", "/members", ""},
		{"GET", "/criteria", ""},
		{"GET", "/criteria?userId=alice", ""},
		{"GET", "/criteria/latest", ""},
		{"GET", "/criteria/latest?userId=alice", ""},
		{"GET", "/combined-criteria", ""},
		{"GET", "/compatibility", ""},
		{"POST", "/members", `{"userId":"carol"}`},
		{"PUT", "/criteria", `{"criteria":{}}`},
		{"PUT", "/criteria", `{"nonsense":`}, // membership is checked before the body
	} {
		t.Run(rt.method+rt.suffix, func(t *testing.T) {
			pn, pm := e.withT(t).likeMissingRoom(rt.method, rt.suffix, rt.body, rm.RoomID, carol, "room99", alice)
			pn.Detail = strings.ReplaceAll(pn.Detail, rm.RoomID, "{id}")
			pm.Detail = strings.ReplaceAll(pm.Detail, "room99", "{id}")
			if diff := cmp.Diff(pm, pn); diff != "" {
				t.Errorf("non-member vs missing room (-missing +non-member):\n%s", diff)
			}
		})
	}
	if got := e.partitionSKs("ROOM#" + rm.RoomID); len(got) != 3 {
		t.Errorf("room partition after refused requests: %v", got)
	}
	if got := e.partitionSKs("USER#carol"); len(got) != 0 {
		t.Errorf("carol's partition: %v", got)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	alice := e.token("alice")
	rm := e.createRoom(alice, map[string]any{"name": "n", "searchType": "buy"})
	crit := "/rooms/" + rm.RoomID + "/criteria"
	locs := make([]string, 51)
	for i := range locs {
		locs[i] = fmt.Sprintf("L%d", i)
	}
	locsJSON, _ := json.Marshal(locs)
	big := `{"name":"` + strings.Repeat("a", 65<<10) + `","searchType":"buy"}`

	tests := []struct {
		name, method, path, body string
		fields                   []string
	}{
		{"unknown field", "POST", "/rooms", `{"name":"n","searchType":"buy","colour":"red"}`, []string{"colour"}},
		{"unknown nested field", "POST", "/rooms", `{"name":"n","searchType":"buy","context":{"combineMode":"all","speed":1}}`, []string{"context.speed"}},
		{"unknown criteria field", "PUT", crit, `{"criteria":{"priceMin":1,"garden":true},"weights":{"garden":3}}`, []string{"criteria.garden", "weights.garden"}},
		{"name not a string", "POST", "/rooms", `{"name":5,"searchType":"buy"}`, []string{"name"}},
		{"priceMin not a number", "PUT", crit, `{"criteria":{"priceMin":"x"}}`, []string{"criteria.priceMin"}},
		{"locations not strings", "PUT", crit, `{"criteria":{"locations":[1]}}`, []string{"criteria.locations"}},
		{"weight not an integer", "PUT", crit, `{"criteria":{},"weights":{"area":2.5}}`, []string{"weights.area"}},
		{"array body", "POST", "/rooms", `[]`, []string{"body"}},
		{"malformed JSON", "POST", "/rooms", `{"name":"n",`, []string{"body"}},
		{"syntax error", "POST", "/rooms", `{"name" "n"}`, []string{"body"}},
		{"empty body", "POST", "/rooms", ``, []string{"body"}},
		{"empty criteria body", "PUT", crit, `  `, []string{"body"}},
		{"trailing object", "POST", "/rooms", `{"name":"n","searchType":"buy"} {}`, []string{"body"}},
		{"trailing brace", "POST", "/rooms", `{"name":"n","searchType":"buy"}}`, []string{"body"}},
		{"trailing garbage", "PUT", crit, `{"criteria":{}}x`, []string{"body"}},
		{"oversize body", "POST", "/rooms", big, []string{"body"}},
		{"name missing", "POST", "/rooms", `{"searchType":"buy"}`, []string{"name"}},
		{"name blank", "POST", "/rooms", `{"name":"   ","searchType":"buy"}`, []string{"name"}},
		{"name too long", "POST", "/rooms", `{"name":"` + strings.Repeat("é", 201) + `","searchType":"buy"}`, []string{"name"}},
		{"description too long", "POST", "/rooms", `{"name":"n","searchType":"buy","context":{"description":"` + strings.Repeat("d", 2001) + `"}}`, []string{"context.description"}},
		{"familySize 0", "POST", "/rooms", `{"name":"n","searchType":"buy","context":{"familySize":0}}`, []string{"context.familySize"}},
		{"familySize 51", "POST", "/rooms", `{"name":"n","searchType":"buy","context":{"familySize":51}}`, []string{"context.familySize"}},
		{"unknown combineMode", "POST", "/rooms", `{"name":"n","searchType":"buy","context":{"combineMode":"fast"}}`, []string{"context.combineMode"}},
		{"searchType sell", "POST", "/rooms", `{"name":"n","searchType":"sell"}`, []string{"searchType"}},
		{"name and searchType", "POST", "/rooms", `{"name":"","searchType":"sell"}`, []string{"name", "searchType"}},
		{"criteria missing", "PUT", crit, `{"weights":{"price":1}}`, []string{"criteria"}},
		{"negative price", "PUT", crit, `{"criteria":{"priceMin":-1}}`, []string{"criteria.priceMin"}},
		{"negative areaMin", "PUT", crit, `{"criteria":{"areaMin":-0.5}}`, []string{"criteria.areaMin"}},
		{"priceMin > priceMax", "PUT", crit, `{"criteria":{"priceMin":3000,"priceMax":2000}}`, []string{"criteria.priceMin"}},
		{"roomsMin > roomsMax", "PUT", crit, `{"criteria":{"roomsMin":5,"roomsMax":2}}`, []string{"criteria.roomsMin"}},
		{"weight 6", "PUT", crit, `{"criteria":{},"weights":{"area":6}}`, []string{"weights.area"}},
		{"weight -1", "PUT", crit, `{"criteria":{},"weights":{"price":-1}}`, []string{"weights.price"}},
		{"source robot", "PUT", crit, `{"criteria":{},"source":"robot"}`, []string{"source"}},
		{"51 locations", "PUT", crit, `{"criteria":{"locations":` + string(locsJSON) + `}}`, []string{"criteria.locations"}},
		{"empty location", "PUT", crit, `{"criteria":{"locations":[""]}}`, []string{"criteria.locations[0]"}},
		{"blank feature", "PUT", crit, `{"criteria":{"features":["lift"," "]}}`, []string{"criteria.features[1]"}},
		{"location too long", "PUT", crit, `{"criteria":{"locations":["` + strings.Repeat("x", 101) + `"]}}`, []string{"criteria.locations[0]"}},
		{"several", "PUT", crit, `{"criteria":{"priceMin":-1,"locations":[""]},"weights":{"rooms":9},"source":"x"}`, []string{"criteria.priceMin", "criteria.locations[0]", "weights.rooms", "source"}},
		{"member body", "POST", "/rooms/" + rm.RoomID + "/members", `{"userId":"bob","role":"owner"}`, []string{"role"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.withT(t)
			p := e.problem(e.do(tt.method, tt.path, alice, tt.body), 400, tt.fields...)
			if p.Detail != "invalid request" {
				t.Errorf("detail %q", p.Detail)
			}
		})
	}

	// Nothing was written by the rejected requests, and no id was taken.
	if diff := cmp.Diff([]string{"MEMBER#alice", "ROOM"}, e.partitionSKs("ROOM#"+rm.RoomID)); diff != "" {
		t.Errorf("room partition (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ROOM#room01"}, e.partitionSKs("USER#alice")); diff != "" {
		t.Errorf("alice's partition (-want +got):\n%s", diff)
	}
	if got := e.partitionSKs("USER#bob"); len(got) != 0 {
		t.Errorf("bob's partition: %v", got)
	}
	if got := e.tableKeys(); len(got) != 3 {
		t.Errorf("table holds %v, want the one room's 3 items", got)
	}
	next := e.createRoom(alice, map[string]any{"name": "n2", "searchType": "rent"})
	if next.RoomID != "room02" {
		t.Errorf("next room id %q: a rejected request took an id", next.RoomID)
	}

	// Limits are inclusive.
	e.createRoom(alice, map[string]any{"name": strings.Repeat("é", 200), "searchType": "buy", "context": map[string]any{"description": strings.Repeat("d", 2000), "familySize": 50}})
	e.ok(http.StatusCreated, "PUT", crit, alice, `{"criteria":{"locations":`+string(locsJSON[:strings.LastIndex(string(locsJSON), ",")])+`],"priceMin":0,"priceMax":0},"weights":{"area":5,"price":0}}`, nil)
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	alice := e.token("alice")
	for _, rt := range []struct{ method, path string }{
		{"GET", "/nope"},
		{"GET", "/"},
		{"GET", "/rooms/room01/chat"},
	} {
		p := e.problem(e.do(rt.method, rt.path, alice, nil), 404)
		if !strings.Contains(p.Detail, rt.path) {
			t.Errorf("%s %s: detail %q does not name the route", rt.method, rt.path, p.Detail)
		}
	}
	// A known path with a method it lacks is a 405 naming the allowed ones.
	for _, rt := range []struct{ method, path, allow string }{
		{"POST", "/rooms/room01", "GET, PATCH, DELETE"},
		{"POST", "/me/rooms", "GET"},
		{"GET", "/rooms", "POST"},
		{"DELETE", "/rooms/room01/criteria", "GET, PUT"},
	} {
		resp := e.do(rt.method, rt.path, alice, nil)
		if got := resp.header.Get("Allow"); got != rt.allow {
			t.Errorf("%s %s: Allow %q, want %q", rt.method, rt.path, got, rt.allow)
		}
		e.problem(resp, 405)
	}
}

// TestInternalErrorHidden: a failure underneath is a 500 problem that says
// nothing about the internals.
func TestInternalErrorHidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("room%02d"))
	alice := e.token("alice")
	if _, err := e.db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(e.table)}); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/me/rooms", alice, nil)
	p := e.problem(r, 500)
	if p.Detail != "internal error" {
		t.Errorf("detail %q", p.Detail)
	}
	for _, leak := range []string{e.table, "ResourceNotFound", "store:", "dynamodb", "DynamoDB"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("500 body leaks %q: %s", leak, r.body)
		}
	}
}

// TestDynamoDBUnavailableIs503: when DynamoDB keeps throttling or failing
// past the retries, the writer answers 503 with Retry-After — try again —
// not 500, and writes nothing.
func TestDynamoDBUnavailableIs503(t *testing.T) {
	t.Parallel()
	_, table, _ := ddbtest.Table(t)
	faulty := ddbtest.ClientsWith(t, ddb.Config{MaxAttempts: 2,
		Faults: &ddb.Faults{Rate: 1, Seed: 5, Kinds: []int{ddb.FaultThrottling, ddb.FaultThroughput, ddb.FaultInternal}}})
	dev := &auth.DevTokens{Secret: []byte("test secret, 32 bytes long......"), Issuer: "dynastream-test", Now: time.Now}
	srv := &api.Server{Store: store.New(faulty.DB, table), Auth: dev, DevTokens: dev, Now: time.Now, NewID: func() string { return "r1" }, Logger: slog.New(slog.DiscardHandler)}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, err := dev.Mint("alice", nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	res, body := api.RoundTrip(t, "POST", ts.URL+"/rooms", tok, api.RequestBody(t, map[string]any{"name": "Flat", "searchType": "rent"}))
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %v %s, want 503 problem+json with Retry-After", res.StatusCode, res.Header, body)
	}
	if !strings.Contains(string(body), "try again") || strings.Contains(string(body), table) {
		t.Errorf("body %s", body)
	}
	out, err := ddbtest.Clients(t).DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(out.Items) != 0 {
		t.Errorf("%v: %d items written", err, len(out.Items))
	}
}
