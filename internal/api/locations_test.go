package api_test

// Tests of the locations seed (seed 001, docs/design.md) through the writer's HTTP API,
// as the seed lists them — ULID generation, duplicate code rejection, get by
// id and by code, list with filtering and pagination, soft-delete
// behaviour — plus updates, the atomic change of code, a concurrent-create
// race, admin-only writes and bad input that writes nothing. The exact keys
// and attributes underneath are read raw. All against DynamoDB Local.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/location"
	"github.com/dynastream/dynastream/internal/store"
)

// locEnv is env with a token of the group admins and one of no group; its
// JSON answers may hold no member their Go types lack.
type locEnv struct {
	*env
	admin string // a token of the group admins
	user  string // a token of no group
}

func newLocEnv(t *testing.T, newID func() string) *locEnv {
	t.Helper()
	e := &locEnv{env: newEnv(t, newID)}
	e.strictJSON = true
	e.admin = e.groupToken("ada", "admins")
	e.user = e.groupToken("bob")
	return e
}

func (e *locEnv) withT(t *testing.T) *locEnv {
	c := *e
	c.env = e.env.withT(t)
	return &c
}

// meta reads the item of a partition's sort key META, raw.
func (e *locEnv) meta(pk string) item {
	e.t.Helper()
	return e.getItem(store.Key{PK: pk, SK: "META"})
}

func newULID() string { return ulid.Make().String() }

func locationBody(code string) map[string]any {
	return map[string]any{"locationCode": code, "name": "Center " + code, "placeId": "ChIJ-" + code,
		"formattedAddress": "1 Main St, Austin, TX 78701", "lat": 30.2672, "lng": -97.7431}
}

func (e *locEnv) create(code string) location.Location {
	e.t.Helper()
	var l location.Location
	e.ok(http.StatusCreated, "POST", "/locations", e.admin, locationBody(code), &l)
	return l
}

// codes reads a list page by page with the given limit; it returns the
// codes and the number of pages.
func (e *locEnv) codes(query string, limit int) ([]string, int) {
	e.t.Helper()
	ls, pages := listAll[location.Location](e.env, "/locations?"+query, e.user, limit)
	var codes []string
	for _, l := range ls {
		codes = append(codes, l.LocationCode)
	}
	return codes, pages
}

