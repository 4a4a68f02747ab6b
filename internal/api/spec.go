package api

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// openapi.yaml is the API's OpenAPI 3.0 document, the source; the program
// embeds it, and the same document as JSON (as kin-openapi loads and writes
// it), gzipped: 40 KB instead of 265 KB of each bootstrap. The JSON is what
// loadSpec reads, so no YAML parser or OpenAPI library is part of the
// program. TestOpenAPIEmbedded checks both against openapi.yaml; after
// editing it: go test ./internal/api -run TestOpenAPIEmbedded -update
var (
	//go:embed openapi.yaml.gz
	openapiYAMLGz []byte
	//go:embed openapi.json.gz
	openapiJSONGz []byte
)

// openapiYAML and openapiJSON are the documents, decompressed once.
var (
	openapiYAML = sync.OnceValue(func() []byte { return gunzip(openapiYAMLGz) })
	openapiJSON = sync.OnceValue(func() []byte { return gunzip(openapiJSONGz) })
)

// gunzip decompresses an embedded file; it panics on a corrupt one (a
// build defect TestOpenAPIEmbedded catches).
func gunzip(b []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		panic(fmt.Sprintf("api: embedded document: %v", err))
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		panic(fmt.Sprintf("api: embedded document: %v", err))
	}
	return out
}

// apiSpec is the document's operations, ready to validate requests with.
type apiSpec struct {
	ops     map[string]*operation // by route pattern, "METHOD /path/{param}"
	schemas map[string]*schema    // the components, resolved
}

// operation is what a request to one route is validated against: its
// parameters (the path item's, then the operation's own, as OpenAPI merges
// them) and its request body.
type operation struct {
	Parameters  []*parameter
	RequestBody *requestBody
	LocalOnly   bool // x-local-only
}

type parameter struct {
	Ref             string  `json:"$ref"`
	Name            string  `json:"name"`
	In              string  `json:"in"`
	Required        bool    `json:"required"`
	AllowEmptyValue bool    `json:"allowEmptyValue"`
	Schema          *schema `json:"schema"`
	Style           string  `json:"style"`
	Explode         *bool   `json:"explode"`
	Content         any     `json:"content"`
}

type requestBody struct {
	Ref      string                     `json:"$ref"`
	Required bool                       `json:"required"`
	Content  map[string]*mediaTypeEntry `json:"content"`
}

type mediaTypeEntry struct {
	Schema *schema `json:"schema"`
}

// schema is the part of an OpenAPI 3.0 schema object requests are checked
// with. loadSpec refuses a request schema that uses anything else (allOf,
// oneOf, a format it does not know, …), so nothing in openapi.yaml is
// silently ignored.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Nullable             bool               `json:"nullable"`
	Enum                 []any              `json:"enum"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties *additional        `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	MinLength            int                `json:"minLength"`
	MaxLength            *int               `json:"maxLength"`
	Pattern              string             `json:"pattern"`
	Format               string             `json:"format"`
	Min                  *float64           `json:"minimum"`
	Max                  *float64           `json:"maximum"`
	MinItems             int                `json:"minItems"`
	MaxItems             *int               `json:"maxItems"`
	MinProps             int                `json:"minProperties"`
	MaxProps             *int               `json:"maxProperties"`
	XReason              string             `json:"x-reason"`
	XMultiline           bool               `json:"x-multiline"`

	// Only so loadSpec can refuse them in a request.
	AllOf            []*schema `json:"allOf"`
	OneOf            []*schema `json:"oneOf"`
	AnyOf            []*schema `json:"anyOf"`
	Not              *schema   `json:"not"`
	ReadOnly         bool      `json:"readOnly"`
	WriteOnly        bool      `json:"writeOnly"`
	UniqueItems      bool      `json:"uniqueItems"`
	MultipleOf       *float64  `json:"multipleOf"`
	ExclusiveMinimum bool      `json:"exclusiveMinimum"`
	ExclusiveMaximum bool      `json:"exclusiveMaximum"`

	target *schema        // what Ref names
	re     *regexp.Regexp // Pattern, compiled
}

// additional is additionalProperties: a boolean or a schema.
type additional struct {
	Has    *bool
	Schema *schema
}

