package api

// Tests of openapi.yaml for the location routes (seed 001): the document's
// rules are the handlers', its validation names the fields as the handlers
// do (and lets through what they accept), non-admins get 403 before any
// 400, and every response of a locations walkthrough matches the document.

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/location"
)

// asJSON is a schema as JSON, to compare schemas.
func asJSON(t *testing.T, s *openapi3.Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonNames lists the JSON member names of a struct type, sorted.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func TestOpenAPILocationRulesMatchTheHandlers(t *testing.T) {
	t.Parallel()
	doc := newTestDoc(t)
	comps := doc.prop("CreateLocationRequest", "addressComponents")
	for _, p := range []string{"addressComponents", "lat", "lng"} {
		// The same rules in both requests (nullable in the update).
		want := *doc.prop("CreateLocationRequest", p)
		want.Nullable, want.Description = true, ""
		got := *doc.prop("UpdateLocationRequest", p)
		got.Description = ""
		if diff := cmp.Diff(asJSON(t, &want), asJSON(t, &got)); diff != "" {
			t.Errorf("%s: create and update differ (-create +update):\n%s", p, diff)
		}
	}
	checkRules(t, map[string]docRule{
		"code x-reason":            {xReason(doc.schema("LocationCode")), location.CodeRule},
		"code format":              {doc.schema("LocationCode").Format, "location-code"},
		"code path parameter":      {asJSON(t, doc.Components.Parameters["LocationCodePath"].Value.Schema.Value), asJSON(t, doc.schema("LocationCode"))},
		"status enum":              {enumStrings(doc.schema("LocationStatus").Enum), []string{location.Active, location.Inactive}},
		"status query enum":        {asJSON(t, doc.Components.Parameters["LocationStatusQuery"].Value.Schema.Value), asJSON(t, doc.schema("LocationStatus"))},
		"order enum":               {enumStrings(doc.Components.Parameters["LocationOrderQuery"].Value.Schema.Value.Enum), []string{orderNewest, orderCode}},
		"name maxLength":           {*doc.prop("CreateLocationRequest", "name").MaxLength, uint64(maxName)},
		"placeId maxLength":        {*doc.prop("CreateLocationRequest", "placeId").MaxLength, uint64(maxPlaceID)},
		"address maxLength":        {*doc.prop("CreateLocationRequest", "formattedAddress").MaxLength, uint64(maxAddress)},
		"update name maxLength":    {*doc.prop("UpdateLocationRequest", "name").MaxLength, uint64(maxName)},
		"update placeId maxLength": {*doc.prop("UpdateLocationRequest", "placeId").MaxLength, uint64(maxPlaceID)},
		"update address maxLength": {*doc.prop("UpdateLocationRequest", "formattedAddress").MaxLength, uint64(maxAddress)},
		"components maxProperties": {*comps.MaxProps, uint64(maxComponents)},
		"component maxLength":      {*comps.AdditionalProperties.Schema.Value.MaxLength, uint64(maxComponentValue)},
		"lat range":                {[]float64{*doc.prop("CreateLocationRequest", "lat").Min, *doc.prop("CreateLocationRequest", "lat").Max}, []float64{-90, 90}},
		"lng range":                {[]float64{*doc.prop("CreateLocationRequest", "lng").Min, *doc.prop("CreateLocationRequest", "lng").Max}, []float64{-180, 180}},
		"create members":           {slices.Sorted(maps.Keys(doc.schema("CreateLocationRequest").Properties)), jsonNames(reflect.TypeFor[createLocationRequest]())},
		"create required":          {slices.Sorted(slices.Values(doc.schema("CreateLocationRequest").Required)), []string{"formattedAddress", "lat", "lng", "locationCode", "name", "placeId"}},
		"update members":           {slices.Sorted(maps.Keys(doc.schema("UpdateLocationRequest").Properties)), jsonNames(reflect.TypeFor[updateLocationRequest]())},
		"change members":           {slices.Sorted(maps.Keys(doc.schema("ChangeLocationCodeRequest").Properties)), jsonNames(reflect.TypeFor[changeCodeRequest]())},
		"location members":         {slices.Sorted(maps.Keys(doc.schema("Location").Properties)), jsonNames(reflect.TypeFor[location.Location]())},
	})

	// The code schema (pattern and format, as validated) accepts exactly
	// what location.ValidCode does; its pattern alone is the slug.
	code := doc.schema("LocationCode")
	slug := regexp.MustCompile(code.Pattern)
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	own := spec.schemas["LocationCode"]
	for _, s := range []string{"austin-main-01", "abc", "a-b", "a1", "a", "", "Austin Main", "austin main", "-x-", "x-", "-x", "x--y", "a_b", "ab#c",
		"é-ab", "ABC", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a-", 32) + "b", strings.Repeat("ab-", 21) + "a", "01arz3ndektsv4rrffq69g5fav"} {
		var v visitor
		v.visit(own, s, nil)
		err := v.errs
		if got, want := len(err) == 0, location.ValidCode(s); got != want {
			t.Errorf("code %q: openapi.yaml accepts %v, location.ValidCode %v (%v)", s, got, want, err)
		}
		if inRange := len(s) >= 3 && len(s) <= 64; inRange && slug.MatchString(s) != location.ValidCode(s) {
			t.Errorf("code %q: the pattern says %v, location.ValidCode %v", s, slug.MatchString(s), location.ValidCode(s))
		}
	}

	// Every location write is an admin route of the table, every read a
	// user's.
	for _, rt := range routes {
		if !strings.HasPrefix(rt.pattern, "GET /locations") && strings.Contains(rt.pattern, " /locations") && rt.access != admin {
			t.Errorf("%s: access %d, want admin", rt.pattern, rt.access)
		}
		if strings.HasPrefix(rt.pattern, "GET /locations") && rt.access != user {
			t.Errorf("%s: access %d, want user", rt.pattern, rt.access)
		}
	}
}

// TestOpenAPILocationsValidatesRequests: the document refuses bad location
// requests naming each field as the handlers do, and lets through what
// they accept.
func TestOpenAPILocationsValidatesRequests(t *testing.T) {
	t.Parallel()
	const ok = `"locationCode":"austin-main-01","name":"Austin","placeId":"ChIJ1","formattedAddress":"1 Main St"`
	rule := location.CodeRule
	for _, tc := range []struct {
		name, pattern, path, body string
		want                      map[string]string
	}{
		{"missing", "POST /locations", "/locations", `{}`, map[string]string{
			"locationCode": "is required", "name": "is required", "placeId": "is required", "formattedAddress": "is required", "lat": "is required", "lng": "is required"}},
		{"code with a space", "POST /locations", "/locations", `{` + ok[len(`"locationCode":"austin-main-01",`):] + `,"locationCode":"Austin Main","lat":1,"lng":2}`,
			map[string]string{"locationCode": rule}},
		{"code too short", "POST /locations", "/locations", `{"locationCode":"a","name":"n","placeId":"p","formattedAddress":"f","lat":1,"lng":2}`,
			map[string]string{"locationCode": rule}},
		{"code hyphens", "PUT /locations/{locationId}/code", "/locations/l1/code", `{"locationCode":"-x-"}`, map[string]string{"locationCode": rule}},
		{"code double hyphen", "PUT /locations/{locationId}/code", "/locations/l1/code", `{"locationCode":"x--y"}`, map[string]string{"locationCode": rule}},
		{"code too long", "PUT /locations/{locationId}/code", "/locations/l1/code", `{"locationCode":"` + strings.Repeat("a", 65) + `"}`, map[string]string{"locationCode": rule}},
		{"code type", "PUT /locations/{locationId}/code", "/locations/l1/code", `{"locationCode":7,"status":"x"}`,
			map[string]string{"locationCode": "must be a string", "status": "unknown field"}},
		{"code missing", "PUT /locations/{locationId}/code", "/locations/l1/code", `{}`, map[string]string{"locationCode": "is required"}},
		{"ranges", "POST /locations", "/locations", `{` + ok + `,"lat":91,"lng":-181}`,
			map[string]string{"lat": "must be from -90 to 90", "lng": "must be from -180 to 180"}},
		{"types", "POST /locations", "/locations", `{"locationCode":1,"name":true,"placeId":[],"formattedAddress":{},"addressComponents":[],"lat":"30","lng":null}`,
			map[string]string{"locationCode": "must be a string", "name": "must be a string", "placeId": "must be a string", "formattedAddress": "must be a string",
				"addressComponents": "must be an object", "lat": "must be a number", "lng": "must not be null"}},
		{"blank and unknown", "POST /locations", "/locations", `{"locationCode":"abc","name":" ","placeId":"","formattedAddress":"\t","lat":0,"lng":0,"status":"active","id":"x"}`,
			map[string]string{"name": "is required", "placeId": "is required", "formattedAddress": "is required", "status": "unknown field", "id": "unknown field"}},
		{"too long", "POST /locations", "/locations", `{"locationCode":"abc","name":"` + strings.Repeat("é", 201) + `","placeId":"` + strings.Repeat("p", 301) +
			`","formattedAddress":"` + strings.Repeat("f", 501) + `","lat":0,"lng":0}`,
			map[string]string{"name": "must be at most 200 characters", "placeId": "must be at most 300 characters", "formattedAddress": "must be at most 500 characters"}},
		{"components", "POST /locations", "/locations", `{` + ok + `,"lat":0,"lng":0,"addressComponents":{"city":5,"zip":" ","country":null,"street":"` + strings.Repeat("s", 201) + `"}}`,
			map[string]string{"addressComponents.city": "must be a string", "addressComponents.zip": "is required", "addressComponents.country": "must not be null",
				"addressComponents.street": "must be at most 200 characters"}},
		{"too many components", "POST /locations", "/locations", `{` + ok + `,"lat":0,"lng":0,"addressComponents":{` + manyComponents(31) + `}}`,
			map[string]string{"addressComponents": "must have at most 30 entries"}},
		{"update", "PATCH /locations/{locationId}", "/locations/l1", `{"name":"","lat":-91,"lng":"x","locationCode":"abc"}`,
			map[string]string{"name": "is required", "lat": "must be from -90 to 90", "lng": "must be a number", "locationCode": "unknown field"}},
		{"update components", "PATCH /locations/{locationId}", "/locations/l1", `{"addressComponents":{"city":""}}`,
			map[string]string{"addressComponents.city": "is required"}},
		{"list", "GET /locations", "/locations?status=deleted&order=name&limit=0", ``,
			map[string]string{"status": `must be "active" or "inactive"`, "order": `must be "newest" or "code"`, "limit": "must be an integer from 1 to 100"}},
		{"by code", "GET /locations/by-code/{code}", "/locations/by-code/Austin", ``, map[string]string{"code": rule}},
		{"by code short", "GET /locations/by-code/{code}", "/locations/by-code/ab", ``, map[string]string{"code": rule}},
		{"not an object", "PATCH /locations/{locationId}", "/locations/l1", `[]`, map[string]string{"body": "must be an object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fieldsOf(t, validated(t, tc.pattern, specRequest(tc.pattern, tc.path, tc.body)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}

	// What the handlers accept passes: null optional members, {} (the
	// handler says what is missing), the limits exactly, empty queries.
	for _, tc := range []struct{ pattern, path, body string }{
		{"POST /locations", "/locations", `{` + ok + `,"lat":90,"lng":-180,"addressComponents":null}`},
		{"POST /locations", "/locations", `{` + ok + `,"lat":-90.0,"lng":180,"addressComponents":{}}`},
		{"POST /locations", "/locations", `{"locationCode":"` + strings.Repeat("a", 64) + `","name":"` + strings.Repeat("😀", 200) + `","placeId":"p","formattedAddress":"f","lat":0,"lng":0,"addressComponents":{` + manyComponents(30) + `}}`},
		{"PATCH /locations/{locationId}", "/locations/l1", `{}`},
		{"PATCH /locations/{locationId}", "/locations/l1", `{"name":null,"placeId":null,"formattedAddress":null,"addressComponents":null,"lat":null,"lng":null}`},
		{"PATCH /locations/{locationId}", "/locations/l1", `{"name":"N","lat":-90,"lng":180,"addressComponents":{"locality":"Austin"}}`},
		{"PUT /locations/{locationId}/code", "/locations/l1/code", `{"locationCode":"abc"}`},
		{"GET /locations", "/locations?status=&order=&limit=&cursor=", ``},
		{"GET /locations", "/locations?status=inactive&order=code&limit=100", ``},
		{"GET /locations", "/locations?status=active&order=newest", ``},
		{"GET /locations/by-code/{code}", "/locations/by-code/austin-main-01", ``},
	} {
		r := specRequest(tc.pattern, tc.path, tc.body)
		r.Header.Set("Content-Type", "text/plain")
		if err := validated(t, tc.pattern, r); err != nil {
			t.Errorf("%s %s %.80s: %v", tc.pattern, tc.path, tc.body, err)
		}
	}
}

// manyComponents is n address components, c00 to c<n-1>, as JSON members.
func manyComponents(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"c`+string(rune('a'+i/10))+string(rune('0'+i%10))+`":"v"`)
	}
	return strings.Join(parts, ",")
}

// TestOpenAPILocationsResponses: every response of a locations walkthrough,
// errors included, matches the document (checked in oaEnv.do); a caller who
// is not an admin gets 403 before any 400.
func TestOpenAPILocationsResponses(t *testing.T) {
	t.Parallel()
	e := newOAEnv(t)
	admin, bob := e.mint(map[string]any{"userId": "ada", "groups": []string{"admins"}}), e.token("bob")
	body := map[string]any{"locationCode": "austin-main-01", "name": "Austin Main Center", "placeId": "ChIJN1t_tDeuEmsRUsoyG83frY4",
		"formattedAddress": "123 Main St, Austin, TX 78701", "addressComponents": map[string]string{"locality": "Austin", "postal_code": "78701"},
		"lat": 30.2672, "lng": -97.7431}
	var l struct{ LocationID string }
	r := e.ok(http.StatusCreated, "POST", "/locations", admin, body, &l)
	if loc := r.header.Get("Location"); loc != "/locations/"+l.LocationID {
		t.Errorf("Location %q", loc)
	}
	L := "/locations/" + l.LocationID
	e.ok(http.StatusCreated, "POST", "/locations", admin, map[string]any{"locationCode": "dallas-01", "name": "Dallas", "placeId": "p2", "formattedAddress": "2 Elm St", "lat": 0, "lng": 0}, nil)
	e.ok(http.StatusCreated, "POST", "/locations", admin, body, nil) // again (a retry): the same location
	e.problem(e.do("POST", "/locations", admin, map[string]any{"locationCode": "dallas-01", "name": "Dallas 2", "placeId": "p3", "formattedAddress": "3 Elm St", "lat": 0, "lng": 0}), 409, nil)
	e.problem(e.do("POST", "/locations", bob, body), 403, nil)
	e.problem(e.do("POST", "/locations", bob, `{"locationCode":"Austin Main"}`), 403, nil)
	e.problem(e.do("POST", "/locations", "", body), 401, nil)
	e.problem(e.do("POST", "/locations", admin, `{"locationCode":"Austin Main","name":"n","placeId":"p","formattedAddress":"f","lat":91,"lng":0}`), 400,
		map[string]string{"locationCode": location.CodeRule, "lat": "must be from -90 to 90"})
	e.problem(e.do("POST", "/locations", admin, `{"locationCode":"abc","name":"n","placeId":"p","formattedAddress":"f","lat":1,"lng":0,"addressComponents":{"bad key":"x"}}`), 400,
		map[string]string{"addressComponents": `key "bad key": ` + componentKeyRule})

	e.ok(http.StatusOK, "GET", L, bob, nil, nil)
	e.problem(e.do("GET", "/locations/nope", bob, nil), 404, nil)
	e.ok(http.StatusOK, "GET", "/locations/by-code/austin-main-01", bob, nil, nil)
	e.problem(e.do("GET", "/locations/by-code/nowhere", bob, nil), 404, nil)
	e.problem(e.do("GET", "/locations/by-code/No", bob, nil), 400, map[string]string{"code": location.CodeRule})
	e.ok(http.StatusOK, "GET", "/locations?limit=1", bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/locations?order=code&status=active", bob, nil, nil)
	e.problem(e.do("GET", "/locations?order=name", bob, nil), 400, map[string]string{"order": `must be "newest" or "code"`})
	e.problem(e.do("GET", "/locations?cursor=garbage", bob, nil), 400, map[string]string{"cursor": ""})

	e.ok(http.StatusOK, "PATCH", L, admin, map[string]any{"name": "Austin Main", "addressComponents": map[string]string{}}, nil)
	e.problem(e.do("PATCH", L, admin, `{}`), 400, map[string]string{"body": ""})
	e.problem(e.do("PATCH", L, bob, `{"name":""}`), 403, nil)
	e.problem(e.do("PATCH", "/locations/nope", admin, `{"name":"x"}`), 404, nil)
	e.ok(http.StatusOK, "PUT", L+"/code", admin, map[string]any{"locationCode": "austin-main-02"}, nil)
	e.ok(http.StatusOK, "PUT", L+"/code", admin, map[string]any{"locationCode": "austin-main-02"}, nil)
	e.problem(e.do("PUT", L+"/code", admin, map[string]any{"locationCode": "dallas-01"}), 409, nil)
	e.problem(e.do("PUT", L+"/code", bob, `{"locationCode":"-x-"}`), 403, nil)
	e.problem(e.do("PUT", L+"/code", admin, `{"locationCode":"-x-"}`), 400, map[string]string{"locationCode": location.CodeRule})
	e.ok(http.StatusOK, "DELETE", L, admin, nil, nil)
	e.problem(e.do("DELETE", L, admin, nil), 409, nil)
	e.problem(e.do("DELETE", L, bob, nil), 403, nil)
	e.problem(e.do("PATCH", L, admin, map[string]any{"name": "x"}), 409, nil)
	e.problem(e.do("PUT", L+"/code", admin, map[string]any{"locationCode": "austin-main-03"}), 409, nil)
	e.ok(http.StatusOK, "GET", "/locations?status=inactive", bob, nil, nil)
	e.problem(e.do("POST", "/locations/"+l.LocationID, admin, nil), 405, nil)
}
