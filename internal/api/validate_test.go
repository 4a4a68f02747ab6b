package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/dynastream/dynastream/internal/api/internal/kinref"
	"github.com/dynastream/dynastream/internal/errs"
)

// TestValidateMatchesKinOpenAPI: the writer's own request validation gives
// exactly the answer (the same fields, the same reasons) the kin-openapi
// validation it replaced gives, for generated requests to every operation:
// path ids and query values from pools of good, bad and hostile strings,
// bodies generated from each operation's schema and then broken (wrong
// types, nulls, missing and unknown members, values past every bound,
// malformed JSON).
func TestValidateMatchesKinOpenAPI(t *testing.T) {
	t.Parallel()
	ref, err := kinref.Load(openapiSource)
	if err != nil {
		t.Fatal(err)
	}
	own, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	patterns := slices.Sorted(maps.Keys(own.ops))
	rapid.Check(t, func(rt *rapid.T) {
		pattern := rapid.SampledFrom(patterns).Draw(rt, "pattern")
		op := own.ops[pattern]
		refOp, err := ref.Route(pattern)
		if err != nil {
			rt.Fatal(err)
		}
		method, path, _ := strings.Cut(pattern, " ")
		pathValues := map[string]string{}
		q := url.Values{}
		for _, p := range op.Parameters {
			switch p.In {
			case "path":
				v := rapid.OneOf(rapid.SampledFrom(pathPool), rapid.String(), genString(p.Schema.resolved()),
					validID, validID, validID).Draw(rt, p.Name)
				pathValues[p.Name] = v
				path = strings.Replace(path, "{"+p.Name+"}", url.PathEscape(v), 1)
			case "query":
				n := rapid.IntRange(0, 2).Draw(rt, p.Name+" count")
				for range n {
					q.Add(p.Name, rapid.OneOf(rapid.SampledFrom(queryPool), genString(p.Schema.resolved()), rapid.String()).Draw(rt, p.Name))
				}
			}
		}
		if rapid.Bool().Draw(rt, "stray query") {
			q.Add(rapid.SampledFrom([]string{"x", "limit", "cursor"}).Draw(rt, "stray name"), rapid.SampledFrom(queryPool).Draw(rt, "stray value"))
		}
		var body []byte
		if op.RequestBody != nil {
			body = rapid.OneOf(
				rapid.Custom(func(t *rapid.T) []byte {
					b, _ := json.Marshal(genValue(t, op.RequestBody.Content["application/json"].Schema, 0))
					return b
				}),
				rapid.SampledFrom([][]byte{nil, []byte(`{`), []byte(`[]`), []byte(`null`), []byte(`"x"`), []byte(`{"a":1} {"b":2}`), []byte(`{"a":}`), []byte(` `), []byte("{\"a\":\"\x00\"}"), []byte(`{"a":1e999}`)}),
			).Draw(rt, "body")
		}
		target := path
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		build := func() *http.Request {
			r := httptest.NewRequest(method, "http://x"+target, bytes.NewReader(body))
			for k, v := range pathValues {
				r.SetPathValue(k, v)
			}
			return r
		}
		got := validateRequest(build(), op)
		want := kinref.Validate(build(), refOp, body)
		if diff := cmp.Diff(describe(want), describe(got)); diff != "" {
			rt.Fatalf("%s %s body %s (-kin-openapi +own):\n%s", method, target, body, diff)
		}
	})
}

// describe is what a validation error says: its fields, or its text.
func describe(err error) any {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return fmt.Sprint(e.Code, e.Fields)
	}
	return err.Error()
}

// validID is an id every id pattern accepts (and a valid resource type,
// emoji or location code often enough).
var validID = rapid.OneOf(rapid.StringMatching(`[a-z][a-z0-9]{2,20}`), rapid.SampledFrom([]string{"goal", "task", "👍", "austin-main-01"}))

var pathPool = []string{"", "a", "abc", "alice", "a#b", "ROOM#1", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "goal", "quest", "habit", "task",
	"austin-main-01", "Austin", "ab", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("x", 129), "é", "👍", "a b", "a\x00b", "..", "a/b", "%", "-a", "1"}

var queryPool = []string{"", "0", "1", "25", "100", "101", "-1", "1.5", "1e3", "abc", "NaN", "Inf", "1e999", "true", "false",
	"pending", "accepted", "active", "inactive", "newest", "code", "rent", "buy", "goal", "habit", "alice", "a#b",
	"2026-01-02T15:04:05.000Z", "2026-01-02T15:04:05Z", "yesterday", "a\x1bb", "👍", strings.Repeat("x", 300)}

