package api

// The harness of the internal tests of openapi.yaml: the document and its
// components, the fields of an invalid-input error, and the writer on a
// fresh DynamoDB Local table, over HTTP, whose every response is checked
// against the document. What the external tests' harness (harness_test.go)
// shares with it is exported: FixedClock, RequestBody, RoundTrip and
// CheckReasons. (TestMain is the external tests'.)

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/api/internal/kinref"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// testSpec is openapi.yaml loaded by kin-openapi: the tests read its rules
// and check responses with it (the program validates requests with its
// own loader, loadSpec).
func testSpec(t *testing.T) *kinref.Spec {
	t.Helper()
	spec, err := kinref.Load(openapiSource)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// xReason is a kin-openapi schema's x-reason.
func xReason(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	r, _ := s.Extensions["x-reason"].(string)
	return r
}

// testDoc is the document, with lookups of its components that fail the
// test when one is missing.
type testDoc struct {
	t *testing.T
	*openapi3.T
}

func newTestDoc(t *testing.T) testDoc {
	t.Helper()
	return testDoc{t: t, T: testSpec(t).Doc}
}

// schema is a component schema.
func (d testDoc) schema(name string) *openapi3.Schema {
	d.t.Helper()
	s := d.Components.Schemas[name]
	if s == nil {
		d.t.Fatalf("no schema %s", name)
	}
	return s.Value
}

// prop is a property of a component schema.
func (d testDoc) prop(schemaName, p string) *openapi3.Schema {
	d.t.Helper()
	s := d.schema(schemaName).Properties[p]
	if s == nil {
		d.t.Fatalf("no property %s.%s", schemaName, p)
	}
	return s.Value
}

// param is the schema of a component parameter.
func (d testDoc) param(name string) *openapi3.Schema {
	d.t.Helper()
	p := d.Components.Parameters[name]
	if p == nil {
		d.t.Fatalf("no parameter %s", name)
	}
	return p.Value.Schema.Value
}

// enumStrings are the non-empty strings of an enum.
func enumStrings(vs []any) []string {
	var out []string
	for _, v := range vs {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// docRule is a rule of the document (got) and the handler's (want).
type docRule struct{ got, want any }

// checkRules checks that each rule of the document is the handler's.
func checkRules(t *testing.T, rules map[string]docRule) {
	t.Helper()
	for name, c := range rules {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-handler +openapi.yaml):\n%s", name, diff)
		}
	}
}

// specRequest is a request to the route of pattern at path, with the path
// values that path gives the route's wildcards.
func specRequest(pattern, path, body string) *http.Request {
	method, route, _ := strings.Cut(pattern, " ")
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	segs := strings.Split(r.URL.Path, "/")
	for i, seg := range strings.Split(route, "/") {
		if strings.HasPrefix(seg, "{") && i < len(segs) {
			r.SetPathValue(strings.Trim(seg, "{}"), segs[i])
		}
	}
	return r
}

// validated validates r with the document's operation for pattern.
func validated(t *testing.T, pattern string, r *http.Request) error {
	t.Helper()
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	op, err := spec.route(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return validateRequest(r, op)
}

// stringsOf is a list of string-based values as plain strings.
func stringsOf[S ~string](vs []S) []string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v))
	}
	return out
}

// fieldsOf returns the fields of an invalid-input error, by name.
func fieldsOf(t *testing.T, err error) map[string]string {
	t.Helper()
	if err == nil {
		return map[string]string{}
	}
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.Invalid {
		t.Fatalf("error %v is not an invalid-input error", err)
	}
	return reasonsOf(t, e.Fields)
}

// reasonsOf maps each invalid field to its reason; a field must be named
// once.
func reasonsOf(t testing.TB, fields []errs.FieldError) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, f := range fields {
		if _, dup := got[f.Field]; dup {
			t.Errorf("field %s reported twice", f.Field)
		}
		got[f.Field] = f.Reason
	}
	return got
}

// CheckReasons checks that a problem names exactly the invalid fields of
// want, each once, with want's reason ("" for any). It is exported for the
// harness of the external tests as well.
func CheckReasons(t testing.TB, fields []errs.FieldError, want map[string]string, body []byte) {
	t.Helper()
	got := reasonsOf(t, fields)
	w := map[string]string{}
	for f, reason := range want {
		w[f] = reason
		if reason == "" {
			w[f] = got[f]
			if got[f] == "" {
				w[f] = "(a reason)"
			}
		}
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("problem fields (-want +got):\n%s\nbody: %s", diff, body)
	}
}

// FixedClock is a fixed clock that moves on by a second each time the
// server reads it; token verification only peeks. It starts well before the
// real date, so the entries the projector times by the stream record are
// newer. It is exported for the harness of the external tests as well.
type FixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func NewFixedClock() *FixedClock {
	return &FixedClock{t: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)}
}