// TestSeed001CreateWithULID: a location gets a ULID from the server's real
// generator, is active, and is stored as the seed says: the location and
// its code lookup, with exactly these attributes.
func TestSeed001CreateWithULID(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, newULID)
	start := time.Now().Add(-time.Second)
	body := map[string]any{"locationCode": "austin-main-01", "name": "  Austin Main Center ", "placeId": "ChIJN1t_tDeuEmsRUsoyG83frY4",
		"formattedAddress": "123 Main St, Austin, TX 78701", "addressComponents": map[string]string{"locality": "Austin", "postal_code": " 78701 "},
		"lat": 30.2672, "lng": -97.7431}
	var l location.Location
	r := e.ok(http.StatusCreated, "POST", "/locations", e.admin, body, &l)
	id, err := ulid.ParseStrict(l.LocationID)
	if err != nil {
		t.Fatalf("locationId %q is not a ULID: %v", l.LocationID, err)
	}
	if at := ulid.Time(id.Time()); at.Before(start) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("ULID time %v is not now", at)
	}
	if loc := r.header.Get("Location"); loc != "/locations/"+l.LocationID {
		t.Errorf("Location header %q", loc)
	}
	want := location.Location{LocationID: l.LocationID, LocationCode: "austin-main-01", Name: "Austin Main Center", PlaceID: "ChIJN1t_tDeuEmsRUsoyG83frY4",
		FormattedAddress: "123 Main St, Austin, TX 78701", AddressComponents: map[string]string{"locality": "Austin", "postal_code": "78701"},
		Lat: 30.2672, Lng: -97.7431, Status: location.Active, CreatedAt: l.CreatedAt, UpdatedAt: l.CreatedAt}
	if _, err := store.ParseTimestamp(l.CreatedAt); err != nil {
		t.Errorf("createdAt %q: %v", l.CreatedAt, err)
	}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}

	// Underneath: the seed's two items, nothing else.
	if diff := cmp.Diff([]string{"LOCATION#" + l.LocationID + " META", "LOCATION_CODE#austin-main-01 META"}, e.tableKeys()); diff != "" {
		t.Fatalf("items (-want +got):\n%s", diff)
	}
	items := byKey(e.scanItems(""))
	loc := items["LOCATION#"+l.LocationID+" META"]
	var stored struct {
		location.Location
		ItemType                       string `dynamodbav:"itemType"`
		GSI1PK, GSI1SK, GSI2PK, GSI2SK string
	}
	if err := attributevalue.UnmarshalMap(loc, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.ItemType != "Location" || !cmp.Equal(stored.Location, want) {
		t.Errorf("location item %v", loc)
	}
	var names []string
	for n := range loc {
		names = append(names, n)
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "PK", "SK", "addressComponents", "createdAt", "formattedAddress", "itemType",
		"lat", "lng", "locationCode", "locationId", "name", "placeId", "status", "updatedAt"}, names); diff != "" {
		t.Errorf("location attributes (-want +got):\n%s", diff)
	}
	if _, ok := loc["lat"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("lat is stored as %T, want a number", loc["lat"])
	}
	if _, ok := loc["addressComponents"].(*types.AttributeValueMemberM); !ok {
		t.Errorf("addressComponents is stored as %T, want a map", loc["addressComponents"])
	}
	lk := items["LOCATION_CODE#austin-main-01 META"]
	if diff := cmp.Diff(map[string]string{"PK": "LOCATION_CODE#austin-main-01", "SK": "META", "itemType": "LocationCodeLookup",
		"locationId": l.LocationID, "locationCode": "austin-main-01", "createdAt": want.CreatedAt}, strAttrs(t, lk)); diff != "" {
		t.Errorf("lookup item (-want +got):\n%s", diff)
	}

	// ULIDs sort by creation.
	l2 := e.create("austin-main-02")
	if _, err := ulid.ParseStrict(l2.LocationID); err != nil || l2.LocationID <= l.LocationID {
		t.Errorf("second id %q (%v), first %q", l2.LocationID, err, l.LocationID)
	}
}

// strAttrs is an item of string attributes as a map (a test fails on any
// other type).
func strAttrs(t *testing.T, it item) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range it {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			t.Errorf("attribute %s is %T, want a string", k, v)
			continue
		}
		out[k] = s.Value
	}
	return out
}

// TestSeed001AdminOnly: only the group admins writes (anyone else 403,
// even with a bad request, and nothing is written); anyone with a token
// reads; no token is a 401.
func TestSeed001AdminOnly(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	l := e.create("austin-main-01")
	L := "/locations/" + l.LocationID
	editor := e.groupToken("eve", "editors", "Admins")
	before := e.snapshot()
	for _, tok := range []string{e.user, editor} {
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/locations", locationBody("dallas-01")},
			{"POST", "/locations", `{"locationCode":"Austin Main","lat":91}`},
			{"PATCH", L, map[string]any{"name": "Mine"}},
			{"PATCH", L, `{"name":""}`},
			{"PUT", L + "/code", map[string]any{"locationCode": "dallas-01"}},
			{"PUT", L + "/code", `{"locationCode":"-x-"}`},
			{"DELETE", L, nil},
			{"DELETE", "/locations/nope", nil},
		} {
			detail := e.problem(e.do(c.method, c.path, tok, c.body), http.StatusForbidden).Detail
			if !strings.Contains(detail, "admin") {
				t.Errorf("%s %s: detail %q", c.method, c.path, detail)
			}
		}
	}
	e.unchanged(before, "non-admin writes")
	for _, p := range []string{L, "/locations/by-code/austin-main-01", "/locations"} {
		e.ok(http.StatusOK, "GET", p, e.user, nil, nil)
		e.problem(e.do("GET", p, "", nil), http.StatusUnauthorized)
	}
	e.problem(e.do("POST", "/locations", "", locationBody("dallas-01")), http.StatusUnauthorized)
	e.problem(e.do("POST", "/locations", "Bearer nonsense", locationBody("dallas-01")), http.StatusUnauthorized)
	e.unchanged(before, "unauthenticated writes")
}

