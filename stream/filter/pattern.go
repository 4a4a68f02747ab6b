package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits Lambda documents for an event source mapping's filters.
const (
	// MaxPatternLength is the longest pattern, in characters (the API's
	// Filter.Pattern length constraint).
	MaxPatternLength = 4096
	// MaxFilters is how many patterns one mapping's FilterCriteria holds
	// by default: "By default, you can define up to five different
	// filters for a single event source mapping" (Lambda event filtering).
	MaxFilters = 5
	// MaxFiltersRaised is the most a mapping holds once AWS raised the
	// quota on request ("you can request a quota increase for up to 10").
	// Say so with Syntax.CriteriaQuota.
	MaxFiltersRaised = 10
	// MaxNumeric bounds the numbers a numeric rule can name: ±5.0e9, with
	// at most six digits after the decimal point, as the event pattern
	// language has it. Values outside it never match a numeric rule.
	MaxNumeric = 5.0e9
)

// Pattern is one filter pattern, parsed: a JSON object whose fields name a
// record's fields, nested objects descending into them and arrays of rules
// at the leaves. A record matches when every field of the pattern matches
// (and one alternative of every "$or"); a leaf matches when one of its
// rules matches one of the values found there (a list in the record — an
// L, SS, NS or BS attribute — is matched element by element).
//
// The zero Pattern matches nothing; build one with Parse.
type Pattern struct {
	src  string
	root *object
}

// object is a pattern object: every field and every $or must match.
type object struct {
	fields []field
	ors    [][]*object
}

// field is one key of a pattern object: a nested object or leaf rules.
type field struct {
	key   string
	sub   *object
	rules []rule
}

type ruleKind uint8

const (
	ruleString ruleKind = iota // exact string
	ruleNumber                 // exact number
	ruleBool
	ruleNull
	rulePrefix
	rulePrefixFold
	ruleSuffix
	ruleSuffixFold
	ruleEqualsFold
	ruleWildcard
	ruleNumeric
	ruleExists
	ruleAnythingBut         // none of strs or nums
	ruleAnythingButPrefix   // starts with none of strs
	ruleAnythingButSuffix   // ends with none of strs
	ruleAnythingButFold     // equal to none of strs, ignoring case
	ruleAnythingButWildcard // matches none of strs as wildcards
)

// rule is one leaf rule.
type rule struct {
	kind ruleKind
	s    string
	n    float64
	b    bool
	strs []string
	nums []float64
	// numeric range: lo (op lo) value (op hi) hi
	lo, hi         float64
	hasLo, hasHi   bool
	loIncl, hiIncl bool
}

// Syntax is the set of operators a pattern may use.
type Syntax uint8

const (
	// Lambda is what Lambda's filtering pages document for a DynamoDB
	// event source mapping ("Control which events Lambda sends to your
	// function", its filter rule syntax table, and "Using event filtering
	// with a DynamoDB event source"): equals, null, empty,
	// equals-ignore-case, prefix, suffix, anything-but with a list of
	// strings or a list of numbers, exists and $or. The syntax table lists
	// numeric rules, but the DynamoDB page says "DynamoDB event filtering
	// doesn't support the use of numeric operators (numeric equals and
	// numeric range)", so they are refused everywhere in a DynamoDB record. It is the default: a
	// mapping's FilterCriteria is refused locally for what Lambda may
	// refuse or evaluate otherwise, before a deploy.
	Lambda Syntax = iota
	// EventBridge is the event pattern language of EventBridge rules and
	// Pipes' filters ("Content filtering in Amazon EventBridge event
	// patterns"): Lambda's set and wildcard, prefix and suffix with
	// equals-ignore-case, anything-but with a single value or with
	// prefix, suffix, equals-ignore-case or wildcard, and numeric rules
	// anywhere. Use it for patterns meant for EventBridge or Pipes, not
	// for a mapping's FilterCriteria.
	EventBridge
)

func (s Syntax) String() string {
	if s == EventBridge {
		return "EventBridge"
	}
	return "Lambda"
}

// The pages an error cites.
const (
	lambdaSyntaxPage = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax"
	lambdaDDBPage    = "https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html"
	lambdaQuotaPage  = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html"
)

// Parse parses one filter pattern with Lambda's syntax and limits (the
// Lambda Syntax). The error names where in the pattern it is wrong
// ("filter: dynamodb.NewImage.n.N: numeric: want an operator, got 5").
func Parse(pattern string) (Pattern, error) { return Lambda.Parse(pattern) }