func (c *FixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func (c *FixedClock) Peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *FixedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// RequestBody is what a request sends for body: nothing for nil, a string
// or []byte as is, any other value as JSON. It is exported for the harness
// of the external tests as well.
func RequestBody(t testing.TB, body any) []byte {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return []byte(b)
	case []byte:
		return b
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// RoundTrip sends a request with the body and, unless token is "", a
// bearer token; it returns the response and its body, read whole. It is
// exported for the harness of the external tests as well.
func RoundTrip(t testing.TB, method, url, token string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// oaEnv is the writer on a fresh table, over HTTP; every response it sees is
// checked against openapi.yaml.
type oaEnv struct {
	t       *testing.T
	url     string
	spec    *kinref.Spec
	mux     *http.ServeMux // to find a request's route pattern
	project func()         // runs the projector over the stream so far
	clock   *FixedClock
}

func newOAEnv(t *testing.T) *oaEnv {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	clk := NewFixedClock()
	var mu sync.Mutex
	n := 0
	dev := &auth.DevTokens{Secret: []byte("openapi test secret, 32 bytes..."), Issuer: "dynastream-test", Now: clk.Peek}
	st := store.New(c.DB, table)
	srv := &Server{
		Store: st, Auth: dev, DevTokens: dev, Now: clk.Now,
		Logger: slog.New(slog.DiscardHandler),
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("id%02d", n)
		},
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.pattern, func(http.ResponseWriter, *http.Request) {})
	}
	e := &oaEnv{t: t, url: ts.URL, spec: testSpec(t), mux: mux, clock: clk}
	e.project = func() {
		t.Helper()
		ev, err := replay.Capture(context.Background(), c.Streams, arn)
		if err != nil {
			t.Fatal(err)
		}
		p := &projections.Projector{Store: st, Logger: slog.New(slog.DiscardHandler)}
		follow := ddbtest.FollowPending(t, c.Streams, arn)
		if _, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: p.Handle, Follow: follow}, replay.AsCaptured); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

type oaResp struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request (body: nil, a string sent as is, or a value sent as
// JSON) and checks the response against the document.
func (e *oaEnv) do(method, path, token string, body any) oaResp {
	e.t.Helper()
	raw := RequestBody(e.t, body)
	res, b := RoundTrip(e.t, method, e.url+path, token, raw)
	r := oaResp{status: res.StatusCode, header: res.Header, body: b}
	e.checkResponse(method, path, raw, r)
	return r
}

// checkResponse validates a response with kin-openapi (status, headers,
// body), for the route the request went to.
func (e *oaEnv) checkResponse(method, path string, body []byte, r oaResp) {
	e.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	_, pattern := e.mux.Handler(req)
	if pattern == "" {
		return // no route: the catch-all's 404 or 405, not an operation's
	}
	op, err := e.spec.Route(pattern)
	if err != nil {
		e.t.Fatal(err)
	}
	params := map[string]string{}
	pm := regexp.MustCompile(`\{([^}]+)\}`)
	pp := strings.Split(strings.SplitN(pattern, " ", 2)[1], "/")
	for i, seg := range strings.Split(req.URL.Path, "/") {
		if i < len(pp) && pm.MatchString(pp[i]) {
			params[strings.Trim(pp[i], "{}")] = seg
		}
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: op,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: r.status, Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		e.t.Errorf("%s %s: response %d does not match openapi.yaml: %v\nbody: %s", method, path, r.status, err, r.body)
	}
}

// ok sends a request that must answer status, and decodes the body into
// out unless out is nil.
func (e *oaEnv) ok(status int, method, path, token string, body, out any) oaResp {
	e.t.Helper()
	r := e.do(method, path, token, body)
	if r.status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			e.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return r
}

// token mints a dev token for the user.
func (e *oaEnv) token(userID string) string {
	e.t.Helper()
	return e.mint(map[string]any{"userId": userID})
}

// mint posts a dev token request and returns the token.
func (e *oaEnv) mint(body map[string]any) string {
	e.t.Helper()
	var tr struct{ Token string }
	e.ok(http.StatusCreated, "POST", "/dev/tokens", "", body, &tr)
	return tr.Token
}

// problem checks a problem+json response: status, and exactly these fields
// with these reasons ("" for any reason).
func (e *oaEnv) problem(r oaResp, status int, fields map[string]string) map[string]any {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("Content-Type %q", ct)
	}
	var p struct {
		Title  string
		Detail string
		Errors []errs.FieldError
	}
	var doc map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		e.t.Fatalf("%s: %v", r.body, err)
	}
	_ = json.Unmarshal(r.body, &doc)
	CheckReasons(e.t, p.Errors, fields, r.body)
	if status == http.StatusBadRequest && p.Detail != "invalid request" {
		e.t.Errorf("detail %q", p.Detail)
	}
	return doc
}

// TestPathIDsMatchTheSpec: the path parameters the spec declares as ids
// (schemas Id and UserId), which validate answers before any lookup, are
// the ones the routes name ids.
func TestPathIDsMatchTheSpec(t *testing.T) {
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, rt := range routes {
		op, err := spec.route(rt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		for name := range pathIDs(op) {
			found[name] = true
		}
	}
	want := map[string]bool{"roomId": true, "listingId": true, "userId": true, "id": true, "inviteId": true, "commentId": true, "locationId": true, "ingredientId": true, "recipeId": true, "historyId": true, "sessionId": true}
	if len(found) != len(want) {
		t.Errorf("id path parameters in the spec %v, want %v", found, want)
	}
	for name := range found {
		if !want[name] {
			t.Errorf("path parameter %s is an id in the spec but not expected", name)
		}
	}
}