// TestSeed001DuplicateCode: a taken code is a 409 "code already taken" and
// nothing of the second location is written.
func TestSeed001DuplicateCode(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	l := e.create("austin-main-01")
	before := e.snapshot()
	body := locationBody("austin-main-01")
	body["name"] = "Another"
	detail := e.problem(e.do("POST", "/locations", e.admin, body), http.StatusConflict).Detail
	if detail != "code already taken: austin-main-01" {
		t.Errorf("detail %q", detail)
	}
	e.unchanged(before, "a duplicate code")
	if e.meta("LOCATION#LOC002") != nil {
		t.Error("the refused location was written")
	}
	if got := str(e.meta("LOCATION_CODE#austin-main-01"), "locationId"); got != l.LocationID {
		t.Errorf("lookup points at %q", got)
	}
	// Another code is fine.
	e.create("austin-main-02")
}

// TestSeed001GetByIDAndCode: by id with one read, by code in two steps
// through the lookup item.
func TestSeed001GetByIDAndCode(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	a, b := e.create("austin-main-01"), e.create("dallas-01")
	var got location.Location
	e.ok(http.StatusOK, "GET", "/locations/"+a.LocationID, e.user, nil, &got)
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("by id (-created +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/locations/by-code/dallas-01", e.user, nil, &got)
	if diff := cmp.Diff(b, got); diff != "" {
		t.Errorf("by code (-created +got):\n%s", diff)
	}
	if d := e.problem(e.do("GET", "/locations/LOC999", e.user, nil), http.StatusNotFound).Detail; !strings.Contains(d, "LOC999") {
		t.Errorf("detail %q", d)
	}
	e.problem(e.do("GET", "/locations/by-code/nowhere", e.user, nil), http.StatusNotFound)
	e.problemReasons(e.do("GET", "/locations/by-code/Austin%20Main", e.user, nil), http.StatusBadRequest, map[string]string{"code": location.CodeRule})
	e.problemReasons(e.do("GET", "/locations/by-code/x--y", e.user, nil), http.StatusBadRequest, map[string]string{"code": location.CodeRule})

	// The two steps: the code's lookup names the location that is read. A
	// lookup pointed elsewhere (raw) answers that location; one pointing
	// at nothing is a 404.
	ctx := context.Background()
	lk := e.meta("LOCATION_CODE#austin-main-01")
	lk["locationId"] = &types.AttributeValueMemberS{Value: b.LocationID}
	if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: lk}); err != nil {
		t.Fatal(err)
	}
	e.ok(http.StatusOK, "GET", "/locations/by-code/austin-main-01", e.user, nil, &got)
	if got.LocationID != b.LocationID {
		t.Errorf("by code through a changed lookup: %s, want %s", got.LocationID, b.LocationID)
	}
	lk["locationId"] = &types.AttributeValueMemberS{Value: "LOC404"}
	if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: lk}); err != nil {
		t.Fatal(err)
	}
	e.problem(e.do("GET", "/locations/by-code/austin-main-01", e.user, nil), http.StatusNotFound)
}

