package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/location"
)

// This file validates a request against its operation in openapi.yaml: the
// subset of OpenAPI 3.0 the document uses (loadSpec refuses the rest),
// checked in the order and with the outcome of kin-openapi's request
// validation, which it replaces in the program (the differential test in
// validate_test.go compares the two on generated requests). Every bad field
// is reported, named as the handlers name it: a body member by its JSON
// path (context.combineMode, criteria.locations[0]), a parameter by its
// name, the body as a whole as body.

// stringFormats are the formats a request's strings may have: format email
// is what the handlers accept (auth.ValidEmail; empty means absent, as for
// the handlers); location-code is location.ValidCode, the length too, which
// a pattern without look-ahead cannot say.
var stringFormats = map[string]func(string) error{
	"email": func(s string) error {
		if s != "" && !auth.ValidEmail(s) {
			return errors.New("not an e-mail address")
		}
		return nil
	},
	"location-code": func(s string) error {
		if !location.ValidCode(s) {
			return errors.New("not a location code")
		}
		return nil
	},
}

// validateRequest checks r against op; the body stays readable for the
// handler. Then control characters are refused in what the request carries
// as text (controlChars).
func validateRequest(r *http.Request, op *operation) error {
	var doc any
	m := fieldMapper{at: map[string]int{}}
	for _, p := range op.Parameters {
		m.param(p, r)
	}
	if rb := op.RequestBody; rb != nil {
		data, err := readBody(r)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		_ = json.Unmarshal(data, &doc) // only to name array elements
		m.doc = doc
		m.body(rb, data)
	}
	if len(m.fields) == 0 {
		return controlChars(r, op, doc)
	}
	sort.SliceStable(m.fields, func(i, j int) bool { return m.fields[i].Field < m.fields[j].Field })
	return errs.Fields(m.fields)
}

// param checks one parameter: present when required, not empty unless
// allowEmptyValue, of its type, and valid by its schema. Of a query
// parameter given several times, the first non-empty value counts.
func (m *fieldMapper) param(p *parameter, r *http.Request) {
	s := p.Schema.resolved()
	var raw string
	var found bool
	switch p.In {
	case "path":
		raw = r.PathValue(p.Name)
		found = raw != ""
	case "query":
		var vs []string
		vs, found = r.URL.Query()[p.Name]
		for i, v := range vs {
			if i == 0 || (raw == "" && v != "") {
				raw = v
			}
		}
	}
	if !found {
		if p.Required {
			m.put(p.Name, "is required", 0)
		}
		return
	}
	var value any = raw
	var err error
	switch {
	case raw == "" && s.Type != "string":
		value = nil
	case s.Type == "integer":
		value, err = strconv.ParseInt(raw, 10, 64)
	case s.Type == "number":
		value, err = strconv.ParseFloat(raw, 64)
	case s.Type == "boolean":
		value, err = strconv.ParseBool(raw)
	}
	switch {
	case err != nil && s.XReason != "":
		m.put(p.Name, s.XReason, 1)
		return
	case err != nil:
		m.put(p.Name, "must be "+typeName(s), 1)
		return
	case value == nil && !p.AllowEmptyValue:
		m.put(p.Name, "must not be empty", 0)
		return
	case value == nil, value == "" && p.AllowEmptyValue:
		return
	}
	var v visitor
	v.visit(s, value, nil)
	switch {
	case len(v.errs) == 0:
	case s.XReason != "":
		m.put(p.Name, s.XReason, 1)
	case v.errs[0].keyword == "":
		m.put(p.Name, "is invalid", 1)
	default:
		m.put(p.Name, schemaReason(v.errs[0]), 1)
	}
}

// body checks the request body: present when required, JSON (the handlers
// read it as JSON whatever its Content-Type; only its first value counts),
// and valid by its schema.
func (m *fieldMapper) body(rb *requestBody, data []byte) {
	if len(data) == 0 {
		if rb.Required {
			m.put("body", "a JSON object is required", 0)
		}
		return
	}
	mt := rb.Content["application/json"]
	if mt == nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		m.put("body", "malformed JSON: "+err.Error(), 0)
		return
	}
	var v visitor
	v.visit(mt.Schema, value, nil)
	for _, e := range v.errs {
		m.schema(e)
	}
}

// schemaError is one way a value fails a schema: where (a JSON pointer
// into the value), the keyword it fails, the schema and the value.
type schemaError struct {
	path    []string
	keyword string
	schema  *schema
	value   any
	reason  string
	member  string // keyword properties: the member the schema does not allow
}

// visitor collects every schemaError of a value, in kin-openapi's order:
// enum before anything else; then by the value's type: integer-ness, the
// bounds; lengths, pattern, format; item counts, then each item; member
// counts, then each member in name order (unknown members where met), then
// the missing required members.
type visitor struct{ errs []schemaError }

func (v *visitor) fail(path []string, keyword string, s *schema, value any, reason string) {
	v.errs = append(v.errs, schemaError{path: slices.Clone(path), keyword: keyword, schema: s, value: value, reason: reason})
}