// Parse parses one filter pattern with the syntax's operators and
// Lambda's limits. A key repeated in one object is read as event-ruler,
// AWS's matcher, reads it, token by token: a repeated object adds its
// fields (so {"dynamodb":{"NewImage":…},"dynamodb":{"OldImage":…}} wants
// both), a repeated list of rules replaces the earlier one. What AWS
// documents nothing for and its matcher could read otherwise is refused:
// a repeated "$or", a key that is an object once and a list once, and a
// field named both inside an alternative of "$or" and beside it.
func (s Syntax) Parse(pattern string) (Pattern, error) {
	if n := utf8.RuneCountInString(pattern); n > MaxPatternLength {
		return Pattern{}, fmt.Errorf("filter: pattern is %d characters; Lambda takes at most %d", n, MaxPatternLength)
	}
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	v, err := readValue(dec)
	if err != nil {
		return Pattern{}, fmt.Errorf("filter: pattern is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Pattern{}, errors.New("filter: pattern has text after its JSON object")
	}
	m, ok := v.(jobject)
	if !ok {
		return Pattern{}, fmt.Errorf("filter: a pattern is a JSON object, not %s", kindOf(v))
	}
	root, err := parser{syntax: s}.object(m, "", placeRecord)
	if err != nil {
		return Pattern{}, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(pattern)); err != nil {
		return Pattern{}, fmt.Errorf("filter: pattern is not JSON: %w", err)
	}
	return Pattern{src: b.String(), root: root}, nil
}

// MustParse is Parse for patterns written in the program: it panics on an
// error.
func MustParse(pattern string) Pattern {
	p, err := Parse(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// String is the pattern's JSON, compacted: what a template's
// FilterCriteria Pattern holds.
func (p Pattern) String() string { return p.src }

// place is where in the record a pattern object stands: what a numeric
// rule is refused on.
type place uint8

const (
	placeRecord place = iota // the record itself
	placeChange              // its "dynamodb"
	placeItem                // under Keys, NewImage or OldImage: attribute values
	placeOther               // anywhere else
)

func (pl place) child(key string) place {
	switch {
	case pl == placeRecord && key == "dynamodb":
		return placeChange
	case pl == placeChange && (key == "Keys" || key == "NewImage" || key == "OldImage"), pl == placeItem:
		return placeItem
	}
	return placeOther
}

// parser parses pattern objects and rules under one syntax.
type parser struct{ syntax Syntax }

func (p parser) object(m jobject, at string, pl place) (*object, error) {
	if len(m) == 0 {
		return nil, fmt.Errorf("filter: %s: an empty object matches nothing; leave it out", where(at))
	}
	m, err := merged(m, at)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(m, func(a, b member) int { return strings.Compare(a.key, b.key) })
	o := &object{}
	for _, kv := range m {
		k := kv.key
		path := join(at, k)
		switch v := kv.val.(type) {
		case jobject:
			sub, err := p.object(v, path, pl.child(k))
			if err != nil {
				return nil, err
			}
			o.fields = append(o.fields, field{key: k, sub: sub})
		case []any:
			if k == "$or" {
				alts, err := p.or(v, path, pl)
				if err != nil {
					return nil, err
				}
				o.ors = append(o.ors, alts)
				continue
			}
			if len(v) == 0 {
				return nil, fmt.Errorf("filter: %s: an empty list of rules matches nothing", path)
			}
			f := field{key: k}
			for _, r := range v {
				rr, err := p.rule(r, path, pl.child(k))
				if err != nil {
					return nil, err
				}
				f.rules = append(f.rules, rr)
			}
			o.fields = append(o.fields, f)
		default:
			return nil, fmt.Errorf("filter: %s: want an object or a list of rules, got %s (write [%s])", path, kindOf(v), jsonText(v))
		}
	}
	for _, alts := range o.ors {
		beside := o.leafPaths("", false)
		for i, a := range alts {
			for _, lp := range a.leafPaths("", true) {
				if slices.Contains(beside, lp) {
					return nil, fmt.Errorf("filter: %s: %s is named both in $or[%d] and beside the $or; AWS documents nothing for it and its matcher lets one replace the other: write it in each alternative", where(at), lp, i)
				}
			}
		}
	}
	return o, nil
}

// leafPaths are the paths of o's lists of rules, below its nested objects
// too, and (with ors) in its alternatives.
func (o *object) leafPaths(at string, ors bool) []string {
	var out []string
	for _, f := range o.fields {
		if f.sub != nil {
			out = append(out, f.sub.leafPaths(join(at, f.key), true)...)
		} else {
			out = append(out, join(at, f.key))
		}
	}
	if ors {
		for _, alts := range o.ors {
			for _, a := range alts {
				out = append(out, a.leafPaths(at, true)...)
			}
		}
	}
	return out
}

// merged is m with its repeated keys read as event-ruler reads them: a
// repeated object adds its fields to the first, a repeated list of rules
// replaces the earlier one.
func merged(m jobject, at string) (jobject, error) {
	out := make(jobject, 0, len(m))
	seen := make(map[string]int, len(m))
	for _, kv := range m {
		i, again := seen[kv.key]
		if !again {
			seen[kv.key] = len(out)
			out = append(out, kv)
			continue
		}
		prev, _ := out[i].val.(jobject)
		next, _ := kv.val.(jobject)
		_, prevList := out[i].val.([]any)
		_, nextList := kv.val.([]any)
		switch {
		case kv.key == "$or":
			return nil, fmt.Errorf("filter: %s: $or twice in one object; AWS documents nothing for it: put the alternatives in one $or", where(at))
		case prev != nil && next != nil:
			out[i].val = append(slices.Clip(prev), next...)
		case prevList && nextList:
			out[i].val = kv.val
		default:
			return nil, fmt.Errorf("filter: %s: key %q is an object once and a list of rules once; AWS documents nothing for it", where(at), kv.key)
		}
	}
	return out, nil
}

func (p parser) or(v []any, at string, pl place) ([]*object, error) {
	if len(v) < 2 {
		return nil, fmt.Errorf("filter: %s: want at least two alternatives", at)
	}
	alts := make([]*object, 0, len(v))
	for i, a := range v {
		m, ok := a.(jobject)
		if !ok {
			return nil, fmt.Errorf("filter: %s[%d]: an alternative is an object, not %s", at, i, kindOf(a))
		}
		o, err := p.object(m, fmt.Sprintf("%s[%d]", at, i), pl)
		if err != nil {
			return nil, err
		}
		alts = append(alts, o)
	}
	return alts, nil
}

// notLambda is the error for an operator that Lambda's filter rule
// syntax does not document.
func notLambda(at, what string) error {
	return fmt.Errorf("filter: %s: %s is not in Lambda's filter rule syntax (%s); for an EventBridge rule or a Pipe, parse with filter.EventBridge", at, what, lambdaSyntaxPage)
}

func (p parser) rule(v any, at string, pl place) (rule, error) {
	switch x := v.(type) {
	case string:
		return rule{kind: ruleString, s: x}, nil
	case json.Number:
		n, err := number(x, at)
		return rule{kind: ruleNumber, n: n}, err
	case bool:
		return rule{kind: ruleBool, b: x}, nil
	case nil:
		return rule{kind: ruleNull}, nil
	case []any:
		return rule{}, fmt.Errorf("filter: %s: a rule is a value or an object, not a list", at)
	}
	m := v.(jobject)
	if len(m) != 1 {
		return rule{}, fmt.Errorf("filter: %s: a rule object has exactly one operator, got %d", at, len(m))
	}
	op, arg := m[0].key, m[0].val
	at += ": " + op
	lambda := p.syntax == Lambda
	switch op {
	case "prefix", "suffix":
		s, fold, err := foldable(arg, at)
		if err == nil && fold && lambda {
			err = notLambda(at, op+" with equals-ignore-case")
		}
		kind := map[[2]bool]ruleKind{{false, false}: rulePrefix, {false, true}: rulePrefixFold, {true, false}: ruleSuffix, {true, true}: ruleSuffixFold}[[2]bool{op == "suffix", fold}]
		return rule{kind: kind, s: s}, err
	case "equals-ignore-case":
		s, ok := arg.(string)
		if !ok {
			return rule{}, fmt.Errorf("filter: %s: want a string, got %s", at, kindOf(arg))
		}
		return rule{kind: ruleEqualsFold, s: s}, nil
	case "wildcard":
		if lambda {
			return rule{}, notLambda(at, "wildcard")
		}
		s, ok := arg.(string)
		if !ok {
			return rule{}, fmt.Errorf("filter: %s: want a string, got %s", at, kindOf(arg))
		}
		return rule{kind: ruleWildcard, s: s}, checkWildcard(s, at)
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return rule{}, fmt.Errorf("filter: %s: want true or false, got %s", at, kindOf(arg))
		}
		return rule{kind: ruleExists, b: b}, nil
	case "numeric":
		switch {
		case lambda && pl == placeItem:
			return rule{}, fmt.Errorf("filter: %s: a numeric rule on an attribute value: the value is a string in the record ({\"N\": \"5\"}) and DynamoDB event filtering does not support numeric operators (%s); match its text, or compare in the handler", at, lambdaDDBPage)
		case lambda:
			return rule{}, fmt.Errorf("filter: %s: DynamoDB event filtering does not support numeric operators, numeric equals or numeric range (%s); AWS's sample record has SizeBytes a number but ApproximateCreationDateTime a string, so a numeric rule may keep or drop other records there than here; compare in the handler, or parse with filter.EventBridge for a rule or a Pipe", at, lambdaDDBPage)
		}
		return parseNumeric(arg, at)
	case "anything-but":
		return p.anythingBut(arg, at)
	case "cidr":
		return rule{}, fmt.Errorf("filter: %s: Lambda's filters have no cidr rule", at)
	}
	return rule{}, fmt.Errorf("filter: %s: unknown operator (want prefix, suffix, equals-ignore-case, wildcard, anything-but, numeric or exists)", at)
}

// foldable reads a prefix's or suffix's argument: a string, or
// {"equals-ignore-case": string}.
func foldable(arg any, at string) (s string, fold bool, err error) {
	switch x := arg.(type) {
	case string:
		return x, false, nil
	case jobject:
		if len(x) == 1 && x[0].key == "equals-ignore-case" {
			if s, ok := x[0].val.(string); ok {
				return s, true, nil
			}
		}
	}
	return "", false, fmt.Errorf("filter: %s: want a string or {\"equals-ignore-case\": string}, got %s", at, jsonText(arg))
}

// anythingBut reads anything-but's argument. Its list holds strings only
// or numbers only: event-ruler refuses a mixed one, and null or a
// boolean in it.
func (p parser) anythingBut(arg any, at string) (rule, error) {
	lambda := p.syntax == Lambda
	switch x := arg.(type) {
	case string, json.Number:
		if lambda {
			return rule{}, notLambda(at, fmt.Sprintf("a single value (write [%s])", jsonText(x)))
		}
		if s, ok := x.(string); ok {
			return rule{kind: ruleAnythingBut, strs: []string{s}}, nil
		}
		n, err := number(x.(json.Number), at)
		return rule{kind: ruleAnythingBut, nums: []float64{n}}, err
	case []any:
		if len(x) == 0 {
			return rule{}, fmt.Errorf("filter: %s: an empty list", at)
		}
		r := rule{kind: ruleAnythingBut}
		for _, e := range x {
			switch e := e.(type) {
			case string:
				r.strs = append(r.strs, e)
			case json.Number:
				n, err := number(e, at)
				if err != nil {
					return rule{}, err
				}
				r.nums = append(r.nums, n)
			default:
				return rule{}, fmt.Errorf("filter: %s: a list of strings or of numbers, not %s", at, kindOf(e))
			}
		}
		if len(r.strs) > 0 && len(r.nums) > 0 {
			return rule{}, fmt.Errorf("filter: %s: a list of strings or of numbers, not both (AWS's matcher refuses a mixed list)", at)
		}
		return r, nil
	case jobject:
		if len(x) != 1 {
			break
		}
		op, v := x[0].key, x[0].val
		at := at + ": " + op
		if op != "prefix" && op != "suffix" && op != "equals-ignore-case" && op != "wildcard" {
			break
		}
		if lambda {
			return rule{}, notLambda(at, "anything-but with "+op)
		}
		strs, err := stringOrList(v, at)
		if err != nil {
			return rule{}, err
		}
		switch op {
		case "prefix", "suffix":
			if slices.Contains(strs, "") {
				return rule{}, fmt.Errorf("filter: %s: an empty %s", at, op)
			}
			kind := ruleAnythingButPrefix
			if op == "suffix" {
				kind = ruleAnythingButSuffix
			}
			return rule{kind: kind, strs: strs}, nil
		case "wildcard":
			for _, s := range strs {
				if err := checkWildcard(s, at); err != nil {
					return rule{}, err
				}
			}
			return rule{kind: ruleAnythingButWildcard, strs: strs}, nil
		case "equals-ignore-case":
			return rule{kind: ruleAnythingButFold, strs: strs}, nil
		}
	}
	if lambda {
		return rule{}, fmt.Errorf("filter: %s: want a list of strings or a list of numbers, got %s", at, jsonText(arg))
	}
	return rule{}, fmt.Errorf("filter: %s: want a string, a number, a list of them, or {prefix|suffix|equals-ignore-case|wildcard: …}, got %s", at, jsonText(arg))
}

func stringOrList(v any, at string) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("filter: %s: want strings, got %s", at, kindOf(e))
			}
			out = append(out, s)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("filter: %s: want a string or a list of strings, got %s (AWS's matcher takes nothing else here)", at, jsonText(v))
}