// TestSeed001ListFilterPaginate: all locations through an index, newest
// first or by code, all or by status, two by two across pages.
func TestSeed001ListFilterPaginate(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	var empty list[location.Location]
	e.ok(http.StatusOK, "GET", "/locations", e.user, nil, &empty)
	if empty.Items == nil || len(empty.Items) != 0 || empty.NextCursor != "" {
		t.Errorf("empty list: %+v", empty)
	}
	ids := map[string]string{}
	for _, c := range []string{"c-03", "a-01", "e-05", "b-02", "d-04"} {
		ids[c] = e.create(c).LocationID
	}
	e.ok(http.StatusOK, "DELETE", "/locations/"+ids["b-02"], e.admin, nil, nil)
	for _, tc := range []struct {
		query string
		want  []string
		pages int
	}{
		{"", []string{"d-04", "b-02", "e-05", "a-01", "c-03"}, 3},
		{"order=newest", []string{"d-04", "b-02", "e-05", "a-01", "c-03"}, 3},
		{"order=code", []string{"a-01", "b-02", "c-03", "d-04", "e-05"}, 3},
		{"status=active", []string{"d-04", "e-05", "a-01", "c-03"}, 0},
		{"status=active&order=code", []string{"a-01", "c-03", "d-04", "e-05"}, 0},
		{"status=inactive", []string{"b-02"}, 0},
		{"status=inactive&order=code", []string{"b-02"}, 0},
		{"status=&order=", []string{"d-04", "b-02", "e-05", "a-01", "c-03"}, 3},
	} {
		got, pages := e.codes(tc.query, 2)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.query, diff)
		}
		if tc.pages > 0 && pages != tc.pages {
			t.Errorf("%q: %d pages, want %d", tc.query, pages, tc.pages)
		}
	}
	// One page holds the whole list; the items are the locations.
	var pg list[location.Location]
	e.ok(http.StatusOK, "GET", "/locations?order=code&limit=100", e.user, nil, &pg)
	if len(pg.Items) != 5 || pg.NextCursor != "" || pg.Items[1].Status != location.Inactive || pg.Items[0].LocationID != ids["a-01"] || pg.Items[0].PlaceID != "ChIJ-a-01" {
		t.Errorf("one page: %+v", pg)
	}
	// A cursor belongs to its list.
	e.ok(http.StatusOK, "GET", "/locations?limit=2", e.user, nil, &pg)
	e.problemReasons(e.do("GET", "/locations?order=code&cursor="+url.QueryEscape(pg.NextCursor), e.user, nil), http.StatusBadRequest, map[string]string{"cursor": ""})
	e.problemReasons(e.do("GET", "/locations?cursor=bm9wZQ", e.user, nil), http.StatusBadRequest, map[string]string{"cursor": ""})
	e.problemReasons(e.do("GET", "/locations?limit=101&status=gone&order=oldest", e.user, nil), http.StatusBadRequest,
		map[string]string{"limit": "must be an integer from 1 to 100", "status": `must be "active" or "inactive"`, "order": `must be "newest" or "code"`})
}

