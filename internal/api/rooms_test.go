package api_test

// Tests of the search-room seed (seed 000, docs/design.md): every access pattern through
// the writer's HTTP API, the exact keys of every item, the room deletion
// cascade under replays, activity expiry and listing input validation. All
// against DynamoDB Local; derived items come from the real projector, fed
// with the table's captured stream.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// s0World is the state the seed scenario leaves behind.
type s0World struct {
	alice, bob, carol, dave, mallory string // tokens
	roomID, otherID                  string
	created                          room.Room
	l1, l2, l3, l4, l5               room.Listing // in roomID; l3 has no external id
	otherDup, otherOnly              room.Listing // in otherID
	a1, a2, b1, c1                   room.CriteriaVersion
	patched                          room.Room
	start, leftBy                    time.Time // real time around the member removals
}

// s0Scenario drives the writes of the seed through HTTP, checking each
// command's answer and the core reads on the way, and ends by running the
// projector over the stream. The room is "zurich"; "zurich-2" is another
// room of alice's whose id has "zurich" as a prefix.
func s0Scenario(t *testing.T, e *env) *s0World {
	w := &s0World{roomID: "zurich", otherID: "zurich-2", start: time.Now().UTC()}
	w.alice, w.bob, w.carol, w.dave, w.mallory = e.token("alice"), e.token("bob"), e.token("carol"), e.token("dave"), e.token("mallory")
	R := "/rooms/" + w.roomID

	// Room, members.
	e.ids.queue(w.roomID)
	e.ok(http.StatusCreated, "POST", "/rooms", w.alice, map[string]any{"name": "Flat in Zurich", "searchType": "rent", "context": map[string]any{"description": "two of us", "familySize": 2}}, &w.created)
	if w.created.RoomID != w.roomID || w.created.Context.CombineMode != room.ModeMixed {
		t.Fatalf("created room %+v", w.created)
	}
	for _, u := range []string{"bob", "carol", "dave"} {
		var m room.Member
		e.ok(http.StatusCreated, "POST", R+"/members", w.alice, map[string]string{"userId": u}, &m)
		if m.UserID != u || m.Role != room.RoleMember || m.RoomID != w.roomID {
			t.Errorf("added member %+v", m)
		}
	}
	e.ids.queue(w.otherID)
	e.ok(http.StatusCreated, "POST", "/rooms", w.alice, map[string]any{"name": "Other", "searchType": "buy"}, nil)
	e.ok(http.StatusCreated, "POST", "/rooms/"+w.otherID+"/members", w.alice, map[string]string{"userId": "bob"}, nil)

	// Get room by id: members 200, a non-member the 404 of a missing room.
	var got room.Room
	e.ok(http.StatusOK, "GET", R, w.bob, nil, &got)
	if diff := cmp.Diff(w.created, got); diff != "" {
		t.Errorf("GET room (-created +got):\n%s", diff)
	}
	e.problem(e.do("GET", R, w.mallory, nil), 404)

	// Room members (paginated).
	members, pages := listAll[room.Member](e, R+"/members", w.carol, 3)
	var who []string
	for _, m := range members {
		who = append(who, m.UserID+":"+m.Role)
	}
	if diff := cmp.Diff([]string{"alice:owner", "bob:member", "carol:member", "dave:member"}, who); diff != "" || pages != 2 {
		t.Errorf("members in %d pages (-want +got):\n%s", pages, diff)
	}

	// A user's rooms.
	bobRooms, _ := listAll[room.Member](e, "/me/rooms", w.bob, 1)
	var br []string
	for _, m := range bobRooms {
		br = append(br, m.RoomID+":"+m.Role)
	}
	if diff := cmp.Diff([]string{"zurich:member", "zurich-2:member"}, br); diff != "" {
		t.Errorf("bob's rooms (-want +got):\n%s", diff)
	}

	// Check membership.
	var m room.Member
	e.ok(http.StatusOK, "GET", R+"/members/bob", w.dave, nil, &m)
	if m.UserID != "bob" || m.RoomID != w.roomID || m.Role != room.RoleMember || m.JoinedAt == "" {
		t.Errorf("membership of bob: %+v", m)
	}
	e.ok(http.StatusOK, "GET", R+"/members/alice", w.bob, nil, &m)
	if m.Role != room.RoleOwner {
		t.Errorf("membership of alice: %+v", m)
	}
	e.problem(e.do("GET", R+"/members/mallory", w.alice, nil), 404)
	e.problem(e.do("GET", R+"/members/alice", w.mallory, nil), 404)

	// Listings.
	add := func(token string, body map[string]any) room.Listing {
		t.Helper()
		var l room.Listing
		r := e.do("POST", R+"/listings", token, body)
		if r.status != http.StatusCreated {
			t.Fatalf("add listing %v: %d %s", body, r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
		if loc := r.header.Get("Location"); loc != R+"/listings/"+l.ListingID {
			t.Errorf("Location %q", loc)
		}
		return l
	}
	w.l1 = add(w.alice, map[string]any{"sourceBrand": "homegate", "externalId": "HG-1001", "title": " 3.5 rooms near the lake ", "location": "Zurich", "url": "https://www.homegate.ch/rent/1001", "price": 2800, "rooms": 3.5, "area": 85})
	want := room.Listing{ListingID: w.l1.ListingID, RoomID: w.roomID, SourceBrand: "homegate", ExternalID: "HG-1001", Title: "3.5 rooms near the lake",
		Location: "Zurich", URL: "https://www.homegate.ch/rent/1001", Price: fp(2800), Rooms: fp(3.5), Area: fp(85), Status: room.StatusUnseen,
		SeenBy: []string{}, AddedAt: w.l1.AddedAt, AddedByUserID: "alice", UpdatedAt: w.l1.AddedAt, UpdatedByUserID: "alice"}
	if diff := cmp.Diff(want, w.l1); diff != "" || w.l1.ListingID == "" {
		t.Errorf("created listing (-want +got):\n%s", diff)
	}
	w.l2 = add(w.bob, map[string]any{"sourceBrand": "immoscout24", "externalId": "IS-77", "title": "Attic", "location": "Zurich"})
	w.l3 = add(w.carol, map[string]any{"sourceBrand": "comparis", "title": "Seen on a flyer", "location": "Oerlikon"})
	// Without an external id a listing stays out of GSI1 (sparse), and no
	// lookup item is claimed; it is in GSI2 like every listing.
	if raw := e.getItem(store.ListingKey(w.roomID, w.l3.ListingID)); raw == nil || raw["GSI1PK"] != nil || raw["GSI1SK"] != nil ||
		str(raw, "GSI2PK") != "ROOM#"+w.roomID || str(raw, "GSI2SK") != "STATUS#UNSEEN#"+w.l3.ListingID {
		t.Errorf("listing without external id stored as %v", raw)
	}
	if got := sks(e.queryItems("", store.RoomPK(w.roomID), store.SKPrefixListingSource)); len(got) != 2 {
		t.Errorf("lookup items after 3 listings, 2 with an external id: %v", got)
	}
	w.l4 = add(w.alice, map[string]any{"sourceBrand": "homegate", "externalId": "HG-1002", "title": "Loft", "location": "Zurich"})
	w.l5 = add(w.dave, map[string]any{"sourceBrand": "newhome", "externalId": "NH.5:a_b-c", "title": "Garden flat", "location": "Basel"})

	// The same source listing twice in one room: 409 naming the first.
	p := e.problem(e.do("POST", R+"/listings", w.bob, map[string]any{"sourceBrand": "homegate", "externalId": "HG-1001", "title": "again", "location": "Zurich"}), 409)
	if p.ExistingListingID != w.l1.ListingID {
		t.Errorf("duplicate: existingListingId %q, want %s (%+v)", p.ExistingListingID, w.l1.ListingID, p)
	}
	if !strings.Contains(p.Detail, "HG-1001") {
		t.Errorf("duplicate: detail %q", p.Detail)
	}
	// The same external id in another room is fine; another brand's is too.
	e.ok(http.StatusCreated, "POST", "/rooms/"+w.otherID+"/listings", w.bob, map[string]any{"sourceBrand": "homegate", "externalId": "HG-1001", "title": "Same flat", "location": "Zurich"}, &w.otherDup)
	e.ok(http.StatusCreated, "POST", "/rooms/"+w.otherID+"/listings", w.alice, map[string]any{"sourceBrand": "homegate", "externalId": "HG-2000", "title": "Only here", "location": "Bern"}, &w.otherOnly)

	// Get listing by id.
	var gl room.Listing
	e.ok(http.StatusOK, "GET", R+"/listings/"+w.l1.ListingID, w.dave, nil, &gl)
	if diff := cmp.Diff(w.l1, gl); diff != "" {
		t.Errorf("GET listing (-created +got):\n%s", diff)
	}
	e.problem(e.do("GET", R+"/listings/nope", w.alice, nil), 404)
	e.problem(e.do("GET", R+"/listings/"+w.otherDup.ListingID, w.alice, nil), 404) // another room's listing

	// Find by external id (GSI1): each room finds its own.
	e.ok(http.StatusOK, "GET", R+"/listings/lookup?sourceBrand=homegate&externalId=HG-1001", w.bob, nil, &gl)
	if gl.ListingID != w.l1.ListingID || gl.RoomID != w.roomID {
		t.Errorf("lookup in %s = %+v, want %s", w.roomID, gl, w.l1.ListingID)
	}
	e.ok(http.StatusOK, "GET", "/rooms/"+w.otherID+"/listings/lookup?sourceBrand=homegate&externalId=HG-1001", w.bob, nil, &gl)
	if gl.ListingID != w.otherDup.ListingID || gl.RoomID != w.otherID {
		t.Errorf("lookup in %s = %+v, want %s", w.otherID, gl, w.otherDup.ListingID)
	}
	e.ok(http.StatusOK, "GET", R+"/listings/lookup?sourceBrand=newhome&externalId="+url.QueryEscape("NH.5:a_b-c"), w.bob, nil, &gl)
	if gl.ListingID != w.l5.ListingID {
		t.Errorf("lookup NH.5:a_b-c = %+v", gl)
	}
	// A listing of another room whose id starts with this room's id is not
	// this room's.
	e.problem(e.do("GET", R+"/listings/lookup?sourceBrand=homegate&externalId=HG-2000", w.alice, nil), 404)
	e.problem(e.do("GET", R+"/listings/lookup?sourceBrand=immoscout24&externalId=HG-1001", w.alice, nil), 404)
	e.problem(e.do("GET", R+"/listings/lookup?sourceBrand=homegate", w.alice, nil), 400, "externalId")
	e.problem(e.do("GET", R+"/listings/lookup?sourceBrand=Home+Gate&externalId=a+b", w.alice, nil), 400, "sourceBrand", "externalId")

	// Status lifecycle.
	setStatus := func(l room.Listing, to room.Status, token string) room.Listing {
		t.Helper()
		var out room.Listing
		e.ok(http.StatusOK, "PUT", R+"/listings/"+l.ListingID+"/status", token, map[string]any{"status": to}, &out)
		if out.Status != to || out.ListingID != l.ListingID || out.UpdatedAt <= l.UpdatedAt {
			t.Errorf("moved to %s: %+v", to, out)
		}
		raw := e.getItem(store.ListingKey(w.roomID, l.ListingID))
		if got, want := str(raw, "GSI2SK"), "STATUS#"+string(to)+"#"+l.ListingID; got != want {
			t.Errorf("after → %s: GSI2SK %q, want %q", to, got, want)
		}
		if got := str(raw, "GSI2PK"); got != "ROOM#"+w.roomID {
			t.Errorf("GSI2PK %q", got)
		}
		return out
	}
	illegal := func(l room.Listing, to room.Status) {
		t.Helper()
		p := e.problem(e.do("PUT", R+"/listings/"+l.ListingID+"/status", w.alice, map[string]any{"status": to}), 409)
		if !strings.Contains(p.Detail, string(l.Status)) || !strings.Contains(p.Detail, string(to)) {
			t.Errorf("%s → %s: detail %q does not name both", l.Status, to, p.Detail)
		}
		if got := str(e.getItem(store.ListingKey(w.roomID, l.ListingID)), "status"); got != string(l.Status) {
			t.Errorf("refused move changed the status to %s", got)
		}
	}
	// The current status again (a retry): the same success, nothing written.
	same := e.getItem(store.ListingKey(w.roomID, w.l1.ListingID))
	e.ok(http.StatusOK, "PUT", R+"/listings/"+w.l1.ListingID+"/status", w.alice, map[string]any{"status": w.l1.Status}, nil)
	if after := e.getItem(store.ListingKey(w.roomID, w.l1.ListingID)); str(after, "updatedAt") != str(same, "updatedAt") {
		t.Errorf("the same status again was written: %v", after)
	}
	e.problem(e.do("PUT", R+"/listings/"+w.l1.ListingID+"/status", w.alice, `{"status":"SOLD"}`), 400, "status")
	e.problem(e.do("PUT", R+"/listings/"+w.l1.ListingID+"/status", w.alice, `{"status":""}`), 400, "status")
	e.problem(e.do("PUT", R+"/listings/"+w.l1.ListingID+"/status", w.alice, `{}`), 400, "status")
	e.problem(e.do("PUT", R+"/listings/"+w.l1.ListingID+"/status", w.alice, `{"status":7}`), 400, "status")
	e.problem(e.do("PUT", R+"/listings/"+w.l1.ListingID+"/status", w.alice, `{"status":"SEEN","note":"x"}`), 400, "note")
	e.problem(e.do("PUT", R+"/listings/nope/status", w.alice, `{"status":"SEEN"}`), 404)
	w.l1 = setStatus(w.l1, room.StatusSeen, w.bob)
	illegal(w.l1, room.StatusVisited)
	illegal(w.l1, room.StatusUnseen)
	w.l1 = setStatus(w.l1, room.StatusVisitPlanned, w.alice)
	w.l1 = setStatus(w.l1, room.StatusVisited, w.alice)
	w.l1 = setStatus(w.l1, room.StatusShortlisted, w.carol)
	w.l1 = setStatus(w.l1, room.StatusRejected, w.dave)
	illegal(w.l1, room.StatusShortlisted)
	w.l1 = setStatus(w.l1, room.StatusSeen, w.alice)
	if w.l1.UpdatedByUserID != "alice" || len(w.l1.SeenBy) != 0 || w.l1.SeenBy == nil {
		t.Errorf("l1 after its moves: %+v", w.l1)
	}
	w.l4 = setStatus(w.l4, room.StatusShortlisted, w.alice)
	w.l5 = setStatus(w.l5, room.StatusRejected, w.bob)

	// Seen: the caller joins seenBy once, UNSEEN becomes SEEN; a second
	// user is added without a status change.
	seen := func(l room.Listing, token string) room.Listing {
		t.Helper()
		var out room.Listing
		e.ok(http.StatusOK, "POST", R+"/listings/"+l.ListingID+"/seen", token, nil, &out)
		sort.Strings(out.SeenBy)
		return out
	}
	w.l2 = seen(w.l2, w.bob)
	if w.l2.Status != room.StatusSeen || !cmp.Equal(w.l2.SeenBy, []string{"bob"}) || w.l2.UpdatedByUserID != "bob" {
		t.Errorf("l2 seen by bob: %+v", w.l2)
	}
	w.l2 = seen(w.l2, w.bob)
	if !cmp.Equal(w.l2.SeenBy, []string{"bob"}) {
		t.Errorf("l2 seen twice by bob: seenBy %v", w.l2.SeenBy)
	}
	w.l2 = seen(w.l2, w.carol)
	if w.l2.Status != room.StatusSeen || !cmp.Equal(w.l2.SeenBy, []string{"bob", "carol"}) {
		t.Errorf("l2 seen by carol: %+v", w.l2)
	}
	if raw := e.getItem(store.ListingKey(w.roomID, w.l2.ListingID)); str(raw, "GSI2SK") != "STATUS#SEEN#"+w.l2.ListingID {
		t.Errorf("l2 GSI2SK %q", str(raw, "GSI2SK"))
	} else if ss, ok := raw["seenBy"].(*types.AttributeValueMemberSS); !ok || len(ss.Value) != 2 {
		t.Errorf("l2 seenBy stored as %#v, want a string set of 2", raw["seenBy"])
	}
	seen(w.l1, w.dave) // SEEN stays SEEN
	w.l1.SeenBy = []string{"dave"}
	e.ok(http.StatusOK, "GET", R+"/listings/"+w.l1.ListingID, w.alice, nil, &gl)
	if gl.Status != room.StatusSeen || !cmp.Equal(gl.SeenBy, []string{"dave"}) {
		t.Errorf("l1 after dave saw it: %+v", gl)
	}
	w.l1 = gl
	e.problem(e.do("POST", R+"/listings/nope/seen", w.alice, nil), 404)

	// Criteria versions.
	putCrit := func(token string, body map[string]any) room.CriteriaVersion {
		t.Helper()
		var cv room.CriteriaVersion
		e.ok(http.StatusCreated, "PUT", R+"/criteria", token, body, &cv)
		return cv
	}
	w.a1 = putCrit(w.alice, map[string]any{"criteria": map[string]any{"locations": []string{"Zurich"}, "priceMax": 2500}})
	w.a2 = putCrit(w.alice, map[string]any{"criteria": map[string]any{"locations": []string{"Zurich", "Basel"}, "priceMin": 2000, "priceMax": 3000}, "weights": map[string]any{"price": 5}})
	w.b1 = putCrit(w.bob, map[string]any{"criteria": map[string]any{"locations": []string{"Zurich"}, "priceMin": 2500, "priceMax": 3500}, "source": "ai_proposed"})
	w.c1 = putCrit(w.carol, map[string]any{"criteria": map[string]any{"locations": []string{"Geneva"}, "roomsMin": 4}})

	// PATCH the context: owner only.
	e.problem(e.do("PATCH", R, w.bob, map[string]any{"context": map[string]any{"combineMode": "all"}}), 403)
	e.problem(e.do("PATCH", R, w.alice, map[string]any{"context": map[string]any{"combineMode": "fastest"}}), 400, "context.combineMode")
	e.problem(e.do("PATCH", R, w.alice, map[string]any{}), 400, "context")
	e.problem(e.do("PATCH", R, w.alice, map[string]any{"name": "x", "context": map[string]any{}}), 400, "name")
	e.ok(http.StatusOK, "PATCH", R, w.alice, map[string]any{"context": map[string]any{"combineMode": "strict", "description": "two of us", "familySize": 2}}, &w.patched)
	wantRoom := w.created
	wantRoom.Context.CombineMode = room.ModeStrict
	wantRoom.UpdatedAt, wantRoom.UpdatedByUserID = w.patched.UpdatedAt, "alice"
	if diff := cmp.Diff(wantRoom, w.patched); diff != "" || w.patched.UpdatedAt <= w.c1.Timestamp {
		t.Errorf("patched room (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", R, w.carol, nil, &got)
	if diff := cmp.Diff(w.patched, got); diff != "" {
		t.Errorf("GET after PATCH (-want +got):\n%s", diff)
	}

	// Leaving and removing members.
	e.problem(e.do("DELETE", R+"/members/carol", w.bob, nil), 403)
	e.problem(e.do("DELETE", R+"/members/alice", w.bob, nil), 403)
	e.problem(e.do("DELETE", R+"/members/alice", w.alice, nil), 409)
	e.ok(http.StatusNoContent, "DELETE", R+"/members/carol", w.carol, nil, nil)
	e.problem(e.do("GET", R, w.carol, nil), 404)
	e.problem(e.do("GET", R+"/listings", w.carol, nil), 404)
	e.problem(e.do("DELETE", R+"/members/carol", w.carol, nil), 404)
	e.ok(http.StatusNoContent, "DELETE", R+"/members/dave", w.alice, nil, nil)
	e.problem(e.do("GET", R, w.dave, nil), 404)
	e.problem(e.do("DELETE", R+"/members/dave", w.alice, nil), 404)
	e.problem(e.do("GET", R+"/members/dave", w.alice, nil), 404)
	for _, u := range []string{"carol", "dave"} {
		if it := e.getItem(store.UserRoomKey(u, w.roomID)); it != nil {
			t.Errorf("%s's UserRoom item is still there", u)
		}
	}
	var cr list[room.Member]
	e.ok(http.StatusOK, "GET", "/me/rooms", w.carol, nil, &cr)
	if len(cr.Items) != 0 {
		t.Errorf("carol's rooms after leaving: %+v", cr.Items)
	}
	w.leftBy = time.Now().UTC()

	e.project()
	return w
}

// TestSeed000AccessPatterns drives every access pattern of the search-room
// seed through HTTP.
func TestSeed000AccessPatterns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	w := s0Scenario(t, e)
	R := "/rooms/" + w.roomID

	// All room listings, two per page; the listing lookup items of the
	// partition are not listings.
	all, pages := listAll[room.Listing](e, R+"/listings", w.bob, 2)
	var ids []string
	for _, l := range all {
		ids = append(ids, l.ListingID)
		if l.RoomID != w.roomID || l.SeenBy == nil {
			t.Errorf("listed listing %+v", l)
		}
	}
	if diff := cmp.Diff([]string{w.l1.ListingID, w.l2.ListingID, w.l3.ListingID, w.l4.ListingID, w.l5.ListingID}, ids); diff != "" || pages != 3 {
		t.Errorf("listings in %d pages (-want +got):\n%s", pages, diff)
	}
	var one list[room.Listing]
	e.ok(http.StatusOK, "GET", R+"/listings?limit=1", w.alice, nil, &one)
	if len(one.Items) != 1 || one.Items[0].ListingID != w.l1.ListingID {
		t.Errorf("first listing %+v", one)
	}
	if diff := cmp.Diff(w.l1, one.Items[0]); diff != "" {
		t.Errorf("listed l1 (-want +got):\n%s", diff)
	}

	// Listings by status (GSI2). GSI reads are eventually consistent on
	// the service; DynamoDB Local updates its indexes at once.
	for _, tc := range []struct {
		status room.Status
		want   []string
	}{
		{room.StatusUnseen, []string{w.l3.ListingID}},
		{room.StatusSeen, []string{w.l1.ListingID, w.l2.ListingID}},
		{room.StatusVisitPlanned, nil},
		{room.StatusVisited, nil},
		{room.StatusShortlisted, []string{w.l4.ListingID}},
		{room.StatusRejected, []string{w.l5.ListingID}},
	} {
		ls, _ := listAll[room.Listing](e, R+"/listings?status="+string(tc.status), w.alice, 1)
		var got []string
		for _, l := range ls {
			got = append(got, l.ListingID)
			if l.Status != tc.status {
				t.Errorf("?status=%s lists %s in %s", tc.status, l.ListingID, l.Status)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("?status=%s (-want +got):\n%s", tc.status, diff)
		}
	}
	e.problem(e.do("GET", R+"/listings?status=SOLD", w.alice, nil), 400, "status")
	e.problem(e.do("GET", R+"/listings?status=seen", w.alice, nil), 400, "status")
	var seenPage list[room.Listing]
	e.ok(http.StatusOK, "GET", R+"/listings?status=SEEN&limit=1", w.alice, nil, &seenPage)
	e.problem(e.do("GET", R+"/listings?status=UNSEEN&cursor="+url.QueryEscape(seenPage.NextCursor), w.alice, nil), 400, "cursor")
	e.problem(e.do("GET", R+"/listings?cursor="+url.QueryEscape(seenPage.NextCursor), w.alice, nil), 400, "cursor")

	// Criteria: one user's latest, every member's latest, all versions,
	// one user's history newest first.
	for _, tc := range []struct {
		user string
		want room.CriteriaVersion
	}{{"alice", w.a2}, {"bob", w.b1}} {
		var cv room.CriteriaVersion
		e.ok(http.StatusOK, "GET", R+"/criteria/latest?userId="+tc.user, w.bob, nil, &cv)
		if diff := cmp.Diff(tc.want, cv); diff != "" {
			t.Errorf("%s's latest (-want +got):\n%s", tc.user, diff)
		}
	}
	e.problem(e.do("GET", R+"/criteria/latest?userId=dave", w.alice, nil), 404)
	var latest list[room.CriteriaVersion]
	e.ok(http.StatusOK, "GET", R+"/criteria/latest", w.alice, nil, &latest)
	if diff := cmp.Diff([]room.CriteriaVersion{w.a2, w.b1}, latest.Items); diff != "" {
		t.Errorf("latest of the current members (-want +got):\n%s", diff)
	}
	allCrit, _ := listAll[room.CriteriaVersion](e, R+"/criteria", w.alice, 2)
	// carol left, but her version is still in the room's history.
	if diff := cmp.Diff([]room.CriteriaVersion{w.c1, w.b1, w.a2, w.a1}, allCrit); diff != "" {
		t.Errorf("all users' criteria (-want +got):\n%s", diff)
	}
	hist, pages := listAll[room.CriteriaVersion](e, R+"/criteria?userId=alice", w.bob, 1)
	// (A page that ends the list exactly may still carry a cursor, to an
	// empty last page: DynamoDB's LastEvaluatedKey.)
	if diff := cmp.Diff([]room.CriteriaVersion{w.a2, w.a1}, hist); diff != "" || pages < 2 || pages > 3 {
		t.Errorf("alice's history in %d pages (-want +got):\n%s", pages, diff)
	}

	// Combined criteria: the newest snapshot is of the remaining members in
	// the room's current (strict) mode.
	var comb room.CombinedVersion
	e.ok(http.StatusOK, "GET", R+"/combined-criteria", w.bob, nil, &comb)
	wantComb := room.Combined{
		Criteria:    room.Criteria{Locations: []string{"Zurich"}, PriceMin: fp(2500), PriceMax: fp(3000)},
		Weights:     map[string]float64{"locations": 1, "price": 5},
		FromUserIDs: []string{"alice", "bob"}, CombineMode: room.ModeStrict, Conflicts: []string{},
	}
	if diff := cmp.Diff(wantComb, comb.Combined); diff != "" || comb.RoomID != w.roomID {
		t.Errorf("combined criteria (-want +got):\n%s", diff)
	}
	combSKs := sks(e.queryItems("", store.RoomPK(w.roomID), store.SKPrefixCombined))
	if len(combSKs) == 0 || comb.Timestamp != strings.TrimPrefix(combSKs[len(combSKs)-1], store.SKPrefixCombined) {
		t.Errorf("latest combined at %s, stored %v", comb.Timestamp, combSKs)
	}

	// Compatibility: latest and history, newest first.
	var comp room.CompatibilityVersion
	e.ok(http.StatusOK, "GET", R+"/compatibility", w.alice, nil, &comp)
	wantRefs := []string{store.CriteriaKey(w.roomID, "alice", w.a2.Timestamp).SK, store.CriteriaKey(w.roomID, "bob", w.b1.Timestamp).SK}
	// locations: Jaccard 1/2, weight 1; price: overlap 500 of 1000, weight (5+1)/2 = 3.
	if comp.ScorePercent != 50 || comp.Level != room.LevelMedium || !cmp.Equal(wantRefs, comp.CriteriaRefs) ||
		!cmp.Equal(map[string]float64{"alice|bob": 0.5}, comp.Pairs) || comp.Comment == "" || comp.RoomID != w.roomID {
		t.Errorf("latest compatibility %+v, want 50 %% medium from %v", comp, wantRefs)
	}
	compHist, _ := listAll[room.CompatibilityVersion](e, R+"/compatibility/history", w.bob, 2)
	if len(compHist) == 0 || !cmp.Equal(comp, compHist[0]) {
		t.Fatalf("compatibility history %+v does not start with the latest", compHist)
	}
	for i := 1; i < len(compHist); i++ {
		if compHist[i].Timestamp >= compHist[i-1].Timestamp {
			t.Errorf("compatibility history not newest first: %s then %s", compHist[i-1].Timestamp, compHist[i].Timestamp)
		}
	}
	// One snapshot per trigger with two members with criteria: bob's and
	// carol's criteria, the PATCH, and the removals (stream time).
	fixed := map[string]bool{w.b1.Timestamp: true, w.c1.Timestamp: true, w.patched.UpdatedAt: true}
	var nFixed int
	for _, c := range compHist {
		if fixed[c.Timestamp] {
			nFixed++
			continue
		}
		ts, _ := store.ParseTimestamp(c.Timestamp)
		// The removals are timed by their stream records, whose creation
		// time DynamoDB Local rounds down to the minute.
		if ts.Before(w.start.Truncate(time.Minute).Add(-time.Second)) || ts.After(w.leftBy.Add(2*time.Second)) {
			t.Errorf("compatibility at %s: neither a write's time nor a removal's (%s..%s)", c.Timestamp, w.start, w.leftBy)
		}
	}
	if nFixed != 3 || len(compHist) < 4 || len(compHist) > 5 {
		t.Errorf("compatibility history of %d snapshots (%d at write times): %+v", len(compHist), nFixed, compHist)
	}

	// Activities: newest first, paginated; the same as the raw partition.
	feed, _ := listAll[room.Activity](e, R+"/activities", w.alice, 4)
	var raw []room.Activity
	if err := attributevalue.UnmarshalListOfMaps(e.queryItems("", store.RoomPK(w.roomID), store.SKPrefixActivity), &raw); err != nil {
		t.Fatal(err)
	}
	sort.Slice(raw, func(i, j int) bool {
		return raw[i].CreatedAt+"#"+raw[i].ActivityID > raw[j].CreatedAt+"#"+raw[j].ActivityID
	})
	if diff := cmp.Diff(raw, feed); diff != "" {
		t.Errorf("feed vs stored entries, newest first (-stored +feed):\n%s", diff)
	}
	count := map[string]int{}
	var l1Moves []string
	for i := len(feed) - 1; i >= 0; i-- {
		a := feed[i]
		count[a.Type]++
		if a.Type == room.ActivityListingStatusChanged && a.ListingID == w.l1.ListingID {
			l1Moves = append(l1Moves, string(a.From)+">"+string(a.To))
		}
		if a.RoomID != w.roomID || a.ActivityID == "" || a.SenderID == "" {
			t.Errorf("activity %+v", a)
		}
		if want := map[bool]string{true: room.SenderAICopilot, false: room.SenderUser}[a.Type == room.ActivityCompatibilityUpdated]; a.SenderType != want {
			t.Errorf("%s sent by %s", a.Type, a.SenderType)
		}
	}
	wantCount := map[string]int{
		room.ActivityRoomCreated: 1, room.ActivityMemberJoined: 4, room.ActivityListingPinned: 5,
		room.ActivityListingStatusChanged: 9, room.ActivityCriteriaUpdated: 4, room.ActivityMemberLeft: 2,
		room.ActivityCompatibilityUpdated: len(compHist),
	}
	if diff := cmp.Diff(wantCount, count); diff != "" {
		t.Errorf("activity types (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"UNSEEN>SEEN", "SEEN>VISIT_PLANNED", "VISIT_PLANNED>VISITED", "VISITED>SHORTLISTED", "SHORTLISTED>REJECTED", "REJECTED>SEEN"}, l1Moves); diff != "" {
		t.Errorf("l1's status changes in the feed (-want +got):\n%s", diff)
	}

	// Activities after a timestamp: oldest first, strictly after it.
	after := w.l1.AddedAt
	var wantAfter []string
	for i := len(feed) - 1; i >= 0; i-- {
		if feed[i].CreatedAt > after {
			wantAfter = append(wantAfter, feed[i].ActivityID)
		}
	}
	gotAfter, _ := listAll[room.Activity](e, R+"/activities?after="+url.QueryEscape(after), w.bob, 3)
	var gotIDs []string
	for _, a := range gotAfter {
		gotIDs = append(gotIDs, a.ActivityID)
	}
	if diff := cmp.Diff(wantAfter, gotIDs); diff != "" || len(wantAfter) == 0 || len(wantAfter) == len(feed) {
		t.Errorf("activities after %s (-want +got):\n%s", after, diff)
	}
	var none list[room.Activity]
	e.ok(http.StatusOK, "GET", R+"/activities?after="+url.QueryEscape(feed[0].CreatedAt), w.bob, nil, &none)
	if len(none.Items) != 0 || none.Items == nil {
		t.Errorf("after the newest entry: %+v", none)
	}
	e.problem(e.do("GET", R+"/activities?after=yesterday", w.bob, nil), 400, "after")
	e.problem(e.do("GET", R+"/activities?limit=0", w.bob, nil), 400, "limit")

	// A non-member gets, on every route, the very 404 of a missing room, and
	// changes nothing.
	before := e.plain(e.queryItems("", store.RoomPK(w.roomID), ""))
	L := "/listings/" + w.l1.ListingID
	for _, rt := range []struct{ method, suffix, body string }{
		{"GET", "", ""},
		{"PATCH", "", `{"context":{"combineMode":"all"}}`},
		{"PATCH", "", `{"bad":`},
		{"DELETE", "", ""},
		{"GET", "/members", ""},
		{"GET", "/members/bob", ""},
		{"GET", "/members/mallory", ""},
		{"DELETE", "/members/bob", ""},
		{"DELETE", "/members/mallory", ""},
		{"POST", "/members", `{"userId":"mallory"}`},
		{"GET", "/listings", ""},
		{"GET", "/listings?status=SEEN", ""},
		{"GET", "/listings?limit=2", ""},
		{"POST", "/listings", `{"sourceBrand":"homegate","externalId":"M-1","title":"t","location":"l"}`},
		{"POST", "/listings", `{"bad":`},
		{"GET", "/listings/lookup?sourceBrand=homegate&externalId=HG-1001", ""},
		{"GET", "/listings/lookup", ""},
		{"GET", L, ""},
		{"PUT", L + "/status", `{"status":"REJECTED"}`},
		{"PUT", L + "/status", `{"status":"SOLD"}`},
		{"POST", L + "/seen", ""},
		{"PUT", "/criteria", `{"criteria":{}}`},
		{"GET", "/criteria", ""},
		{"GET", "/criteria?userId=alice", ""},
		{"GET", "/criteria/latest", ""},
		{"GET", "/criteria/latest?userId=alice", ""},
		{"GET", "/combined-criteria", ""},
		{"GET", "/compatibility", ""},
		{"GET", "/compatibility/history", ""},
		{"GET", "/activities", ""},
		{"GET", "/activities?after=2025-01-01T00:00:00.000Z", ""},
	} {
		t.Run("non-member "+rt.method+" "+rt.suffix, func(t *testing.T) {
			ec := e.withT(t)
			for _, nonMember := range []string{w.mallory, w.carol} { // a stranger, a former member
				ec.likeMissingRoom(rt.method, rt.suffix, rt.body, w.roomID, nonMember, "nosuchroom", w.alice)
			}
		})
	}
	if diff := cmp.Diff(before, e.plain(e.queryItems("", store.RoomPK(w.roomID), ""))); diff != "" {
		t.Errorf("refused requests changed the room (-before +after):\n%s", diff)
	}

	// Delete room: owner only, 202; the room is gone at once for reads of
	// the room, the other room is untouched.
	e.problem(e.do("DELETE", R, w.bob, nil), 403)
	var del map[string]string
	e.ok(http.StatusAccepted, "DELETE", R, w.alice, nil, &del)
	if !cmp.Equal(map[string]string{"roomId": w.roomID, "status": "deleting"}, del) {
		t.Errorf("DELETE answer %v", del)
	}
	e.problem(e.do("GET", R, w.alice, nil), 404)
	e.problem(e.do("DELETE", R, w.alice, nil), 404)
	if e.getItem(store.RoomKey(w.roomID)) != nil {
		t.Error("the Room item is still there")
	}
	e.ok(http.StatusOK, "GET", "/rooms/"+w.otherID, w.bob, nil, nil)
}

// TestSeed000RawKeys checks every item the scenario leaves against the key
// tables of the seed (and docs/design.md §2).
func TestSeed000RawKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	w := s0Scenario(t, e)

	items := e.scanItems("")
	byType := map[string][]item{}
	for _, it := range items {
		typ := str(it, "itemType")
		if typ == "" {
			t.Errorf("item %s/%s has no itemType", str(it, "PK"), str(it, "SK"))
		}
		byType[typ] = append(byType[typ], it)
		_, derived := it["derived"]
		wantDerived := typ == store.TypeCombinedCriteria || typ == store.TypeCompatibility || typ == store.TypeActivity
		if derived != wantDerived {
			t.Errorf("%s %s/%s: derived attribute present %v, want %v", typ, str(it, "PK"), str(it, "SK"), derived, wantDerived)
		}
		if wantDerived {
			if b, ok := it["derived"].(*types.AttributeValueMemberBOOL); !ok || !b.Value {
				t.Errorf("%s %s: derived = %#v, want true", typ, str(it, "SK"), it["derived"])
			}
		}
		_, hasTTL := it["ttl"]
		if hasTTL != (typ == store.TypeActivity) {
			t.Errorf("%s %s: ttl present %v", typ, str(it, "SK"), hasTTL)
		}
		for _, g := range []string{"GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK"} {
			if _, ok := it[g]; ok && typ != store.TypeListing {
				t.Errorf("%s %s carries %s", typ, str(it, "SK"), g)
			}
		}
	}
	keysOf := func(typ string) []string {
		out := []string{}
		for _, it := range byType[typ] {
			out = append(out, str(it, "PK")+" "+str(it, "SK"))
		}
		sort.Strings(out)
		return out
	}
	sorted := func(ks ...string) []string { sort.Strings(ks); return ks }
	Z, O := w.roomID, w.otherID

	// Core items: exactly these keys.
	for typ, want := range map[string][]string{
		store.TypeRoom:     {"ROOM#" + Z + " ROOM", "ROOM#" + O + " ROOM"},
		store.TypeMember:   sorted("ROOM#"+Z+" MEMBER#alice", "ROOM#"+Z+" MEMBER#bob", "ROOM#"+O+" MEMBER#alice", "ROOM#"+O+" MEMBER#bob"),
		store.TypeUserRoom: sorted("USER#alice ROOM#"+Z, "USER#alice ROOM#"+O, "USER#bob ROOM#"+Z, "USER#bob ROOM#"+O),
		store.TypeListing: sorted("ROOM#"+Z+" LISTING#"+w.l1.ListingID, "ROOM#"+Z+" LISTING#"+w.l2.ListingID, "ROOM#"+Z+" LISTING#"+w.l3.ListingID,
			"ROOM#"+Z+" LISTING#"+w.l4.ListingID, "ROOM#"+Z+" LISTING#"+w.l5.ListingID, "ROOM#"+O+" LISTING#"+w.otherDup.ListingID, "ROOM#"+O+" LISTING#"+w.otherOnly.ListingID),
		store.TypeListingSource: sorted("ROOM#"+Z+" LISTING_SOURCE#homegate#HG-1001", "ROOM#"+Z+" LISTING_SOURCE#immoscout24#IS-77", "ROOM#"+Z+" LISTING_SOURCE#homegate#HG-1002",
			"ROOM#"+Z+" LISTING_SOURCE#newhome#NH.5:a_b-c", "ROOM#"+O+" LISTING_SOURCE#homegate#HG-1001", "ROOM#"+O+" LISTING_SOURCE#homegate#HG-2000"),
		store.TypeCriteria: sorted("ROOM#"+Z+" CRITERIA#alice#"+w.a1.Timestamp, "ROOM#"+Z+" CRITERIA#alice#"+w.a2.Timestamp,
			"ROOM#"+Z+" CRITERIA#bob#"+w.b1.Timestamp, "ROOM#"+Z+" CRITERIA#carol#"+w.c1.Timestamp),
	} {
		if diff := cmp.Diff(want, keysOf(typ)); diff != "" {
			t.Errorf("%s keys (-want +got):\n%s", typ, diff)
		}
	}
	var typs []string
	for typ := range byType {
		typs = append(typs, typ)
	}
	sort.Strings(typs)
	if diff := cmp.Diff(sorted(store.TypeActivity, store.TypeCombinedCriteria, store.TypeCompatibility, store.TypeCriteria, store.TypeListing,
		store.TypeListingSource, store.TypeMember, store.TypeRoom, store.TypeUserRoom), typs); diff != "" {
		t.Errorf("item types (-want +got):\n%s", diff)
	}

	// Each core item's key is made of its own attributes.
	for _, it := range items {
		pk, sk := str(it, "PK"), str(it, "SK")
		var want store.Key
		switch str(it, "itemType") {
		case store.TypeRoom:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "ROOM"}
		case store.TypeMember:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "MEMBER#" + str(it, "userId")}
		case store.TypeUserRoom:
			want = store.Key{PK: "USER#" + str(it, "userId"), SK: "ROOM#" + str(it, "roomId")}
		case store.TypeListing:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "LISTING#" + str(it, "listingId")}
		case store.TypeCriteria:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "CRITERIA#" + str(it, "userId") + "#" + str(it, "timestamp")}
		case store.TypeCombinedCriteria:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "CRITERIA_COMBINED#" + str(it, "timestamp")}
		case store.TypeCompatibility:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "COMPATIBILITY#" + str(it, "timestamp")}
		case store.TypeActivity:
			want = store.Key{PK: "ROOM#" + str(it, "roomId"), SK: "ACTIVITY#" + str(it, "createdAt") + "#" + str(it, "activityId")}
			created, err := store.ParseTimestamp(str(it, "createdAt"))
			if err != nil {
				t.Errorf("activity %s: createdAt: %v", sk, err)
			}
			n, ok := it["ttl"].(*types.AttributeValueMemberN)
			if !ok || n.Value != strconv.FormatInt(created.Add(90*24*time.Hour).Unix(), 10) {
				t.Errorf("activity %s: ttl %#v, want %d (createdAt + 90 days)", sk, it["ttl"], created.Add(90*24*time.Hour).Unix())
			}
		case store.TypeListingSource:
			l := e.getItem(store.ListingKey(strings.TrimPrefix(pk, "ROOM#"), str(it, "listingId")))
			want = store.Key{PK: pk, SK: "LISTING_SOURCE#" + str(l, "sourceBrand") + "#" + str(l, "externalId")}
		default:
			continue
		}
		if want.PK != pk || want.SK != sk || want.PK == "ROOM#" {
			t.Errorf("%s key %s/%s, want %s/%s", str(it, "itemType"), pk, sk, want.PK, want.SK)
		}
	}

	// Listings: GSI1 only with an external id (sparse), GSI2 always,
	// following the status.
	for _, l := range []room.Listing{w.l1, w.l2, w.l3, w.l4, w.l5, w.otherDup, w.otherOnly} {
		it := e.getItem(store.ListingKey(l.RoomID, l.ListingID))
		got := map[string]string{}
		for _, g := range []string{"GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"} {
			if _, ok := it[g]; ok {
				got[g] = str(it, g)
			}
		}
		want := map[string]string{"GSI2PK": "ROOM#" + l.RoomID, "GSI2SK": "STATUS#" + string(l.Status) + "#" + l.ListingID}
		if l.ExternalID != "" {
			want["GSI1PK"], want["GSI1SK"] = "SOURCE#"+l.SourceBrand+"#"+l.ExternalID, "ROOM#"+l.RoomID
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("listing %s index keys (-want +got):\n%s", l.ListingID, diff)
		}
	}
	if it := e.getItem(store.ListingKey(Z, w.l3.ListingID)); it == nil || it["GSI1PK"] != nil || it["GSI1SK"] != nil || it["externalId"] != nil {
		t.Errorf("listing without external id: %v", it)
	}
	// The indexes hold listings only, under exactly those keys.
	gsi1 := e.scanItems(store.IndexGSI1)
	var g1 []string
	for _, it := range gsi1 {
		g1 = append(g1, str(it, "GSI1PK")+" "+str(it, "GSI1SK")+" "+str(it, "itemType"))
	}
	sort.Strings(g1)
	wantG1 := sorted("SOURCE#homegate#HG-1001 ROOM#"+Z+" Listing", "SOURCE#homegate#HG-1001 ROOM#"+O+" Listing", "SOURCE#homegate#HG-1002 ROOM#"+Z+" Listing",
		"SOURCE#immoscout24#IS-77 ROOM#"+Z+" Listing", "SOURCE#newhome#NH.5:a_b-c ROOM#"+Z+" Listing", "SOURCE#homegate#HG-2000 ROOM#"+O+" Listing")
	if diff := cmp.Diff(wantG1, g1); diff != "" {
		t.Errorf("GSI1 (-want +got):\n%s", diff)
	}
	if got := e.queryItems(store.IndexGSI1, "SOURCE#homegate#HG-1001", ""); len(got) != 2 || str(got[0], "listingId") != w.l1.ListingID || str(got[1], "listingId") != w.otherDup.ListingID {
		t.Errorf("GSI1 SOURCE#homegate#HG-1001: %v", sks(got))
	}
	var g2 []string
	for _, it := range e.queryItems(store.IndexGSI2, "ROOM#"+Z, "STATUS#") {
		g2 = append(g2, str(it, "GSI2SK"))
	}
	wantG2 := sorted("STATUS#SEEN#"+w.l1.ListingID, "STATUS#SEEN#"+w.l2.ListingID, "STATUS#UNSEEN#"+w.l3.ListingID,
		"STATUS#SHORTLISTED#"+w.l4.ListingID, "STATUS#REJECTED#"+w.l5.ListingID)
	if diff := cmp.Diff(wantG2, g2); diff != "" {
		t.Errorf("GSI2 ROOM#%s (-want +got):\n%s", Z, diff)
	}
	if n := len(e.scanItems(store.IndexGSI2)); n != 7 {
		t.Errorf("GSI2 holds %d items, want the 7 listings", n)
	}
	if n := len(e.scanItems(store.IndexGSI3)); n != 0 {
		t.Errorf("GSI3 holds %d items", n)
	}

	// Derived items: snapshots at the triggers' timestamps.
	tsOf := func(typ, room, prefix string) map[string]bool {
		out := map[string]bool{}
		for _, it := range byType[typ] {
			if str(it, "PK") == "ROOM#"+room {
				out[strings.TrimPrefix(str(it, "SK"), prefix)] = true
			}
		}
		return out
	}
	comb := tsOf(store.TypeCombinedCriteria, Z, store.SKPrefixCombined)
	comp := tsOf(store.TypeCompatibility, Z, store.SKPrefixCompatibility)
	for _, ts := range []string{w.a1.Timestamp, w.a2.Timestamp, w.b1.Timestamp, w.c1.Timestamp, w.patched.UpdatedAt} {
		if !comb[ts] {
			t.Errorf("no CRITERIA_COMBINED#%s", ts)
		}
	}
	for _, ts := range []string{w.b1.Timestamp, w.c1.Timestamp, w.patched.UpdatedAt} {
		if !comp[ts] {
			t.Errorf("no COMPATIBILITY#%s", ts)
		}
	}
	if comp[w.a1.Timestamp] || comp[w.a2.Timestamp] {
		t.Error("a compatibility snapshot with one member's criteria")
	}
	if len(comb) != len(comp)+2 {
		t.Errorf("%d combined vs %d compatibility snapshots", len(comb), len(comp))
	}
	if n := len(tsOf(store.TypeCombinedCriteria, O, store.SKPrefixCombined)) + len(tsOf(store.TypeCompatibility, O, store.SKPrefixCompatibility)); n != 0 {
		t.Errorf("%d snapshots in a room without criteria", n)
	}
	// Every compatibility snapshot has its copilot activity.
	for ts := range comp {
		it := e.getItem(store.ActivityKey(Z, ts, "compatibility-"+ts))
		if str(it, "type") != room.ActivityCompatibilityUpdated || str(it, "senderType") != room.SenderAICopilot {
			t.Errorf("compatibility %s: activity %v", ts, it)
		}
	}
}

