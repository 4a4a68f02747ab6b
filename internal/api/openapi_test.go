package api

// Tests of openapi.yaml: it is a valid document, it describes exactly the
// route table, the writer serves it, the validation in front of the handlers
// catches bad requests and names the fields as the handlers do, and every
// response of a walkthrough (the derived items included, from the real
// projector) matches the document.

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapiSource)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi %q, want 3.0.3", doc.OpenAPI)
	}
	bearer := doc.Components.SecuritySchemes["bearerAuth"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" || bearer.Value.BearerFormat != "JWT" {
		t.Errorf("bearerAuth scheme %+v", bearer)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("global security %+v, want bearerAuth", doc.Security)
	}
}

// TestOpenAPIRulesMatchTheHandlers: the document's rules are the handlers'
// constants.
func TestOpenAPIRulesMatchTheHandlers(t *testing.T) {
	t.Parallel()
	doc := newTestDoc(t)
	checkRules(t, map[string]docRule{
		"ListingStatus enum":      {enumStrings(doc.schema("ListingStatus").Enum), stringsOf(room.Statuses)},
		"ListingStatus x-reason":  {xReason(doc.schema("ListingStatus")), statusRule},
		"SearchType enum":         {enumStrings(doc.schema("SearchType").Enum), []string{room.SearchBuy, room.SearchRent}},
		"CombineMode enum":        {enumStrings(doc.schema("CombineMode").Enum), []string{string(room.ModeStrict), string(room.ModeAll), string(room.ModeMixed)}},
		"combineMode input enum":  {enumStrings(doc.prop("RoomContextInput", "combineMode").Enum), []string{string(room.ModeStrict), string(room.ModeAll), string(room.ModeMixed)}},
		"source enum":             {enumStrings(doc.prop("PutCriteriaRequest", "source").Enum), []string{room.SourceManual, room.SourceAIProposed}},
		"CriteriaSource enum":     {enumStrings(doc.schema("CriteriaSource").Enum), []string{room.SourceManual, room.SourceAIProposed}},
		"UserId x-reason":         {xReason(doc.schema("UserId")), auth.UserIDRule},
		"SourceBrand pattern":     {doc.schema("SourceBrand").Pattern, brandPattern.String()},
		"SourceBrand x-reason":    {xReason(doc.schema("SourceBrand")), brandRule},
		"externalId x-reason":     {xReason(doc.prop("AddListingRequest", "externalId")), externalIDRule},
		"externalId pattern":      {doc.prop("AddListingRequest", "externalId").Pattern, "^(" + strings.TrimSuffix(strings.TrimPrefix(externalIDPattern.String(), "^"), "$") + ")?$"},
		"name maxLength":          {*doc.prop("CreateRoomRequest", "name").MaxLength, uint64(maxName)},
		"description maxLength":   {*doc.prop("RoomContextInput", "description").MaxLength, uint64(maxDescription)},
		"set entries":             {*doc.prop("CriteriaInput", "locations").MaxItems, uint64(maxSetEntries)},
		"features entries":        {*doc.prop("CriteriaInput", "features").MaxItems, uint64(maxSetEntries)},
		"set entry maxLength":     {*doc.schema("SetEntry").MaxLength, uint64(maxSetEntry)},
		"title maxLength":         {*doc.prop("AddListingRequest", "title").MaxLength, uint64(maxTitle)},
		"location maxLength":      {*doc.prop("AddListingRequest", "location").MaxLength, uint64(maxLocation)},
		"url maxLength":           {*doc.prop("AddListingRequest", "url").MaxLength, uint64(maxURL)},
		"weight maximum":          {*doc.schema("WeightInput").Max, float64(room.MaxWeight)},
		"limit maximum":           {*doc.Components.Parameters["Limit"].Value.Schema.Value.Max, float64(store.MaxLimit)},
		"limit default":           {doc.Components.Parameters["Limit"].Value.Schema.Value.Default, float64(store.DefaultLimit)},
		"weight names":            {slices.Sorted(maps.Keys(doc.schema("WeightsInput").Properties)), slices.Sorted(slices.Values(room.CriterionNames))},
		"criteria out properties": {slices.Sorted(maps.Keys(doc.schema("Criteria").Properties)), slices.Sorted(maps.Keys(doc.schema("CriteriaInput").Properties))},
	})

	// The patterns accept and refuse what the handlers do.
	userID := regexp.MustCompile(doc.schema("UserId").Pattern)
	for _, id := range []string{"alice", "a", "A.b_c@d:e+f-g", strings.Repeat("x", 128), strings.Repeat("x", 129), "", "-a", "a#b", "a b", "é"} {
		if got, want := userID.MatchString(id), auth.ValidUserID(id); got != want {
			t.Errorf("user id %q: openapi.yaml says %v, auth.ValidUserID %v", id, got, want)
		}
	}
	ts := regexp.MustCompile(doc.schema("Timestamp").Pattern)
	now := store.Timestamp(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	if !ts.MatchString(now) || ts.MatchString("2026-01-02T15:04:05Z") || ts.MatchString("yesterday") {
		t.Errorf("Timestamp pattern %s vs %s", ts, now)
	}
	if doc.schema("AfterTimestamp").Pattern != doc.schema("Timestamp").Pattern {
		t.Error("AfterTimestamp and Timestamp patterns differ")
	}
}

// TestOpenAPIDescribesTheRouteTable: every route has exactly one operation
// and every operation a route; public routes need no token.
func TestOpenAPIDescribesTheRouteTable(t *testing.T) {
	t.Parallel()
	spec := testSpec(t)
	var table []string
	for _, rt := range routes {
		table = append(table, rt.pattern)
		op, err := spec.Route(rt.pattern)
		if err != nil {
			t.Error(err)
			continue
		}
		open := op.Operation.Security != nil && len(*op.Operation.Security) == 0
		if want := rt.access == public || rt.access == devOnly; open != want {
			t.Errorf("%s: security: [] is %v, want %v", rt.pattern, open, want)
		}
		// Path parameters as in the pattern.
		var inPattern, inSpec []string
		for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(rt.pattern, -1) {
			inPattern = append(inPattern, m[1])
		}
		for _, p := range slices.Concat(op.PathItem.Parameters, op.Operation.Parameters) {
			if p.Value.In == openapi3.ParameterInPath {
				inSpec = append(inSpec, p.Value.Name)
			}
		}
		sort.Strings(inPattern)
		sort.Strings(inSpec)
		if diff := cmp.Diff(inPattern, inSpec); diff != "" {
			t.Errorf("%s: path parameters (-pattern +openapi.yaml):\n%s", rt.pattern, diff)
		}
	}
	if len(routes) != len(slices.Compact(slices.Sorted(slices.Values(table)))) {
		t.Errorf("the route table repeats a pattern: %v", table)
	}
	var ops []string
	for path, item := range spec.Doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	sort.Strings(table)
	sort.Strings(ops)
	if diff := cmp.Diff(table, ops); diff != "" {
		t.Errorf("routes (-server.go +openapi.yaml):\n%s", diff)
	}
	if op, _ := spec.Route("POST /dev/tokens"); op == nil || op.Operation.Extensions["x-local-only"] != true {
		t.Error("POST /dev/tokens is not marked x-local-only")
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newOAEnv(t)
	r := e.ok(http.StatusOK, "GET", "/openapi.yaml", "", nil, nil)
	if ct := r.header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q", ct)
	}
	if !bytes.Equal(r.body, openapiSource) {
		t.Error("GET /openapi.yaml is not openapi.yaml")
	}
	r = e.ok(http.StatusOK, "GET", "/openapi.json", "", nil, nil)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(r.body)
	if err != nil {
		t.Fatalf("GET /openapi.json does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("GET /openapi.json is not valid: %v", err)
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(e.spec.Doc.Paths.Map())), slices.Sorted(maps.Keys(doc.Paths.Map()))); diff != "" {
		t.Errorf("JSON paths (-yaml +json):\n%s", diff)
	}
	if len(doc.Components.Schemas) != len(e.spec.Doc.Components.Schemas) {
		t.Errorf("JSON has %d schemas, YAML %d", len(doc.Components.Schemas), len(e.spec.Doc.Components.Schemas))
	}
	// A token makes no difference; other methods are 405.
	e.ok(http.StatusOK, "GET", "/openapi.json", "Bearer garbage", nil, nil)
	e.problem(e.do("POST", "/openapi.yaml", "", nil), http.StatusMethodNotAllowed, nil)
}

// TestOpenAPIValidatesRequests: the document, not only the handler, refuses
// bad requests, naming each bad field.
func TestOpenAPIValidatesRequests(t *testing.T) {
	t.Parallel()

	// Straight through validateRequest: what the document catches by itself.
	for _, tc := range []struct {
		name, pattern, path, body string
		want                      map[string]string
	}{
		{"wrong enum", "POST /rooms", "/rooms", `{"name":"n","searchType":"sell"}`,
			map[string]string{"searchType": `must be "buy" or "rent"`}},
		{"wrong nested enum", "POST /rooms", "/rooms", `{"name":"n","searchType":"buy","context":{"combineMode":"fast"}}`,
			map[string]string{"context.combineMode": `must be "strict", "all" or "mixed"`}},
		{"missing required", "POST /rooms", "/rooms", `{"searchType":"buy"}`, map[string]string{"name": "is required"}},
		{"blank", "POST /rooms", "/rooms", `{"name":"  ","searchType":"buy"}`, map[string]string{"name": "is required"}},
		{"too long in characters", "POST /rooms", "/rooms", `{"name":"` + strings.Repeat("é", 201) + `","searchType":"buy"}`,
			map[string]string{"name": "must be at most 200 characters"}},
		{"all at once", "POST /rooms", "/rooms", `{"searchType":"sell","colour":"red","context":{"familySize":0,"speed":1}}`,
			map[string]string{"name": "is required", "searchType": "", "colour": "unknown field", "context.familySize": "must be from 1 to 50", "context.speed": "unknown field"}},
		{"not an object", "POST /rooms", "/rooms", `[]`, map[string]string{"body": "must be an object"}},
		{"empty", "POST /rooms", "/rooms", ``, map[string]string{"body": "a JSON object is required"}},
		{"malformed", "POST /rooms", "/rooms", `{"name":`, map[string]string{"body": ""}},
		{"null required", "POST /rooms", "/rooms", `{"name":null,"searchType":"buy"}`, map[string]string{"name": "must not be null"}},
		{"criteria", "PUT /rooms/{roomId}/criteria", "/rooms/r1/criteria",
			`{"criteria":{"priceMin":-1,"locations":["ok",""],"features":[1,"x",2],"garden":true},"weights":{"area":2.5,"rooms":9},"source":"robot"}`,
			map[string]string{"criteria.priceMin": "must not be negative", "criteria.locations[1]": "is required", "criteria.features": "each entry must be a string",
				"criteria.garden": "unknown field", "weights.area": "must be an integer", "weights.rooms": "must be from 0 to 5", "source": `must be "manual" or "ai_proposed"`}},
		{"status", "PUT /rooms/{roomId}/listings/{listingId}/status", "/rooms/r1/listings/l1/status", `{"status":"SOLD"}`,
			map[string]string{"status": statusRule}},
		{"listing", "POST /rooms/{roomId}/listings", "/rooms/r1/listings", `{"sourceBrand":"Home Gate","externalId":"a b","title":"t","location":"l","url":"ftp://x","price":-1}`,
			map[string]string{"sourceBrand": brandRule, "externalId": externalIDRule, "url": "", "price": "must not be negative"}},
		{"limit 0", "GET /me/rooms", "/me/rooms?limit=0", ``, map[string]string{"limit": "must be an integer from 1 to 100"}},
		{"limit 101", "GET /rooms/{roomId}/members", "/rooms/r1/members?limit=101", ``, map[string]string{"limit": "must be an integer from 1 to 100"}},
		{"limit abc", "GET /rooms/{roomId}/activities", "/rooms/r1/activities?limit=abc&after=yesterday", ``,
			map[string]string{"limit": "must be an integer from 1 to 100", "after": ""}},
		{"status query", "GET /rooms/{roomId}/listings", "/rooms/r1/listings?status=seen", ``, map[string]string{"status": statusRule}},
		{"userId query", "GET /rooms/{roomId}/criteria", "/rooms/r1/criteria?userId=a%23b", ``, map[string]string{"userId": auth.UserIDRule}},
		{"lookup", "GET /rooms/{roomId}/listings/lookup", "/rooms/r1/listings/lookup?sourceBrand=X", ``,
			map[string]string{"sourceBrand": brandRule, "externalId": "is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(strings.SplitN(tc.pattern, " ", 2)[0], tc.path, strings.NewReader(tc.body))
			for _, p := range []string{"roomId", "listingId"} {
				if strings.Contains(tc.pattern, "{"+p+"}") {
					r.SetPathValue(p, "x")
				}
			}
			err := validated(t, tc.pattern, r)
			got := fieldsOf(t, err)
			want := maps.Clone(tc.want)
			for f, reason := range want {
				if reason == "" && got[f] != "" {
					want[f] = got[f]
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s\nerror: %v", diff, err)
			}
			// The handler still reads the whole body.
			if b, _ := io.ReadAll(r.Body); string(b) != tc.body && r.Method != "GET" {
				t.Errorf("body left for the handler %q, want %q", b, tc.body)
			}
		})
	}

	// Valid requests pass, including what the handlers accept: null or empty
	// optional members, any Content-Type, empty query parameters.
	for _, tc := range []struct{ pattern, path, body string }{
		{"POST /rooms", "/rooms", `{"name":"n","searchType":"buy","context":null}`},
		{"POST /rooms", "/rooms", `{"name":"n","searchType":"buy","context":{"description":null,"familySize":null,"combineMode":null}}`},
		{"POST /rooms", "/rooms", `{"name":"n","searchType":"buy","context":{"combineMode":""}}`},
		{"PUT /rooms/{roomId}/criteria", "/rooms/r1/criteria", `{"criteria":{},"weights":null,"source":""}`},
		{"PUT /rooms/{roomId}/criteria", "/rooms/r1/criteria", `{"criteria":{"locations":null,"priceMin":0,"priceMax":0},"weights":{"area":5,"price":0}}`},
		{"POST /rooms/{roomId}/listings", "/rooms/r1/listings", `{"sourceBrand":"homegate","externalId":"","title":"t","location":"l","url":"","price":null}`},
		{"POST /rooms/{roomId}/listings", "/rooms/r1/listings", `{"sourceBrand":"homegate","externalId":"NH.5:a_b-c","title":"t","location":"l","url":"HTTPS://example.com"}`},
		{"GET /me/rooms", "/me/rooms?limit=&cursor=", ``},
		{"GET /rooms/{roomId}/listings", "/rooms/r1/listings?status=&limit=100", ``},
		{"GET /rooms/{roomId}/activities", "/rooms/r1/activities?after=", ``},
		{"GET /rooms/{roomId}/activities", "/rooms/r1/activities?after=2026-01-02T15:04:05.000Z", ``},
		{"POST /dev/tokens", "/dev/tokens", `{"userId":"bob","groups":null}`},
	} {
		r := httptest.NewRequest(strings.SplitN(tc.pattern, " ", 2)[0], tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "text/plain")
		r.SetPathValue("roomId", "r1")
		if err := validated(t, tc.pattern, r); err != nil {
			t.Errorf("%s %s: %v", tc.pattern, tc.body, err)
		}
	}

	// Through HTTP: 400 problem+json; the token first, and a caller who may
	// not use the room gets the handler's 404 or 403 even for a bad request.
	e := newOAEnv(t)
	alice, bob, carol := e.token("alice"), e.token("bob"), e.token("carol")
	var rm room.Room
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "n", "searchType": "buy"}, &rm)
	R := "/rooms/" + rm.RoomID
	e.ok(http.StatusCreated, "POST", R+"/members", alice, map[string]any{"userId": "bob"}, nil)
	e.problem(e.do("POST", "/rooms", alice, `{"name":"n","searchType":"sell","colour":1}`), 400,
		map[string]string{"searchType": `must be "buy" or "rent"`, "colour": "unknown field"})
	e.problem(e.do("POST", "/rooms", "", `{"searchType":"sell"}`), 401, nil)
	e.problem(e.do("GET", R+"/members?limit=0", alice, nil), 400, map[string]string{"limit": "must be an integer from 1 to 100"})
	e.problem(e.do("GET", R+"/members?limit=0", carol, nil), 404, nil)
	e.problem(e.do("GET", "/rooms/nope/members?limit=0", alice, nil), 404, nil)
	e.problem(e.do("PUT", R+"/criteria", carol, `{"criteria":{"priceMin":-1}}`), 404, nil)
	e.problem(e.do("PUT", R+"/criteria", bob, `{"criteria":{"priceMin":-1}}`), 400, map[string]string{"criteria.priceMin": "must not be negative"})
	e.problem(e.do("PATCH", R, bob, `{"context":{"combineMode":"fast"}}`), 403, nil)
	e.problem(e.do("PATCH", R, alice, `{"context":{"combineMode":"fast"}}`), 400, map[string]string{"context.combineMode": ""})
	e.problem(e.do("POST", R+"/members", bob, `{"userId":"a#b"}`), 403, nil)
	e.problem(e.do("POST", R+"/members", alice, `{"userId":"a#b"}`), 400, map[string]string{"userId": auth.UserIDRule})
	e.problem(e.do("POST", "/rooms", alice, `{"name":"n","searchType":"buy","big":"`+strings.Repeat("x", maxBody)+`"}`), 400,
		map[string]string{"body": fmt.Sprintf("larger than %d bytes", maxBody)})
	// The handler's own checks stay behind the document's, as
	// docs/walkthrough.md (Bad input) says: every field the document
	// refuses comes in one 400; a rule across fields (a minimum above its
	// maximum) in the next, once the document's are met.
	e.problem(e.do("PUT", R+"/criteria", bob, `{"criteria":{"priceMin":3,"priceMax":2,"roomsMin":-1},"source":"robot"}`), 400,
		map[string]string{"criteria.roomsMin": "must not be negative", "source": `must be "manual" or "ai_proposed"`})
	e.problem(e.do("PUT", R+"/criteria", bob, `{"criteria":{"priceMin":3,"priceMax":2,"roomsMin":4,"roomsMax":1}}`), 400,
		map[string]string{"criteria.priceMin": "must not exceed priceMax", "criteria.roomsMin": "must not exceed roomsMax"})
}