// TestSeed001SoftDelete: DELETE deactivates; the location stays readable
// and its code stays taken for good.
func TestSeed001SoftDelete(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	l := e.create("austin-main-01")
	L := "/locations/" + l.LocationID
	var del location.Location
	e.ok(http.StatusOK, "DELETE", L, e.admin, nil, &del)
	if del.Status != location.Inactive || del.UpdatedAt <= l.UpdatedAt || del.CreatedAt != l.CreatedAt || del.Name != l.Name || del.LocationCode != l.LocationCode {
		t.Errorf("deactivated: %+v", del)
	}
	var got location.Location
	e.ok(http.StatusOK, "GET", L, e.user, nil, &got)
	if diff := cmp.Diff(del, got); diff != "" {
		t.Errorf("read after delete (-delete +get):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/locations/by-code/austin-main-01", e.user, nil, &got)
	if got.LocationID != l.LocationID || got.Status != location.Inactive {
		t.Errorf("by code after delete: %+v", got)
	}
	if str(e.meta("LOCATION#"+l.LocationID), "status") != "inactive" || e.meta("LOCATION_CODE#austin-main-01") == nil {
		t.Error("raw: not inactive, or the lookup is gone")
	}
	before := e.snapshot()
	// The code is never reused; the location is not changed any more.
	if d := e.problem(e.do("POST", "/locations", e.admin, locationBody("austin-main-01")), http.StatusConflict).Detail; d != "code already taken: austin-main-01" {
		t.Errorf("reuse: %q", d)
	}
	e.problem(e.do("DELETE", L, e.admin, nil), http.StatusConflict)
	e.problem(e.do("PATCH", L, e.admin, map[string]any{"name": "Back"}), http.StatusConflict)
	e.problem(e.do("PUT", L+"/code", e.admin, map[string]any{"locationCode": "austin-main-02"}), http.StatusConflict)
	e.problem(e.do("DELETE", "/locations/LOC999", e.admin, nil), http.StatusNotFound)
	e.unchanged(before, "writes to a deactivated location")

	// The store refuses a change of code of an inactive location by itself
	// (a deactivation racing the handler's read), and nothing changes.
	if _, err := e.st.Locations.ChangeLocationCode(context.Background(), l, "austin-main-02", "2025-03-14T16:00:00.000Z"); !errs.Is(err, errs.Conflict) {
		t.Errorf("store: change of code of an inactive location: %v", err)
	}
	e.unchanged(before, "the store's change of code of an inactive location")
}

// TestSeed001Update: PATCH changes the given name and address fields,
// keeps the others and sets updatedAt.
func TestSeed001Update(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	body := locationBody("austin-main-01")
	body["addressComponents"] = map[string]string{"locality": "Austin"}
	var l location.Location
	e.ok(http.StatusCreated, "POST", "/locations", e.admin, body, &l)
	L := "/locations/" + l.LocationID

	var got location.Location
	e.ok(http.StatusOK, "PATCH", L, e.admin, map[string]any{"name": " Austin Downtown ", "lat": 30.5, "addressComponents": map[string]string{"locality": "Austin", "country": "US"}}, &got)
	want := l
	want.Name, want.Lat, want.AddressComponents, want.UpdatedAt = "Austin Downtown", 30.5, map[string]string{"locality": "Austin", "country": "US"}, got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" || got.UpdatedAt <= l.UpdatedAt {
		t.Errorf("patched (-want +got):\n%s", diff)
	}
	var read location.Location
	e.ok(http.StatusOK, "GET", L, e.user, nil, &read)
	if diff := cmp.Diff(got, read); diff != "" {
		t.Errorf("read after patch (-patch +get):\n%s", diff)
	}
	// Null keeps; {} removes the components (the attribute goes).
	e.ok(http.StatusOK, "PATCH", L, e.admin, `{"placeId":"ChIJ-new","formattedAddress":"2 Elm St","lng":-97.5,"name":null,"addressComponents":{}}`, &got)
	want.PlaceID, want.FormattedAddress, want.Lng, want.AddressComponents, want.UpdatedAt = "ChIJ-new", "2 Elm St", -97.5, nil, got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second patch (-want +got):\n%s", diff)
	}
	if _, ok := e.meta("LOCATION#" + l.LocationID)["addressComponents"]; ok {
		t.Error("addressComponents still stored")
	}
	e.ok(http.StatusOK, "GET", "/locations/by-code/austin-main-01", e.user, nil, &read)
	if diff := cmp.Diff(got, read); diff != "" {
		t.Errorf("by code after patch (-patch +get):\n%s", diff)
	}
	codes, _ := e.codes("order=code", 10)
	if diff := cmp.Diff([]string{"austin-main-01"}, codes); diff != "" {
		t.Errorf("listed after patch: %s", diff)
	}

	// Bad updates change nothing.
	before := e.snapshot()
	for _, c := range []struct {
		body   string
		fields map[string]string
	}{
		{`{}`, map[string]string{"body": ""}},
		{`{"name":null}`, map[string]string{"body": ""}},
		{`{"name":"  "}`, map[string]string{"name": "is required"}},
		{`{"lat":91,"lng":-181}`, map[string]string{"lat": "must be from -90 to 90", "lng": "must be from -180 to 180"}},
		{`{"lat":"30"}`, map[string]string{"lat": "must be a number"}},
		{`{"locationCode":"dallas-01"}`, map[string]string{"locationCode": "unknown field"}},
		{`{"status":"active"}`, map[string]string{"status": "unknown field"}},
		{`{"addressComponents":{"1st":"x"}}`, map[string]string{"addressComponents": ""}},
		{`{"addressComponents":{"city":""}}`, map[string]string{"addressComponents.city": "is required"}},
		{`{"name":"x"`, map[string]string{"body": ""}},
	} {
		e.problemReasons(e.do("PATCH", L, e.admin, c.body), http.StatusBadRequest, c.fields)
	}
	e.problem(e.do("PATCH", "/locations/LOC999", e.admin, map[string]any{"name": "x"}), http.StatusNotFound)
	e.unchanged(before, "bad updates")
}