// parseNumeric reads ["=", n], [op, n] or [">"|">=", lo, "<"|"<=", hi].
func parseNumeric(arg any, at string) (rule, error) {
	l, ok := arg.([]any)
	if !ok || (len(l) != 2 && len(l) != 4) {
		return rule{}, fmt.Errorf("filter: %s: want [op, number] or [\">\"|\">=\", low, \"<\"|\"<=\", high], got %s", at, jsonText(arg))
	}
	r := rule{kind: ruleNumeric}
	for i := 0; i < len(l); i += 2 {
		op, ok := l[i].(string)
		if !ok {
			return rule{}, fmt.Errorf("filter: %s: want an operator, got %s", at, jsonText(l[i]))
		}
		num, ok := l[i+1].(json.Number)
		if !ok {
			return rule{}, fmt.Errorf("filter: %s: %s wants a number, got %s", at, op, jsonText(l[i+1]))
		}
		n, err := number(num, at)
		if err != nil {
			return rule{}, err
		}
		switch {
		case op == "=" && len(l) == 2:
			r.lo, r.hi, r.hasLo, r.hasHi, r.loIncl, r.hiIncl = n, n, true, true, true, true
		case (op == ">" || op == ">=") && i == 0:
			r.lo, r.hasLo, r.loIncl = n, true, op == ">="
		case (op == "<" || op == "<=") && (i == 2 || len(l) == 2):
			r.hi, r.hasHi, r.hiIncl = n, true, op == "<="
		default:
			return rule{}, fmt.Errorf("filter: %s: operator %q out of place (a range is a lower bound > or >= first, then an upper < or <=)", at, op)
		}
	}
	if r.hasLo && r.hasHi && !(r.lo < r.hi || (r.lo == r.hi && r.loIncl && r.hiIncl)) {
		return rule{}, fmt.Errorf("filter: %s: an empty range", at)
	}
	return r, nil
}

