package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	// by default (a quota AWS can raise to 10 on request).
	MaxFilters = 5
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
	ruleAnythingBut           // none of strs or nums
	ruleAnythingButPrefix     // does not start with s
	ruleAnythingButSuffix     // does not end with s
	ruleAnythingButFold       // equal to none of strs, ignoring case
	ruleAnythingButWildcard   // matches none of strs as wildcards
	ruleAnythingButPrefixFold // does not start with s, ignoring case
	ruleAnythingButSuffixFold // does not end with s, ignoring case
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

// Parse parses one filter pattern, with Lambda's syntax and limits. The
// error names where in the pattern it is wrong ("filter: dynamodb.NewImage.
// n.N: numeric: want an operator, got 5").
func Parse(pattern string) (Pattern, error) {
	if n := utf8.RuneCountInString(pattern); n > MaxPatternLength {
		return Pattern{}, fmt.Errorf("filter: pattern is %d characters; Lambda takes at most %d", n, MaxPatternLength)
	}
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Pattern{}, fmt.Errorf("filter: pattern is not JSON: %w", err)
	}
	if dec.More() {
		return Pattern{}, errors.New("filter: pattern has text after its JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Pattern{}, fmt.Errorf("filter: a pattern is a JSON object, not %s", kindOf(v))
	}
	root, err := parseObject(m, "")
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

func parseObject(m map[string]any, at string) (*object, error) {
	if len(m) == 0 {
		return nil, fmt.Errorf("filter: %s: an empty object matches nothing; leave it out", where(at))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	o := &object{}
	for _, k := range keys {
		path := join(at, k)
		switch v := m[k].(type) {
		case map[string]any:
			sub, err := parseObject(v, path)
			if err != nil {
				return nil, err
			}
			o.fields = append(o.fields, field{key: k, sub: sub})
		case []any:
			if k == "$or" {
				alts, err := parseOr(v, path)
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
				rr, err := parseRule(r, path)
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
	return o, nil
}

func parseOr(v []any, at string) ([]*object, error) {
	if len(v) < 2 {
		return nil, fmt.Errorf("filter: %s: want at least two alternatives", at)
	}
	alts := make([]*object, 0, len(v))
	for i, a := range v {
		m, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("filter: %s[%d]: an alternative is an object, not %s", at, i, kindOf(a))
		}
		o, err := parseObject(m, fmt.Sprintf("%s[%d]", at, i))
		if err != nil {
			return nil, err
		}
		alts = append(alts, o)
	}
	return alts, nil
}

func parseRule(v any, at string) (rule, error) {
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
	m := v.(map[string]any)
	if len(m) != 1 {
		return rule{}, fmt.Errorf("filter: %s: a rule object has exactly one operator, got %d", at, len(m))
	}
	for op, arg := range m {
		at := at + ": " + op
		switch op {
		case "prefix", "suffix":
			s, fold, err := foldable(arg, at)
			kind := map[[2]bool]ruleKind{{false, false}: rulePrefix, {false, true}: rulePrefixFold, {true, false}: ruleSuffix, {true, true}: ruleSuffixFold}[[2]bool{op == "suffix", fold}]
			return rule{kind: kind, s: s}, err
		case "equals-ignore-case":
			s, ok := arg.(string)
			if !ok {
				return rule{}, fmt.Errorf("filter: %s: want a string, got %s", at, kindOf(arg))
			}
			return rule{kind: ruleEqualsFold, s: s}, nil
		case "wildcard":
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
			return parseNumeric(arg, at)
		case "anything-but":
			return parseAnythingBut(arg, at)
		case "cidr":
			return rule{}, fmt.Errorf("filter: %s: Lambda's filters have no cidr rule", at)
		default:
			return rule{}, fmt.Errorf("filter: %s: unknown operator (want prefix, suffix, equals-ignore-case, wildcard, anything-but, numeric or exists)", at)
		}
	}
	panic("unreachable")
}

// foldable reads a prefix's or suffix's argument: a string, or
// {"equals-ignore-case": string}.
func foldable(arg any, at string) (s string, fold bool, err error) {
	switch x := arg.(type) {
	case string:
		return x, false, nil
	case map[string]any:
		if len(x) == 1 {
			if s, ok := x["equals-ignore-case"].(string); ok {
				return s, true, nil
			}
		}
	}
	return "", false, fmt.Errorf("filter: %s: want a string or {\"equals-ignore-case\": string}, got %s", at, jsonText(arg))
}

func parseAnythingBut(arg any, at string) (rule, error) {
	switch x := arg.(type) {
	case string:
		return rule{kind: ruleAnythingBut, strs: []string{x}}, nil
	case json.Number:
		n, err := number(x, at)
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
				return rule{}, fmt.Errorf("filter: %s: a list of strings or numbers, not %s", at, kindOf(e))
			}
		}
		return r, nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		for op, v := range x {
			at := at + ": " + op
			switch op {
			case "prefix", "suffix":
				s, fold, err := foldable(v, at)
				if err == nil && s == "" {
					err = fmt.Errorf("filter: %s: an empty %s", at, op)
				}
				kind := map[[2]bool]ruleKind{{false, false}: ruleAnythingButPrefix, {false, true}: ruleAnythingButPrefixFold, {true, false}: ruleAnythingButSuffix, {true, true}: ruleAnythingButSuffixFold}[[2]bool{op == "suffix", fold}]
				return rule{kind: kind, s: s}, err
			case "equals-ignore-case", "wildcard":
				strs, err := stringOrList(v, at)
				if err != nil {
					return rule{}, err
				}
				if op == "wildcard" {
					for _, s := range strs {
						if err := checkWildcard(s, at); err != nil {
							return rule{}, err
						}
					}
					return rule{kind: ruleAnythingButWildcard, strs: strs}, nil
				}
				return rule{kind: ruleAnythingButFold, strs: strs}, nil
			}
		}
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
	return nil, fmt.Errorf("filter: %s: want a string or a list of strings, got %s", at, jsonText(v))
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

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}