// TestSeed001ChangeCode: PUT /locations/{id}/code moves the location to a
// new code in one transaction; a taken code changes nothing.
func TestSeed001ChangeCode(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	a, b := e.create("austin-main-01"), e.create("dallas-01")
	A := "/locations/" + a.LocationID

	// Taken (by an active or an inactive location): 409, nothing changes.
	e.create("houston-01")
	h, _ := e.st.Locations.GetLocationByCode(context.Background(), "houston-01")
	e.ok(http.StatusOK, "DELETE", "/locations/"+h.LocationID, e.admin, nil, nil)
	before := e.snapshot()
	for _, code := range []string{"dallas-01", "houston-01"} {
		if d := e.problem(e.do("PUT", A+"/code", e.admin, map[string]any{"locationCode": code}), http.StatusConflict).Detail; d != "code already taken: "+code {
			t.Errorf("taken %s: %q", code, d)
		}
	}
	// Its own code: nothing to do.
	var got location.Location
	e.ok(http.StatusOK, "PUT", A+"/code", e.admin, map[string]any{"locationCode": "austin-main-01"}, &got)
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("same code (-before +after):\n%s", diff)
	}
	if _, err := e.st.Locations.ChangeLocationCode(context.Background(), a, "austin-main-01", "2025-03-14T16:00:00.000Z"); err != nil {
		t.Errorf("store: change to the same code: %v", err)
	}
	for _, c := range []struct {
		body   string
		fields map[string]string
	}{
		{`{"locationCode":"Austin Main"}`, map[string]string{"locationCode": location.CodeRule}},
		{`{"locationCode":"a"}`, map[string]string{"locationCode": location.CodeRule}},
		{`{"locationCode":"` + strings.Repeat("a", 65) + `"}`, map[string]string{"locationCode": location.CodeRule}},
		{`{"locationCode":""}`, map[string]string{"locationCode": location.CodeRule}},
		{`{"locationCode":null}`, map[string]string{"locationCode": "must not be null"}},
		{`{}`, map[string]string{"locationCode": "is required"}},
		{`{"locationCode":"abc","locationId":"x"}`, map[string]string{"locationId": "unknown field"}},
		{``, map[string]string{"body": "a JSON object is required"}},
	} {
		e.problemReasons(e.do("PUT", A+"/code", e.admin, c.body), http.StatusBadRequest, c.fields)
	}
	e.problem(e.do("PUT", "/locations/LOC999/code", e.admin, map[string]any{"locationCode": "nowhere-01"}), http.StatusNotFound)
	e.unchanged(before, "refused changes of code")

	// A change: the new lookup claimed, the old one gone, the location
	// updated — all at once.
	e.ok(http.StatusOK, "PUT", A+"/code", e.admin, map[string]any{"locationCode": "austin-central-01"}, &got)
	want := a
	want.LocationCode, want.UpdatedAt = "austin-central-01", got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" || got.UpdatedAt <= a.UpdatedAt {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	items := byKey(e.scanItems(""))
	if _, ok := items["LOCATION_CODE#austin-main-01 META"]; ok {
		t.Error("the old lookup is still there")
	}
	if diff := cmp.Diff(map[string]string{"PK": "LOCATION_CODE#austin-central-01", "SK": "META", "itemType": "LocationCodeLookup",
		"locationId": a.LocationID, "locationCode": "austin-central-01", "createdAt": got.UpdatedAt}, strAttrs(t, items["LOCATION_CODE#austin-central-01 META"])); diff != "" {
		t.Errorf("new lookup (-want +got):\n%s", diff)
	}
	loc := items["LOCATION#"+a.LocationID+" META"]
	if str(loc, "locationCode") != "austin-central-01" || str(loc, "GSI2SK") != "CODE#austin-central-01" || str(loc, "updatedAt") != got.UpdatedAt {
		t.Errorf("location item %v", loc)
	}
	var read location.Location
	e.ok(http.StatusOK, "GET", "/locations/by-code/austin-central-01", e.user, nil, &read)
	if diff := cmp.Diff(got, read); diff != "" {
		t.Errorf("by new code (-put +get):\n%s", diff)
	}
	e.problem(e.do("GET", "/locations/by-code/austin-main-01", e.user, nil), http.StatusNotFound)
	codes, _ := e.codes("order=code", 2)
	if diff := cmp.Diff([]string{"austin-central-01", "dallas-01", "houston-01"}, codes); diff != "" {
		t.Errorf("by code after the change (-want +got):\n%s", diff)
	}
	// The old code is free again.
	c := e.create("austin-main-01")
	if c.LocationID == a.LocationID || c.LocationID == b.LocationID {
		t.Errorf("new location %+v", c)
	}

	// Two locations racing for one new code: one wins, the other is told
	// the code is taken; each keeps a lookup of its own.
	var wg sync.WaitGroup
	res := make([]response, 2)
	for i, id := range []string{b.LocationID, c.LocationID} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = e.do("PUT", "/locations/"+id+"/code", e.admin, map[string]any{"locationCode": "contested-01"})
		}()
	}
	wg.Wait()
	if res[0].status+res[1].status != http.StatusOK+http.StatusConflict {
		t.Fatalf("race for a code: %d %s / %d %s", res[0].status, res[0].body, res[1].status, res[1].body)
	}
	winner, loser, loserCode := b.LocationID, c.LocationID, "austin-main-01"
	if res[1].status == http.StatusOK {
		winner, loser, loserCode = c.LocationID, b.LocationID, "dallas-01"
	}
	if str(e.meta("LOCATION_CODE#contested-01"), "locationId") != winner || str(e.meta("LOCATION_CODE#"+loserCode), "locationId") != loser ||
		str(e.meta("LOCATION#"+loser), "locationCode") != loserCode {
		t.Errorf("after the race: %v", e.tableKeys())
	}
}