// number reads a pattern's number: within ±MaxNumeric, at most six
// decimals.
func number(n json.Number, at string) (float64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > MaxNumeric {
		return 0, fmt.Errorf("filter: %s: number %s out of range ±5.0e9", at, n)
	}
	if i := strings.IndexByte(string(n), '.'); i >= 0 && !strings.ContainsAny(string(n), "eE") && len(string(n))-i-1 > 6 {
		return 0, fmt.Errorf("filter: %s: number %s has more than six decimals", at, n)
	}
	return f, nil
}

// checkWildcard refuses what the pattern language refuses: two *s in a
// row, and a \ that escapes anything but * or \.
func checkWildcard(s, at string) error {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) || (s[i+1] != '*' && s[i+1] != '\\') {
				return fmt.Errorf("filter: %s: %q: \\ escapes only * and \\", at, s)
			}
			i++
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				return fmt.Errorf("filter: %s: %q: consecutive wildcards", at, s)
			}
		}
	}
	return nil
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func where(at string) string {
	if at == "" {
		return "the pattern"
	}
	return at
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "a list"
	}
	return "an object"
}

// jobject is a JSON object with its members in order, repeated keys
// kept: what event-ruler's token-by-token reading of a pattern sees.
type jobject []member

type member struct {
	key string
	val any // jobject, []any, string, json.Number, bool or nil
}

// MarshalJSON writes the object back, members in order.
func (o jobject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// readValue reads one JSON value token by token, objects as jobjects.
func readValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		var o jobject
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, member{key: k.(string), val: v})
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		if o == nil {
			o = jobject{}
		}
		return o, nil
	case json.Delim('['):
		l := []any{}
		for dec.More() {
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return l, nil
	}
	return t, nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}