// TestRoomDeletionCascade: deleting a room removes, through the projector,
// every item of its partition and its members' UserRoom items; replays are
// harmless and other rooms are untouched.
func TestRoomDeletionCascade(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	alice, bob, carol := e.token("alice"), e.token("bob"), e.token("carol")
	e.ids.queue("doomed", "kept")
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "Doomed", "searchType": "buy"}, nil)
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "Kept", "searchType": "rent"}, nil)
	for _, rm := range []string{"doomed", "kept"} {
		R := "/rooms/" + rm
		e.ok(http.StatusCreated, "POST", R+"/members", alice, map[string]string{"userId": "bob"}, nil)
		var l room.Listing
		e.ok(http.StatusCreated, "POST", R+"/listings", bob, map[string]any{"sourceBrand": "homegate", "externalId": "HG-1", "title": "t", "location": "l"}, &l)
		e.ok(http.StatusOK, "PUT", R+"/listings/"+l.ListingID+"/status", alice, map[string]any{"status": "SHORTLISTED"}, nil)
		e.ok(http.StatusCreated, "POST", R+"/listings", alice, map[string]any{"sourceBrand": "flyer", "title": "no external id", "location": "l"}, nil)
		e.ok(http.StatusCreated, "PUT", R+"/criteria", alice, map[string]any{"criteria": map[string]any{"priceMax": 1000}}, nil)
		e.ok(http.StatusCreated, "PUT", R+"/criteria", bob, map[string]any{"criteria": map[string]any{"priceMax": 1200}}, nil)
	}
	e.ok(http.StatusCreated, "POST", "/rooms/doomed/members", alice, map[string]string{"userId": "carol"}, nil)
	e.project()
	doomed := e.partitionSKs("ROOM#doomed")
	for _, prefix := range []string{"ROOM", "MEMBER#carol", "LISTING#", "LISTING_SOURCE#", "CRITERIA#", "CRITERIA_COMBINED#", "COMPATIBILITY#", "ACTIVITY#"} {
		found := false
		for _, sk := range doomed {
			found = found || strings.HasPrefix(sk, prefix)
		}
		if !found {
			t.Fatalf("the doomed room has no %s item before deletion: %v", prefix, doomed)
		}
	}
	keptBefore := e.plain(e.queryItems("", "ROOM#kept", ""))
	userRoomsBefore := e.plain(append(e.queryItems("", "USER#alice", "ROOM#kept"), e.queryItems("", "USER#bob", "ROOM#kept")...))

	e.problem(e.do("DELETE", "/rooms/doomed", bob, nil), 403)
	e.problem(e.do("DELETE", "/rooms/doomed", carol, nil), 403)
	e.ok(http.StatusAccepted, "DELETE", "/rooms/doomed", alice, nil, nil)
	// Until the cascade ran, a deleted room takes no more writes.
	e.problem(e.do("POST", "/rooms/doomed/listings", bob, map[string]any{"sourceBrand": "homegate", "externalId": "HG-9", "title": "t", "location": "l"}), 404)
	e.problem(e.do("POST", "/rooms/doomed/members", alice, map[string]string{"userId": "dave"}), 404)
	e.problem(e.do("PATCH", "/rooms/doomed", alice, map[string]any{"context": map[string]any{"combineMode": "all"}}), 404)
	e.problem(e.do("PUT", "/rooms/doomed/criteria", bob, map[string]any{"criteria": map[string]any{"priceMax": 5}}), 404)

	ev := e.capture()
	e.deliver(ev, replay.AsCaptured)

	gone := func(when string) {
		t.Helper()
		if left := e.partitionSKs("ROOM#doomed"); len(left) != 0 {
			t.Errorf("%s: the room's partition still holds %v", when, left)
		}
		for _, u := range []string{"alice", "bob", "carol"} {
			if it := e.getItem(store.UserRoomKey(u, "doomed")); it != nil {
				t.Errorf("%s: %s's UserRoom item is still there", when, u)
			}
		}
		for _, tc := range []struct {
			user, token string
			want        []string
		}{{"alice", alice, []string{"kept"}}, {"bob", bob, []string{"kept"}}, {"carol", carol, nil}} {
			rooms, _ := listAll[room.Member](e, "/me/rooms", tc.token, 10)
			var got []string
			for _, m := range rooms {
				got = append(got, m.RoomID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: %s's rooms (-want +got):\n%s", when, tc.user, diff)
			}
		}
		e.problem(e.do("GET", "/rooms/doomed", alice, nil), 404)
		e.problem(e.do("GET", "/rooms/doomed/listings", bob, nil), 404)
		for _, it := range e.queryItems(store.IndexGSI1, "SOURCE#homegate#HG-1", "") {
			if str(it, "GSI1SK") != "ROOM#kept" {
				t.Errorf("%s: GSI1 still holds %s/%s", when, str(it, "PK"), str(it, "SK"))
			}
		}
		if got := e.queryItems(store.IndexGSI1, "SOURCE#homegate#HG-1", "ROOM#doomed"); len(got) != 0 {
			t.Errorf("%s: GSI1 finds %d items of the doomed room", when, len(got))
		}
		if got := e.queryItems(store.IndexGSI2, "ROOM#doomed", ""); len(got) != 0 {
			t.Errorf("%s: GSI2 finds %d items of the doomed room", when, len(got))
		}
		if diff := cmp.Diff(keptBefore, e.plain(e.queryItems("", "ROOM#kept", ""))); diff != "" {
			t.Errorf("%s: the kept room changed (-before +after):\n%s", when, diff)
		}
		if diff := cmp.Diff(userRoomsBefore, e.plain(append(e.queryItems("", "USER#alice", "ROOM#kept"), e.queryItems("", "USER#bob", "ROOM#kept")...))); diff != "" {
			t.Errorf("%s: the kept room's UserRoom items changed (-before +after):\n%s", when, diff)
		}
	}
	gone("after the cascade")

	// Replays: the same capture again, then shuffled with duplicates in
	// random batches, then the stream with the cascade's own deletes.
	e.deliver(ev, replay.AsCaptured)
	gone("after a second delivery")
	e.deliver(ev, replay.Schedule{Name: "dup shuffle", Duplicate: true, Shuffle: true, Seed: 7, RandomBatches: true, MaxBatch: 3})
	gone("after a shuffled delivery with duplicates")
	e.deliver(e.capture(), replay.Schedule{Name: "full stream", Duplicate: true, Shuffle: true, Seed: 11, RandomBatches: true, MaxBatch: 5})
	gone("after replaying the stream with the cascade")
}