// TestSeed001ConcurrentCreate: concurrent creates of one code through HTTP:
// exactly one 201, the others 409, and only the winner's items exist.
func TestSeed001ConcurrentCreate(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, newULID)
	const n = 12
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := locationBody("race-01")
			body["name"] = fmt.Sprintf("Racer %d", i)
			res[i] = e.do("POST", "/locations", e.admin, body)
		}()
	}
	wg.Wait()
	var winner location.Location
	wins := 0
	for i, r := range res {
		switch r.status {
		case http.StatusCreated:
			wins++
			if err := json.Unmarshal(r.body, &winner); err != nil {
				t.Fatal(err)
			}
		case http.StatusConflict:
			if d := e.problem(r, http.StatusConflict).Detail; d != "code already taken: race-01" && !strings.Contains(d, "try again") {
				t.Errorf("create %d: %q", i, d)
			}
		default:
			t.Errorf("create %d: %d %s", i, r.status, r.body)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creates won, want exactly 1", wins)
	}
	if diff := cmp.Diff([]string{"LOCATION#" + winner.LocationID + " META", "LOCATION_CODE#race-01 META"}, e.tableKeys()); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	items := byKey(e.scanItems(""))
	if str(items["LOCATION_CODE#race-01 META"], "locationId") != winner.LocationID || str(items["LOCATION#"+winner.LocationID+" META"], "name") != winner.Name {
		t.Errorf("the items are not the winner's: %v", items)
	}
	var got location.Location
	e.ok(http.StatusOK, "GET", "/locations/by-code/race-01", e.user, nil, &got)
	if diff := cmp.Diff(winner, got); diff != "" {
		t.Errorf("by code (-winner +got):\n%s", diff)
	}
}

