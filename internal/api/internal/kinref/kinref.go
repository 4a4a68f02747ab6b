// Package kinref is the writer's former request validation, built on
// kin-openapi: the reference the api package's own validator is tested
// against (differentially, on generated requests) and the loader the tests
// use to check responses against openapi.yaml. Only tests import it, so
// kin-openapi is not part of any program.
package kinref

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/location"
	"github.com/dynastream/dynastream/internal/text"
)

// Spec is a loaded document.
type Spec struct {
	Doc  *openapi3.T
	JSON []byte // the document as JSON
}

// Load loads and validates an OpenAPI document.
func Load(src []byte) (*Spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(src)
	if err != nil {
		return nil, fmt.Errorf("api: load openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("api: openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("api: openapi.yaml as JSON: %w", err)
	}
	return &Spec{Doc: doc, JSON: js}, nil
}

// Route returns the document's operation for a route pattern
// ("METHOD /path/{param}").
func (s *Spec) Route(pattern string) (*routers.Route, error) {
	method, path, _ := strings.Cut(pattern, " ")
	item := s.Doc.Paths.Value(path)
	if item == nil {
		return nil, fmt.Errorf("api: openapi.yaml has no path %s (route %q)", path, pattern)
	}
	op := item.GetOperation(method)
	if op == nil {
		return nil, fmt.Errorf("api: openapi.yaml has no operation %s %s", method, path)
	}
	return &routers.Route{Spec: s.Doc, Path: path, PathItem: item, Method: method, Operation: op}, nil
}

// validateOptions: every bad field is reported (MultiError); the token was
// checked before (the Authenticator), so security requirements pass; the
// request is never changed (no defaults written into it); format: email is
// what the handlers accept (auth.ValidEmail; empty means absent, as for
// the handlers).
var validateOptions = &openapi3filter.Options{
	MultiError:          true,
	AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
	SkipSettingDefaults: true,
	SchemaValidationOptions: []openapi3.SchemaValidationOption{
		openapi3.WithStringFormatValidators(map[string]openapi3.StringFormatValidator{
			"email": openapi3.NewCallbackValidator(func(s string) error {
				if s != "" && !auth.ValidEmail(s) {
					return errors.New("not an e-mail address")
				}
				return nil
			}),
			// location.ValidCode: the length too, which a pattern without
			// look-ahead cannot say.
			"location-code": openapi3.NewCallbackValidator(func(s string) error {
				if !location.ValidCode(s) {
					return errors.New("not a location code")
				}
				return nil
			}),
		}),
	},
}

// Validate validates r, whose body is data, with kin-openapi and maps what
// it finds to a field error per bad field, as the writer did.
func Validate(r *http.Request, op *routers.Route, data []byte) error {
	// kin-openapi reads the body of the request it validates: give it a
	// copy, and the handler the same bytes again.
	vr := r.WithContext(r.Context())
	vr.Header = r.Header.Clone()
	vr.Body, vr.GetBody, vr.ContentLength = http.NoBody, nil, 0
	var doc any
	if op.Operation.RequestBody != nil {
		vr.Body, vr.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
		// The handlers read the body as JSON whatever its Content-Type.
		vr.Header.Set("Content-Type", "application/json")
		_ = json.Unmarshal(data, &doc) // only to name array elements
	}
	params := map[string]string{}
	for _, p := range op.PathItem.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
			params[p.Value.Name] = r.PathValue(p.Value.Name)
		}
	}
	for _, p := range op.Operation.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
			params[p.Value.Name] = r.PathValue(p.Value.Name)
		}
	}
	err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
		Request: vr, PathParams: params, Route: op, Options: validateOptions,
	})
	if err == nil {
		return controlChars(r, op, doc)
	}
	m := fieldMapper{doc: doc, at: map[string]int{}}
	m.add(err)
	if len(m.fields) == 0 {
		return errs.Field("body", err.Error())
	}
	sort.SliceStable(m.fields, func(i, j int) bool { return m.fields[i].Field < m.fields[j].Field })
	return errs.Fields(m.fields)
}

// controlChars refuses control characters in what a request carries as
// text: none at all in a query parameter or a single-line string of the
// body (names, titles, criteria, …); in a multi-line one (x-multiline in
// the spec: comment texts, invite messages, descriptions) only line breaks
// and tabs. A terminal, a log or an e-mail header must never receive NUL,
// ESC or a bare CR from a user.
func controlChars(r *http.Request, op *routers.Route, doc any) error {
	var fields []errs.FieldError
	for name, vs := range r.URL.Query() {
		for _, v := range vs {
			if reason := text.Problem(v, false); reason != "" {
				fields = append(fields, errs.FieldError{Field: name, Reason: reason})
				break
			}
		}
	}
	if rb := op.Operation.RequestBody; rb != nil && rb.Value != nil && doc != nil {
		if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			walkText(doc, mt.Schema.Value, "", &fields)
		}
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Field < fields[j].Field })
	return errs.Fields(fields)
}