// TestActivitiesTTL: entries past their ttl are never served, though
// DynamoDB Local never deletes them.
func TestActivitiesTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	alice := e.token("alice")
	e.ids.queue("ttl")
	var rm room.Room
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "TTL", "searchType": "buy"}, &rm)
	e.ok(http.StatusCreated, "POST", "/rooms/ttl/listings", alice, map[string]any{"sourceBrand": "homegate", "title": "t", "location": "l"}, nil)
	e.project()

	// Two raw entries under the store's key pattern: one created 100 days
	// ago (expired 10 days ago), one created just now but already expired.
	now := e.clock.Peek()
	put := func(created time.Time, id string, ttl int64) {
		t.Helper()
		a := room.Activity{RoomID: "ttl", ActivityID: id, Type: room.ActivityChatMessage, CreatedAt: store.Timestamp(created),
			SenderType: room.SenderUser, SenderID: "alice", TTL: ttl}
		it, err := attributevalue.MarshalMap(a)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range store.ActivityKey("ttl", a.CreatedAt, id).AV() {
			it[k] = v
		}
		it["itemType"] = &types.AttributeValueMemberS{Value: store.TypeActivity}
		it["derived"] = &types.AttributeValueMemberBOOL{Value: true}
		if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-100 * 24 * time.Hour)
	put(old, "old", old.Add(room.ActivityTTL).Unix())
	put(now.Add(-time.Second), "expired-now", now.Add(-time.Minute).Unix())

	ids := func(path string, limit int) []string {
		t.Helper()
		as, _ := listAll[room.Activity](e, path, alice, limit)
		out := []string{}
		for _, a := range as {
			out = append(out, a.Type+"/"+a.ActivityID)
			if a.TTL <= e.clock.Peek().Unix() {
				t.Errorf("%s served an expired entry %+v", path, a)
			}
		}
		return out
	}
	feed := ids("/rooms/ttl/activities", 1)
	var types3 []string
	for _, s := range feed {
		typ, _, _ := strings.Cut(s, "/")
		types3 = append(types3, typ)
	}
	sort.Strings(types3)
	if diff := cmp.Diff([]string{room.ActivityListingPinned, room.ActivityMemberJoined, room.ActivityRoomCreated}, types3); diff != "" {
		t.Errorf("live feed (-want +got):\n%s", diff)
	}
	if got := ids("/rooms/ttl/activities?after="+url.QueryEscape(store.Timestamp(old.Add(-time.Hour))), 2); len(got) != 3 {
		t.Errorf("after a time before every entry: %v, want the 3 live ones", got)
	}
	// The live entries were all created in the last minute; expired-now too.
	if got := ids("/rooms/ttl/activities?after="+url.QueryEscape(store.Timestamp(now.Add(-time.Hour))), 1); len(got) != 3 {
		t.Errorf("after an hour ago: %v, want the 3 live ones", got)
	}
	for _, id := range []string{"old", "expired-now"} {
		if e.getItem(store.ActivityKey("ttl", map[string]string{"old": store.Timestamp(old), "expired-now": store.Timestamp(now.Add(-time.Second))}[id], id)) == nil {
			t.Fatalf("the raw entry %s is not there", id)
		}
		for _, s := range feed {
			if strings.HasSuffix(s, "/"+id) {
				t.Errorf("feed served the expired %s", id)
			}
		}
	}

	// 91 days later everything has expired; the items are all still there.
	e.clock.Advance(91 * 24 * time.Hour)
	alice = e.token("alice")
	if got := ids("/rooms/ttl/activities", 2); len(got) != 0 {
		t.Errorf("feed 91 days later: %v", got)
	}
	if got := ids("/rooms/ttl/activities?after="+url.QueryEscape(store.Timestamp(old.Add(-time.Hour))), 2); len(got) != 0 {
		t.Errorf("after, 91 days later: %v", got)
	}
	if n := len(e.queryItems("", "ROOM#ttl", store.SKPrefixActivity)); n != 5 {
		t.Errorf("%d activity items stored, want 5 (DynamoDB Local never expires them)", n)
	}
	// The room itself does not expire.
	e.ok(http.StatusOK, "GET", "/rooms/ttl", alice, nil, nil)
	e.ok(http.StatusOK, "GET", "/rooms/ttl/listings", alice, nil, nil)
}