func (v *visitor) visit(s *schema, value any, path []string) {
	s = s.resolved()
	if f, ok := value.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		v.fail(path, "", s, value, "NaN and infinities are not numbers of JSON") // no keyword: "is invalid"
		return
	}
	if value == nil && s.Nullable {
		return
	}
	if s.empty() {
		if value == nil {
			v.fail(path, "nullable", s, nil, "Value is not nullable")
		}
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return equalJSON(e, value) }) {
		allowed, _ := json.Marshal(s.Enum)
		v.fail(path, "enum", s, value, "value is not one of the allowed values "+string(allowed))
		return
	}
	switch x := value.(type) {
	case nil:
		v.fail(path, "nullable", s, nil, "Value is not nullable")
	case bool:
		if !s.permits("boolean") {
			v.expectedType(s, value, path)
		}
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			v.fail(path, "type", s, value, "cannot convert json.Number to float64")
			return
		}
		v.number(s, f, path)
	case int64:
		v.number(s, float64(x), path)
	case float64:
		v.number(s, x, path)
	case string:
		v.string(s, x, path)
	case []any:
		v.array(s, x, path)
	case map[string]any:
		v.object(s, x, path)
	default:
		v.fail(path, "type", s, value, fmt.Sprintf("unhandled value of type %T", value))
	}
}

func (v *visitor) expectedType(s *schema, value any, path []string) {
	a := "a"
	switch s.Type {
	case "array", "object", "integer":
		a = "an"
	}
	v.fail(path, "type", s, value, fmt.Sprintf("value must be %s %s", a, s.Type))
}

func (v *visitor) number(s *schema, f float64, path []string) {
	if s.permits("integer") && !s.permits("number") {
		if !big.NewFloat(f).IsInt() {
			v.fail(path, "type", s, f, "value must be an integer")
		}
	} else if !s.permits("integer") && !s.permits("number") {
		v.expectedType(s, f, path)
		return
	}
	if s.Min != nil && !(*s.Min <= f) {
		v.fail(path, "minimum", s, f, fmt.Sprintf("number must be at least %g", *s.Min))
	}
	if s.Max != nil && !(*s.Max >= f) {
		v.fail(path, "maximum", s, f, fmt.Sprintf("number must be at most %g", *s.Max))
	}
	if !storable(f) {
		v.fail(path, "x-dynamodb-number", s, f, dynamoDBRange)
	}
}

// DynamoDB stores a number of magnitude 1e-130 to below 1e126, or 0; any
// other is a ValidationException (underflow, overflow) when written. The
// document says so once (info.description); every number of a request is
// held to it, whatever its schema's own bounds.
const (
	minMagnitude  = 1e-130
	maxMagnitude  = 1e126
	dynamoDBRange = "must be 0 or from 1e-130 to less than 1e126 in magnitude (the numbers DynamoDB stores)"
)

func storable(f float64) bool {
	a := math.Abs(f)
	return a == 0 || (a >= minMagnitude && a < maxMagnitude)
}

func (v *visitor) string(s *schema, str string, path []string) {
	if !s.permits("string") {
		v.expectedType(s, str, path)
		return
	}
	if s.MinLength != 0 || s.MaxLength != nil {
		n := len([]rune(str))
		if s.MinLength != 0 && n < s.MinLength {
			v.fail(path, "minLength", s, str, fmt.Sprintf("minimum string length is %d", s.MinLength))
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			v.fail(path, "maxLength", s, str, fmt.Sprintf("maximum string length is %d", *s.MaxLength))
		}
	}
	if s.re != nil && !s.re.MatchString(str) {
		v.fail(path, "pattern", s, str, fmt.Sprintf(`string doesn't match the regular expression "%s"`, s.Pattern))
	}
	if f := stringFormats[s.Format]; f != nil {
		if err := f(str); err != nil {
			v.fail(path, "format", s, str, fmt.Sprintf("string doesn't match the format %q (%v)", s.Format, err))
		}
	}
}

func (v *visitor) array(s *schema, a []any, path []string) {
	if !s.permits("array") {
		v.expectedType(s, a, path)
		return
	}
	if s.MinItems != 0 && len(a) < s.MinItems {
		v.fail(path, "minItems", s, a, fmt.Sprintf("minimum number of items is %d", s.MinItems))
	}
	if s.MaxItems != nil && len(a) > *s.MaxItems {
		v.fail(path, "maxItems", s, a, fmt.Sprintf("maximum number of items is %d", *s.MaxItems))
	}
	if s.Items != nil {
		for i, e := range a {
			v.visit(s.Items, e, append(path, strconv.Itoa(i)))
		}
	}
}