// walkText checks every string of v against schema s (nil: single-line).
func walkText(v any, s *openapi3.Schema, path string, out *[]errs.FieldError) {
	switch x := v.(type) {
	case string:
		multi := s != nil && s.Extensions["x-multiline"] == true
		if reason := text.Problem(x, multi); reason != "" {
			*out = append(*out, errs.FieldError{Field: strings.TrimPrefix(path, "."), Reason: reason})
		}
	case []any:
		var items *openapi3.Schema
		if s != nil && s.Items != nil {
			items = s.Items.Value
		}
		for i, e := range x {
			walkText(e, items, fmt.Sprintf("%s[%d]", path, i), out)
		}
	case map[string]any:
		for k, e := range x {
			var ps *openapi3.Schema
			if s != nil {
				if p := s.Properties[k]; p != nil {
					ps = p.Value
				} else if ap := s.AdditionalProperties.Schema; ap != nil {
					ps = ap.Value
				}
			}
			walkText(e, ps, path+"."+k, out)
		}
	}
}

// fieldMapper turns kin-openapi's errors into the project's field errors,
// named as the handlers name them: a body member by its JSON path
// (context.combineMode, criteria.locations[0]), a query parameter by its
// name, the body as a whole as body. One error per field.
type fieldMapper struct {
	doc    any // the decoded body, to tell array indexes from object keys
	fields []errs.FieldError
	rank   []int
	at     map[string]int // field → index in fields
}

// put records a field's error; of several, the one about the value's
// presence or type wins (a missing field is first "required", and a bad
// one's type comes before its range), else the first.
func (m *fieldMapper) put(field, reason string, rank int) {
	if i, ok := m.at[field]; ok {
		if rank < m.rank[i] {
			m.fields[i].Reason, m.rank[i] = reason, rank
		}
		return
	}
	m.at[field] = len(m.fields)
	m.fields = append(m.fields, errs.FieldError{Field: field, Reason: reason})
	m.rank = append(m.rank, rank)
}

func (m *fieldMapper) add(err error) {
	var re *openapi3filter.RequestError
	var se *openapi3.SchemaError
	switch e := err.(type) {
	case openapi3.MultiError:
		for _, err := range e {
			m.add(err)
		}
	case *openapi3filter.RequestError:
		re = e
	case *openapi3.SchemaError:
		se = e
	default:
		if errors.As(err, &re) || errors.As(err, &se) {
			break
		}
		m.put("body", err.Error(), 1)
	}
	switch {
	case re != nil && re.Parameter != nil:
		m.param(re.Parameter, re.Err)
	case re != nil && re.RequestBody != nil:
		m.body(re)
	case re != nil:
		m.put("request", re.Error(), 1)
	case se != nil:
		m.schema(se)
	}
}

func (m *fieldMapper) param(p *openapi3.Parameter, err error) {
	var schema *openapi3.Schema
	if p.Schema != nil {
		schema = p.Schema.Value
	}
	var se *openapi3.SchemaError
	var pe *openapi3filter.ParseError
	switch {
	case errors.Is(err, openapi3filter.ErrInvalidRequired):
		m.put(p.Name, "is required", 0)
	case errors.Is(err, openapi3filter.ErrInvalidEmptyValue):
		m.put(p.Name, "must not be empty", 0)
	case xReason(schema) != "":
		m.put(p.Name, xReason(schema), 1)
	case errors.As(err, &se):
		m.put(p.Name, schemaReason(se), 1)
	case errors.As(err, &pe) && schema != nil:
		m.put(p.Name, "must be "+typeName(schema), 1)
	default:
		m.put(p.Name, "is invalid", 1)
	}
}

func (m *fieldMapper) body(re *openapi3filter.RequestError) {
	var pe *openapi3filter.ParseError
	switch {
	case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
		m.put("body", "a JSON object is required", 0)
	case errors.As(re.Err, &pe):
		cause := pe.Cause
		if cause == nil {
			cause = pe
		}
		m.put("body", "malformed JSON: "+cause.Error(), 0)
	case re.Err == nil:
		m.put("body", re.Reason, 0)
	default:
		m.schemaTree(re.Err)
	}
}

// schemaTree adds every SchemaError in err.
func (m *fieldMapper) schemaTree(err error) {
	var se *openapi3.SchemaError
	switch e := err.(type) {
	case openapi3.MultiError:
		for _, err := range e {
			m.schemaTree(err)
		}
	case *openapi3.SchemaError:
		m.schema(e)
	default:
		if errors.As(err, &se) {
			m.schema(se)
			return
		}
		m.put("body", err.Error(), 1)
	}
}

// schema adds one body SchemaError.
func (m *fieldMapper) schema(se *openapi3.SchemaError) {
	path := se.JSONPointer()
	rank := 1
	stripIndexes := false
	switch se.SchemaField {
	case "properties":
		if name, ok := unsupportedProperty(se.Reason); ok {
			m.put(m.path(append(path, name), false), "unknown field", 0)
			return
		}
	case "enum":
		// kin-openapi checks an enum before the type: a value of the wrong
		// type is reported as encoding/json would (must be a string).
		if se.Schema != nil && wrongType(se.Schema, se.Value) {
			m.put(m.path(path, true), "must be "+typeName(se.Schema), 0)
			return
		}
	case "required", "nullable":
		rank = 0
	case "type":
		// As encoding/json does: a wrong type inside an array names the
		// array (criteria.locations), not the element.
		rank, stripIndexes = 0, true
	}
	reason := schemaReason(se)
	if stripIndexes && len(path) > 0 {
		if _, err := strconv.Atoi(path[len(path)-1]); err == nil {
			if _, isArray := m.value(path[:len(path)-1]).([]any); isArray && se.Schema != nil {
				reason = "each entry must be " + typeName(se.Schema)
			}
		}
	}
	m.put(m.path(path, stripIndexes), reason, rank)
}