func (a *additional) UnmarshalJSON(b []byte) error {
	var v bool
	if err := json.Unmarshal(b, &v); err == nil {
		a.Has = &v
		return nil
	}
	return json.Unmarshal(b, &a.Schema)
}

// resolved follows $ref.
func (s *schema) resolved() *schema {
	for s != nil && s.target != nil {
		s = s.target
	}
	return s
}

// schemaKeywords are the members a schema object may have in openapi.json;
// validation uses those of the schema type above, the others only describe.
var schemaKeywords = map[string]bool{
	"$ref": true, "type": true, "nullable": true, "enum": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minLength": true, "maxLength": true, "pattern": true,
	"format": true, "minimum": true, "maximum": true, "minItems": true, "maxItems": true, "minProperties": true,
	"maxProperties": true, "allOf": true, "oneOf": true, "anyOf": true, "not": true, "readOnly": true,
	"writeOnly": true, "uniqueItems": true, "multipleOf": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"description": true, "title": true, "example": true, "default": true,
}

func (s *schema) UnmarshalJSON(b []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	for k := range members {
		if !schemaKeywords[k] && !strings.HasPrefix(k, "x-") {
			return fmt.Errorf("schema keyword %q is not supported", k)
		}
	}
	type plain schema
	return json.Unmarshal(b, (*plain)(s))
}

// loadSpec reads openapi.json once.
var loadSpec = sync.OnceValues(func() (*apiSpec, error) {
	s, err := parseSpec(openapiJSON())
	if err != nil {
		return nil, fmt.Errorf("api: openapi.json: %w", err)
	}
	return s, nil
})

// document is the part of openapi.json requests are validated with.
type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas       map[string]*schema      `json:"schemas"`
		Parameters    map[string]*parameter   `json:"parameters"`
		RequestBodies map[string]*requestBody `json:"requestBodies"`
	} `json:"components"`
}

type operationJSON struct {
	Parameters  []*parameter `json:"parameters"`
	RequestBody *requestBody `json:"requestBody"`
	LocalOnly   bool         `json:"x-local-only"`
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// parseSpec reads an OpenAPI document as JSON and resolves its references.
func parseSpec(b []byte) (*apiSpec, error) {
	var doc document
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	r := &resolver{doc: &doc, done: map[*schema]int{}}
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		if err := r.schema(doc.Components.Schemas[name], false); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
	}
	spec := &apiSpec{ops: map[string]*operation{}, schemas: doc.Components.Schemas}
	for path, item := range doc.Paths {
		var shared []*parameter
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("%s: parameters: %w", path, err)
			}
		}
		for _, m := range methods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			pattern := strings.ToUpper(m) + " " + path
			var oj operationJSON
			if err := json.Unmarshal(raw, &oj); err != nil {
				return nil, fmt.Errorf("%s: %w", pattern, err)
			}
			op, err := r.operation(shared, oj)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", pattern, err)
			}
			spec.ops[pattern] = op
		}
	}
	return spec, nil
}

// route returns the operation of a route pattern of the table.
func (s *apiSpec) route(pattern string) (*operation, error) {
	op := s.ops[pattern]
	if op == nil {
		return nil, fmt.Errorf("api: openapi.yaml has no operation %q", pattern)
	}
	return op, nil
}

type resolver struct {
	doc  *document
	done map[*schema]int // resolved (1), checked for requests too (2)
}

const (
	schemaRefs    = "#/components/schemas/"
	parameterRefs = "#/components/parameters/"
	bodyRefs      = "#/components/requestBodies/"
)