// TestListingBadInput: every bad listing is a 400 naming the field, and
// writes nothing.
func TestListingBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	alice := e.token("alice")
	e.ids.queue("bad")
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "n", "searchType": "buy"}, nil)
	body := func(mod func(map[string]any)) map[string]any {
		b := map[string]any{"sourceBrand": "homegate", "externalId": "HG-1", "title": "Flat", "location": "Zurich", "url": "https://example.com/1", "price": 1000}
		mod(b)
		return b
	}
	set := func(k string, v any) func(map[string]any) { return func(b map[string]any) { b[k] = v } }
	del := func(k string) func(map[string]any) { return func(b map[string]any) { delete(b, k) } }
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"missing title", body(del("title")), "title"},
		{"blank title", body(set("title", "  ")), "title"},
		{"missing location", body(del("location")), "location"},
		{"empty location", body(set("location", "")), "location"},
		{"brand with a space", body(set("sourceBrand", "Home Gate")), "sourceBrand"},
		{"empty brand", body(set("sourceBrand", "")), "sourceBrand"},
		{"missing brand", body(del("sourceBrand")), "sourceBrand"},
		{"brand of 41", body(set("sourceBrand", strings.Repeat("a", 41))), "sourceBrand"},
		{"brand upper case", body(set("sourceBrand", "Homegate")), "sourceBrand"},
		{"brand with #", body(set("sourceBrand", "home#gate")), "sourceBrand"},
		{"externalId with a space", body(set("externalId", "a b")), "externalId"},
		{"externalId with #", body(set("externalId", "#x")), "externalId"},
		{"externalId a#b", body(set("externalId", "a#b")), "externalId"},
		{"externalId of 101", body(set("externalId", strings.Repeat("x", 101))), "externalId"},
		{"ftp url", body(set("url", "ftp://x")), "url"},
		{"not a url", body(set("url", "not a url")), "url"},
		{"url without host", body(set("url", "https://")), "url"},
		{"negative price", body(set("price", -1)), "price"},
		{"negative rooms", body(set("rooms", -0.5)), "rooms"},
		{"negative area", body(set("area", -10)), "area"},
		{"title of 301", body(set("title", strings.Repeat("t", 301))), "title"},
		{"location of 201", body(set("location", strings.Repeat("l", 201))), "location"},
		{"price a string", body(set("price", "x")), "price"},
		{"title a number", body(set("title", 5)), "title"},
		{"externalId a number", body(set("externalId", 7)), "externalId"},
		{"unknown field", body(set("colour", "red")), "colour"},
		{"status given", body(set("status", "SEEN")), "status"},
		{"seenBy given", body(set("seenBy", []string{"alice"})), "seenBy"},
		{"no body", "", "body"},
		{"not an object", `[]`, "body"},
		{"trailing data", `{"sourceBrand":"homegate","title":"t","location":"l"} x`, "body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ec := e.withT(t)
			p := ec.problem(ec.do("POST", "/rooms/bad/listings", alice, tc.body), 400, tc.field)
			if p.Detail != "invalid request" {
				t.Errorf("detail %q", p.Detail)
			}
		})
	}
	e.problem(e.do("POST", "/rooms/bad/listings", alice, body(func(b map[string]any) { b["title"] = ""; b["sourceBrand"] = "X"; b["price"] = -1 })), 400, "title", "sourceBrand", "price")

	if diff := cmp.Diff([]string{"MEMBER#alice", "ROOM"}, e.partitionSKs("ROOM#bad")); diff != "" {
		t.Errorf("the room's partition after the bad listings (-want +got):\n%s", diff)
	}
	if n := len(e.queryItems(store.IndexGSI1, "SOURCE#homegate#HG-1", "")) + len(e.queryItems(store.IndexGSI2, "ROOM#bad", "")); n != 0 {
		t.Errorf("the indexes hold %d items", n)
	}
	if next := e.ids.next(); next != "id001" {
		t.Errorf("a rejected listing took an id: next is %s", next)
	}

	// The limits are inclusive.
	var l room.Listing
	e.ok(http.StatusCreated, "POST", "/rooms/bad/listings", alice, body(func(b map[string]any) {
		b["sourceBrand"], b["externalId"] = strings.Repeat("a", 40), strings.Repeat("x", 100)
		b["title"], b["location"], b["price"] = strings.Repeat("é", 300), strings.Repeat("l", 200), 0
	}), &l)
	if l.SourceBrand != strings.Repeat("a", 40) || l.Price == nil || *l.Price != 0 {
		t.Errorf("listing at the limits: %+v", l)
	}
	if got := sks(e.queryItems("", "ROOM#bad", store.SKPrefixListingSource)); len(got) != 1 {
		t.Errorf("lookup items %v", got)
	}
}