// TestSeed001BadInput: bad creates are 400 problem+json naming each bad
// field, and nothing is written.
func TestSeed001BadInput(t *testing.T) {
	t.Parallel()
	e := newLocEnv(t, sequence("LOC%03d"))
	rule := location.CodeRule
	with := func(changes map[string]any, drop ...string) map[string]any {
		b := locationBody("austin-main-01")
		for k, v := range changes {
			b[k] = v
		}
		for _, k := range drop {
			delete(b, k)
		}
		return b
	}
	for name, c := range map[string]struct {
		body   any
		fields map[string]string
	}{
		"code with a space":    {with(map[string]any{"locationCode": "Austin Main"}), map[string]string{"locationCode": rule}},
		"code of one letter":   {with(map[string]any{"locationCode": "a"}), map[string]string{"locationCode": rule}},
		"code of two letters":  {with(map[string]any{"locationCode": "ab"}), map[string]string{"locationCode": rule}},
		"code hyphens outside": {with(map[string]any{"locationCode": "-x-"}), map[string]string{"locationCode": rule}},
		"code double hyphen":   {with(map[string]any{"locationCode": "x--y"}), map[string]string{"locationCode": rule}},
		"code of 65":           {with(map[string]any{"locationCode": strings.Repeat("a", 65)}), map[string]string{"locationCode": rule}},
		"code upper case":      {with(map[string]any{"locationCode": "AUSTIN"}), map[string]string{"locationCode": rule}},
		"code with #":          {with(map[string]any{"locationCode": "a#b-c"}), map[string]string{"locationCode": rule}},
		"code empty":           {with(map[string]any{"locationCode": ""}), map[string]string{"locationCode": rule}},
		"lat 91":               {with(map[string]any{"lat": 91}), map[string]string{"lat": "must be from -90 to 90"}},
		"lat -91":              {with(map[string]any{"lat": -91}), map[string]string{"lat": "must be from -90 to 90"}},
		"lng 181":              {with(map[string]any{"lng": 181}), map[string]string{"lng": "must be from -180 to 180"}},
		"lat and lng":          {with(map[string]any{"lat": 90.0001, "lng": -180.5}), map[string]string{"lat": "must be from -90 to 90", "lng": "must be from -180 to 180"}},
		"unknown fields":       {with(map[string]any{"status": "inactive", "locationId": "x", "createdAt": "now"}), map[string]string{"status": "unknown field", "locationId": "unknown field", "createdAt": "unknown field"}},
		"wrong types": {with(map[string]any{"locationCode": 5, "name": []string{"a"}, "lat": "30.2", "lng": true, "addressComponents": "Austin"}),
			map[string]string{"locationCode": "must be a string", "name": "must be a string", "lat": "must be a number", "lng": "must be a number", "addressComponents": "must be an object"}},
		"component types":      {with(map[string]any{"addressComponents": map[string]any{"locality": 1, "zip": map[string]any{}}}), map[string]string{"addressComponents.locality": "must be a string", "addressComponents.zip": "must be a string"}},
		"component blank":      {with(map[string]any{"addressComponents": map[string]any{"locality": " "}}), map[string]string{"addressComponents.locality": "is required"}},
		"component key":        {with(map[string]any{"addressComponents": map[string]any{"post code": "78701", "2nd": "x"}}), map[string]string{"addressComponents": `key "2nd": 1-64 characters: letters, digits and _ (starting with a letter)`}},
		"missing name":         {with(nil, "name"), map[string]string{"name": "is required"}},
		"missing placeId":      {with(nil, "placeId"), map[string]string{"placeId": "is required"}},
		"missing name placeId": {with(nil, "name", "placeId"), map[string]string{"name": "is required", "placeId": "is required"}},
		"missing coordinates":  {with(nil, "lat", "lng"), map[string]string{"lat": "is required", "lng": "is required"}},
		"null name":            {with(map[string]any{"name": nil}), map[string]string{"name": "must not be null"}},
		"blank name":           {with(map[string]any{"name": " \t"}), map[string]string{"name": "is required"}},
		"long name":            {with(map[string]any{"name": strings.Repeat("n", 201)}), map[string]string{"name": "must be at most 200 characters"}},
		"blank address":        {with(map[string]any{"formattedAddress": ""}), map[string]string{"formattedAddress": "is required"}},
		"everything":           {map[string]any{"locationCode": "x--y", "lat": 91, "lng": 181, "colour": "red"}, map[string]string{"locationCode": rule, "name": "is required", "placeId": "is required", "formattedAddress": "is required", "lat": "must be from -90 to 90", "lng": "must be from -180 to 180", "colour": "unknown field"}},
		"empty body":           {``, map[string]string{"body": "a JSON object is required"}},
		"malformed":            {`{"locationCode":`, map[string]string{"body": ""}},
		"not an object":        {`["austin-main-01"]`, map[string]string{"body": ""}},
		"trailing data":        {`{"locationCode":"austin-main-01","name":"n","placeId":"p","formattedAddress":"f","lat":1,"lng":2} {}`, map[string]string{"body": ""}},
	} {
		t.Run(name, func(t *testing.T) {
			e := e.withT(t)
			e.problemReasons(e.do("POST", "/locations", e.admin, c.body), http.StatusBadRequest, c.fields)
		})
	}
	if diff := cmp.Diff([]string{}, e.tableKeys()); diff != "" {
		t.Errorf("bad creates wrote items:\n%s", diff)
	}
	// The same body without its faults is fine.
	e.create("austin-main-01")
}