// operation merges an operation's parameters with its path item's (the
// operation's own win, by in and name) and resolves what they refer to.
func (r *resolver) operation(shared []*parameter, oj operationJSON) (*operation, error) {
	op := &operation{LocalOnly: oj.LocalOnly}
	own := map[string]bool{}
	var ps []*parameter
	for _, p := range oj.Parameters {
		p, err := r.parameter(p)
		if err != nil {
			return nil, err
		}
		own[p.In+" "+p.Name] = true
		ps = append(ps, p)
	}
	for _, p := range shared {
		p, err := r.parameter(p)
		if err != nil {
			return nil, err
		}
		if !own[p.In+" "+p.Name] {
			op.Parameters = append(op.Parameters, p)
		}
	}
	op.Parameters = append(op.Parameters, ps...)
	if rb := oj.RequestBody; rb != nil {
		if name, ok := strings.CutPrefix(rb.Ref, bodyRefs); ok {
			if rb = r.doc.Components.RequestBodies[name]; rb == nil {
				return nil, fmt.Errorf("no request body %s", name)
			}
		}
		for ct, mt := range rb.Content {
			if ct != "application/json" {
				return nil, fmt.Errorf("request body of type %s: only application/json is validated", ct)
			}
			if mt.Schema == nil {
				return nil, fmt.Errorf("request body without a schema")
			}
			if err := r.schema(mt.Schema, true); err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
		}
		op.RequestBody = rb
	}
	return op, nil
}

func (r *resolver) parameter(p *parameter) (*parameter, error) {
	if name, ok := strings.CutPrefix(p.Ref, parameterRefs); ok {
		if p = r.doc.Components.Parameters[name]; p == nil {
			return nil, fmt.Errorf("no parameter %s", name)
		}
	}
	switch {
	case p.In != "path" && p.In != "query":
		return nil, fmt.Errorf("parameter %s in %s: only path and query parameters are validated", p.Name, p.In)
	case p.Content != nil || p.Schema == nil:
		return nil, fmt.Errorf("parameter %s: a schema is required (content is not supported)", p.Name)
	case p.Style != "" || p.Explode != nil:
		return nil, fmt.Errorf("parameter %s: only the default style is supported", p.Name)
	}
	if err := r.schema(p.Schema, true); err != nil {
		return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
	}
	switch t := p.Schema.resolved().Type; t {
	case "string", "integer", "number", "boolean":
	default:
		return nil, fmt.Errorf("parameter %s: type %q (only primitive types are supported)", p.Name, t)
	}
	return p, nil
}

// schema resolves s's references and compiles its patterns, all the way
// down; inRequest also refuses what validation does not implement.
func (r *resolver) schema(s *schema, inRequest bool) error {
	if s == nil {
		return nil
	}
	if s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, schemaRefs)
		if !ok || r.doc.Components.Schemas[name] == nil {
			return fmt.Errorf("unresolved $ref %q", s.Ref)
		}
		s.target = r.doc.Components.Schemas[name]
		return r.schema(s.target, inRequest)
	}
	level := 1
	if inRequest {
		level = 2
	}
	if r.done[s] >= level {
		return nil
	}
	r.done[s] = level
	if inRequest {
		switch {
		case len(s.AllOf)+len(s.OneOf)+len(s.AnyOf) > 0 || s.Not != nil:
			return fmt.Errorf("allOf, oneOf, anyOf and not are not supported in a request")
		case s.ReadOnly || s.WriteOnly || s.UniqueItems || s.MultipleOf != nil || s.ExclusiveMinimum || s.ExclusiveMaximum:
			return fmt.Errorf("readOnly, writeOnly, uniqueItems, multipleOf and exclusive bounds are not supported in a request")
		case s.Format != "" && stringFormats[s.Format] == nil:
			return fmt.Errorf("format %q is not supported in a request", s.Format)
		}
		switch s.Type {
		case "", "string", "integer", "number", "boolean", "array", "object":
		default:
			return fmt.Errorf("type %q", s.Type)
		}
	}
	if s.Pattern != "" && s.re == nil {
		if strings.Contains(s.Pattern, `\u`) {
			return fmt.Errorf("pattern %q: \\u escapes are not supported", s.Pattern)
		}
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("pattern %q: %w", s.Pattern, err)
		}
		s.re = re
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if err := r.schema(s.Properties[k], inRequest); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	if s.AdditionalProperties != nil {
		if err := r.schema(s.AdditionalProperties.Schema, inRequest); err != nil {
			return err
		}
	}
	if err := r.schema(s.Items, inRequest); err != nil {
		return err
	}
	for _, sub := range slices.Concat(s.AllOf, s.OneOf, s.AnyOf, []*schema{s.Not}) {
		if err := r.schema(sub, inRequest); err != nil {
			return err
		}
	}
	return nil
}