// value is the value at path in the body (nil when there is none).
func (m *fieldMapper) value(path []string) any {
	cur := m.doc
	for _, seg := range path {
		switch v := cur.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		case map[string]any:
			cur = v[seg]
		default:
			return nil
		}
	}
	return cur
}

// path renders a JSON pointer into the body as the handlers name fields:
// criteria.locations[0]; the body itself is "body".
func (m *fieldMapper) path(ptr []string, stripIndexes bool) string {
	var b strings.Builder
	cur := m.doc
	for _, seg := range ptr {
		if arr, ok := cur.([]any); ok {
			if i, err := strconv.Atoi(seg); err == nil {
				if !stripIndexes {
					fmt.Fprintf(&b, "[%d]", i)
				}
				cur = nil
				if i >= 0 && i < len(arr) {
					cur = arr[i]
				}
				continue
			}
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
		obj, _ := cur.(map[string]any)
		cur = obj[seg]
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// unsupportedProperty reads the name out of kin-openapi's reason for a
// member that additionalProperties: false forbids.
func unsupportedProperty(reason string) (string, bool) {
	q, ok := strings.CutPrefix(reason, "property ")
	if !ok {
		return "", false
	}
	if q, ok = strings.CutSuffix(q, " is unsupported"); !ok {
		return "", false
	}
	name, err := strconv.Unquote(q)
	return name, err == nil
}

// schemaReason says why a value fails its schema, in the handlers' words;
// the schema's x-reason, when it has one, explains a pattern, enum or range.
func schemaReason(se *openapi3.SchemaError) string {
	s := se.Schema
	if s == nil {
		return se.Reason
	}
	switch se.SchemaField {
	case "required":
		return "is required"
	case "nullable":
		return "must not be null"
	case "type":
		return "must be " + typeName(s)
	case "pattern", "enum", "minimum", "maximum", "format":
		if r := xReason(s); r != "" {
			return r
		}
	}
	switch se.SchemaField {
	case "enum":
		var names []string
		for _, v := range s.Enum {
			if str, ok := v.(string); ok && str != "" {
				names = append(names, strconv.Quote(str))
			}
		}
		switch len(names) {
		case 0:
		case 1:
			return "must be " + names[0]
		default:
			return "must be " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
		}
	case "minimum", "maximum":
		switch {
		case s.Min != nil && s.Max != nil:
			return fmt.Sprintf("must be from %s to %s", num(*s.Min), num(*s.Max))
		case s.Min != nil && *s.Min == 0:
			return "must not be negative"
		case s.Min != nil:
			return "must be at least " + num(*s.Min)
		case s.Max != nil:
			return "must be at most " + num(*s.Max)
		}
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("must be at most %d characters", *s.MaxLength)
		}
	case "minLength":
		return fmt.Sprintf("must be at least %d characters", s.MinLength)
	case "maxProperties":
		if s.MaxProps != nil {
			return fmt.Sprintf("must have at most %d entries", *s.MaxProps)
		}
	case "maxItems":
		if s.MaxItems != nil {
			return fmt.Sprintf("must have at most %d entries", *s.MaxItems)
		}
	case "minItems":
		return fmt.Sprintf("must have at least %d entries", s.MinItems)
	case "pattern":
		return "must match " + s.Pattern
	}
	return se.Reason
}

func xReason(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	r, _ := s.Extensions["x-reason"].(string)
	return r
}

// wrongType reports whether v, a decoded JSON value, is not of s's type.
func wrongType(s *openapi3.Schema, v any) bool {
	if s.Type == nil || len(s.Type.Slice()) == 0 || v == nil {
		return false
	}
	switch v.(type) {
	case string:
		return !s.Type.Permits(openapi3.TypeString)
	case bool:
		return !s.Type.Permits(openapi3.TypeBoolean)
	case float64, json.Number:
		return !s.Type.Permits(openapi3.TypeNumber) && !s.Type.Permits(openapi3.TypeInteger)
	case map[string]any:
		return !s.Type.Permits(openapi3.TypeObject)
	case []any:
		return !s.Type.Permits(openapi3.TypeArray)
	}
	return false
}

// typeName is "a string", "an integer", … for the schema's type.
func typeName(s *openapi3.Schema) string {
	if s.Type == nil || len(s.Type.Slice()) == 0 {
		return "a value of another type"
	}
	switch t := s.Type.Slice()[0]; t {
	case openapi3.TypeInteger, openapi3.TypeObject, openapi3.TypeArray:
		return "an " + t
	default:
		return "a " + t
	}
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