// TestOpenAPIResponses: every response of a walkthrough matches the
// document (checked in oaEnv.do), derived items included.
func TestOpenAPIResponses(t *testing.T) {
	t.Parallel()
	e := newOAEnv(t)
	e.ok(http.StatusOK, "GET", "/healthz", "", nil, nil)
	alice, bob := e.token("alice"), e.token("bob")
	e.problem(e.do("POST", "/dev/tokens", "", `{}`), 400, map[string]string{"userId": "is required"})

	var rm room.Room
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "Flat", "searchType": "rent", "context": map[string]any{"description": "d", "familySize": 3}}, &rm)
	R := "/rooms/" + rm.RoomID
	e.ok(http.StatusCreated, "POST", "/rooms", alice, map[string]any{"name": "Other", "searchType": "buy"}, nil)
	e.ok(http.StatusOK, "GET", R, alice, nil, nil)
	e.ok(http.StatusOK, "GET", "/me/rooms?limit=1", alice, nil, nil)
	e.ok(http.StatusCreated, "POST", R+"/members", alice, map[string]any{"userId": "bob"}, nil)
	e.ok(http.StatusCreated, "POST", R+"/members", alice, map[string]any{"userId": "bob"}, nil) // again: the same success
	e.problem(e.do("POST", R+"/members", bob, map[string]any{"userId": "carol"}), 403, nil)
	e.ok(http.StatusOK, "GET", R+"/members", bob, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/members/bob", alice, nil, nil)
	e.problem(e.do("GET", R, "", nil), 401, nil)
	e.problem(e.do("GET", "/rooms/nope", alice, nil), 404, nil)

	e.ok(http.StatusCreated, "PUT", R+"/criteria", alice, map[string]any{
		"criteria": map[string]any{"locations": []string{"Zurich", "Basel"}, "priceMin": 1500, "priceMax": 3000, "roomsMin": 3, "features": []string{"balcony"}},
		"weights":  map[string]any{"price": 5},
	}, nil)
	e.ok(http.StatusCreated, "PUT", R+"/criteria", bob, map[string]any{
		"criteria": map[string]any{"locations": []string{"Zurich"}, "priceMin": 2000, "priceMax": 3500, "roomsMax": 2, "areaMin": 60},
		"source":   "ai_proposed",
	}, nil)
	e.ok(http.StatusOK, "GET", R+"/criteria", alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/criteria?userId=alice&limit=1", alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/criteria/latest", bob, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/criteria/latest?userId=alice", bob, nil, nil)
	e.problem(e.do("GET", R+"/criteria/latest?userId=carol", bob, nil), 404, nil)
	e.problem(e.do("GET", R+"/combined-criteria", alice, nil), 404, nil)

	// Listings.
	var l1, l2 room.Listing
	e.ok(http.StatusCreated, "POST", R+"/listings", bob, map[string]any{
		"sourceBrand": "homegate", "externalId": "HG-1", "title": "Flat", "location": "Zurich", "url": "https://example.com/1", "price": 2500, "rooms": 3.5, "area": 80,
	}, &l1)
	e.ok(http.StatusCreated, "POST", R+"/listings", alice, map[string]any{"sourceBrand": "newhome", "title": "House", "location": "Basel"}, &l2)
	dup := e.problem(e.do("POST", R+"/listings", alice, map[string]any{"sourceBrand": "homegate", "externalId": "HG-1", "title": "Again", "location": "Zurich"}), 409, nil)
	if dup["existingListingId"] != l1.ListingID {
		t.Errorf("duplicate listing: existingListingId %v, want %s", dup["existingListingId"], l1.ListingID)
	}
	e.ok(http.StatusOK, "GET", R+"/listings/"+l1.ListingID, alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/listings", alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/listings?status=UNSEEN&limit=1", alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/listings/lookup?sourceBrand=homegate&externalId=HG-1", alice, nil, nil)
	e.problem(e.do("GET", R+"/listings/lookup?sourceBrand=homegate&externalId=HG-2", alice, nil), 404, nil)
	e.ok(http.StatusOK, "PUT", R+"/listings/"+l1.ListingID+"/status", alice, map[string]any{"status": "SHORTLISTED"}, nil)
	e.problem(e.do("PUT", R+"/listings/"+l1.ListingID+"/status", alice, map[string]any{"status": "UNSEEN"}), 409, nil)
	e.ok(http.StatusOK, "POST", R+"/listings/"+l2.ListingID+"/seen", bob, nil, nil)
	e.problem(e.do("POST", R+"/listings/nope/seen", bob, nil), 404, nil)

	// Derived items, from the real projector.
	e.project()
	e.ok(http.StatusOK, "GET", R+"/combined-criteria", alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/compatibility", alice, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/compatibility/history", alice, nil, nil)
	var acts struct{ Items []room.Activity }
	e.ok(http.StatusOK, "GET", R+"/activities", bob, nil, &acts)
	if len(acts.Items) < 5 {
		t.Fatalf("%d activities, want the feed of the walkthrough", len(acts.Items))
	}
	e.ok(http.StatusOK, "GET", R+"/activities?limit=2&after="+url.QueryEscape(acts.Items[len(acts.Items)-1].CreatedAt), bob, nil, nil)

	// The context, members leaving, the room's deletion.
	e.ok(http.StatusOK, "PATCH", R, alice, map[string]any{"context": map[string]any{"combineMode": "strict"}}, nil)
	e.problem(e.do("DELETE", R+"/members/alice", alice, nil), 409, nil)
	r := e.do("DELETE", R+"/members/bob", bob, nil)
	if r.status != http.StatusNoContent {
		t.Errorf("leave: %d %s", r.status, r.body)
	}
	e.problem(e.do("DELETE", R, bob, nil), 404, nil)
	e.ok(http.StatusAccepted, "DELETE", R, alice, nil, nil)
}