func (v *visitor) object(s *schema, o map[string]any, path []string) {
	if !s.permits("object") {
		v.expectedType(s, o, path)
		return
	}
	if s.MinProps != 0 && len(o) < s.MinProps {
		v.fail(path, "minProperties", s, o, fmt.Sprintf("there must be at least %d properties", s.MinProps))
	}
	if s.MaxProps != nil && len(o) > *s.MaxProps {
		v.fail(path, "maxProperties", s, o, fmt.Sprintf("there must be at most %d properties", *s.MaxProps))
	}
	names := make([]string, 0, len(o))
	for k := range o {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if p := s.Properties[k]; p != nil {
			v.visit(p, o[k], append(path, k))
			continue
		}
		ap := s.AdditionalProperties
		if ap == nil || ap.Has == nil || *ap.Has {
			if ap != nil && ap.Schema != nil {
				v.visit(ap.Schema, o[k], append(path, k))
			}
			continue
		}
		v.fail(path, "properties", s, o, fmt.Sprintf("property %q is unsupported", k))
		v.errs[len(v.errs)-1].member = k
	}
	for _, k := range s.Required {
		if _, ok := o[k]; !ok {
			v.fail(append(path, k), "required", s, o, fmt.Sprintf("property %q is missing", k))
		}
	}
}

// permits reports whether the schema's type admits t (a schema without a
// type admits all).
func (s *schema) permits(t string) bool { return s.Type == "" || s.Type == t }

// empty reports whether s constrains nothing (the empty schema {}).
func (s *schema) empty() bool {
	if s.Type != "" || s.Format != "" || len(s.Enum) != 0 || s.Nullable || s.Min != nil || s.Max != nil ||
		s.MinLength != 0 || s.MaxLength != nil || s.Pattern != "" || s.MinItems != 0 || s.MaxItems != nil ||
		len(s.Required) != 0 || s.MinProps != 0 || s.MaxProps != nil {
		return false
	}
	if ap := s.AdditionalProperties; ap != nil && ((ap.Has != nil && !*ap.Has) || (ap.Schema != nil && !ap.Schema.resolved().empty())) {
		return false
	}
	if s.Items != nil && !s.Items.resolved().empty() {
		return false
	}
	for _, p := range s.Properties {
		if !p.resolved().empty() {
			return false
		}
	}
	return true
}

// equalJSON compares a value of the document with one of the request:
// numbers by value, whatever their Go type.
func equalJSON(a, b any) bool {
	if x, ok := jsonFloat(a); ok {
		y, ok := jsonFloat(b)
		return ok && x == y
	}
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return false
}

func jsonFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// fieldMapper names what fails as the handlers name fields, one error per
// field.
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

// schema adds one body schemaError.
func (m *fieldMapper) schema(se schemaError) {
	path := se.path
	rank := 1
	stripIndexes := false
	switch se.keyword {
	case "properties":
		m.put(m.path(append(slices.Clone(path), se.member), false), "unknown field", 0)
		return
	case "enum":
		// The enum is checked before the type: a value of the wrong type
		// is reported as encoding/json would (must be a string).
		if wrongType(se.schema, se.value) {
			m.put(m.path(path, true), "must be "+typeName(se.schema), 0)
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
			if _, isArray := m.value(path[:len(path)-1]).([]any); isArray {
				reason = "each entry must be " + typeName(se.schema)
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

// schemaReason says why a value fails its schema, in the handlers' words;
// the schema's x-reason, when it has one, explains a pattern, enum, range
// or format.
func schemaReason(se schemaError) string {
	s := se.schema
	switch se.keyword {
	case "required":
		return "is required"
	case "nullable":
		return "must not be null"
	case "type":
		return "must be " + typeName(s)
	case "pattern", "enum", "minimum", "maximum", "format":
		if s.XReason != "" {
			return s.XReason
		}
	}
	switch se.keyword {
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
		return fmt.Sprintf("must be at most %d characters", *s.MaxLength)
	case "minLength":
		return fmt.Sprintf("must be at least %d characters", s.MinLength)
	case "maxProperties":
		return fmt.Sprintf("must have at most %d entries", *s.MaxProps)
	case "maxItems":
		return fmt.Sprintf("must have at most %d entries", *s.MaxItems)
	case "minItems":
		return fmt.Sprintf("must have at least %d entries", s.MinItems)
	case "pattern":
		return "must match " + s.Pattern
	}
	return se.reason
}

// wrongType reports whether v, a decoded JSON value, is not of s's type.
func wrongType(s *schema, v any) bool {
	if s.Type == "" || v == nil {
		return false
	}
	switch v.(type) {
	case string:
		return !s.permits("string")
	case bool:
		return !s.permits("boolean")
	case float64, json.Number:
		return !s.permits("number") && !s.permits("integer")
	case map[string]any:
		return !s.permits("object")
	case []any:
		return !s.permits("array")
	}
	return false
}

// typeName is "a string", "an integer", … for the schema's type.
func typeName(s *schema) string {
	switch s.Type {
	case "":
		return "a value of another type"
	case "integer", "object", "array":
		return "an " + s.Type
	default:
		return "a " + s.Type
	}
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