// genString draws a string for s: one of its enum values, a value near its
// length bounds, or an arbitrary one.
func genString(s *schema) *rapid.Generator[string] {
	gens := []*rapid.Generator[string]{rapid.SampledFrom(queryPool), rapid.StringN(0, 8, -1)}
	var enum []string
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			enum = append(enum, str)
		}
	}
	if len(enum) > 0 {
		gens = append(gens, rapid.SampledFrom(enum))
	}
	if s.MaxLength != nil {
		n := *s.MaxLength
		gens = append(gens, rapid.SampledFrom([]string{strings.Repeat("é", n), strings.Repeat("x", n+1), strings.Repeat("😀", n)}))
	}
	if s.MinLength > 0 {
		gens = append(gens, rapid.SampledFrom([]string{strings.Repeat("x", s.MinLength-1), strings.Repeat("x", s.MinLength)}))
	}
	if s.Format != "" {
		gens = append(gens, rapid.SampledFrom([]string{"bob@example.com", "Bob <bob@example.com>", "bob", "abc", "austin-main-01", "a--b"}))
	}
	return rapid.OneOf(gens...)
}

// genValue draws a JSON value for s, mostly well-formed and often broken.
func genValue(t *rapid.T, s *schema, depth int) any {
	s = s.resolved()
	switch rapid.IntRange(0, 19).Draw(t, "mutation") {
	case 0:
		return nil
	case 1:
		return rapid.SampledFrom([]any{"x", 1.5, 7, true, []any{}, map[string]any{}, []any{"a"}, json.Number("1e999"), -1}).Draw(t, "wrong type")
	}
	switch s.Type {
	case "string":
		return genString(s).Draw(t, "string")
	case "integer", "number":
		var cands []any
		if s.Min != nil {
			cands = append(cands, *s.Min, *s.Min-1, *s.Min-0.5)
		}
		if s.Max != nil {
			cands = append(cands, *s.Max, *s.Max+1, *s.Max+0.5)
		}
		cands = append(cands, 0, 1, 2.5, -3, 1e20, json.Number("12345678901234567890123"))
		return rapid.SampledFrom(cands).Draw(t, "number")
	case "boolean":
		return rapid.Bool().Draw(t, "bool")
	case "array":
		n := rapid.IntRange(0, 3).Draw(t, "items")
		if s.MaxItems != nil && rapid.IntRange(0, 4).Draw(t, "long") == 0 {
			n = *s.MaxItems + rapid.IntRange(0, 1).Draw(t, "past")
		}
		out := make([]any, n)
		for i := range out {
			if s.Items != nil && depth < 4 {
				out[i] = genValue(t, s.Items, depth+1)
			} else {
				out[i] = "x"
			}
		}
		return out
	case "object", "":
		out := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
			if depth < 4 && rapid.IntRange(0, 5).Draw(t, "omit "+k) > 0 {
				out[k] = genValue(t, s.Properties[k], depth+1)
			}
		}
		if rapid.IntRange(0, 4).Draw(t, "extra") == 0 {
			out[rapid.SampledFrom([]string{"colour", "x", "Name", ""}).Draw(t, "extra name")] = "y"
		}
		if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil && depth < 4 {
			n := rapid.IntRange(0, 3).Draw(t, "entries")
			if s.MaxProps != nil && rapid.IntRange(0, 4).Draw(t, "many") == 0 {
				n = *s.MaxProps + 1
			}
			for i := range n {
				out["k"+strconv.Itoa(i)] = genValue(t, ap.Schema, depth+1)
			}
		}
		return out
	}
	return nil
}

// BenchmarkValidateRequest: one criteria update (path id, a body with
// nested arrays and numbers), validated by the writer and by the
// kin-openapi validation it replaced.
func BenchmarkValidateRequest(b *testing.B) {
	const pattern, target = "PUT /rooms/{roomId}/criteria", "/rooms/r1/criteria"
	body := []byte(`{"criteria":{"locations":["Zurich","Basel","Bern"],"priceMax":3000,"roomsMin":2,"features":["balcony","lift"]},"source":"manual"}`)
	req := func() *http.Request {
		r := httptest.NewRequest("PUT", "http://x"+target, bytes.NewReader(body))
		r.SetPathValue("roomId", "r1")
		return r
	}
	own, err := loadSpec()
	if err != nil {
		b.Fatal(err)
	}
	op, _ := own.route(pattern)
	ref, err := kinref.Load(openapiSource)
	if err != nil {
		b.Fatal(err)
	}
	refOp, _ := ref.Route(pattern)
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := validateRequest(req(), op); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kin-openapi", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := kinref.Validate(req(), refOp, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoadSpec: reading the document at start, by the writer (the
// embedded JSON) and by kin-openapi (the YAML, validated).
func BenchmarkLoadSpec(b *testing.B) {
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseSpec(gunzip(openapiJSONGz)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kin-openapi", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kinref.Load(openapiSource); err != nil {
				b.Fatal(err)
			}
		}
	})
}
