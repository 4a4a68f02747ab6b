package filter_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// naiveMatch is a second, deliberately plain evaluation of a pattern: the
// record is encoded to JSON as Lambda sends it and decoded into maps, the
// pattern is walked over that JSON, and every rule is the most literal
// reading of the documentation (a regexp for wildcards, every cut point for
// the case-insensitive prefix). The fuzz target and the conformance test
// compare filter.Pattern.Match with it.
func naiveMatch(pattern string, r events.DynamoDBEventRecord) bool {
	doc := decode(mustMarshal(r))
	d := json.NewDecoder(strings.NewReader(pattern))
	d.UseNumber()
	p, _ := naiveRead(d).(map[string]any)
	return naiveObject(p, doc)
}

// naiveRead reads a pattern as event-ruler's compiler does, one token at
// a time and paths as they come: an object under a key seen before adds
// its paths to the earlier one's, a list of rules replaces the earlier
// list at the same path.
func naiveRead(d *json.Decoder) any {
	t, err := d.Token()
	if err != nil {
		panic(err)
	}
	switch t {
	case json.Delim('{'):
		m := map[string]any{}
		for d.More() {
			k, _ := d.Token()
			v := naiveRead(d)
			old, isObj := m[k.(string)].(map[string]any)
			if add, ok := v.(map[string]any); ok && isObj {
				naiveMerge(old, add)
				continue
			}
			m[k.(string)] = v
		}
		d.Token()
		return m
	case json.Delim('['):
		l := []any{}
		for d.More() {
			l = append(l, naiveRead(d))
		}
		d.Token()
		return l
	}
	return t
}

// naiveMerge adds add's paths to m's: objects meet, anything else
// replaces.
func naiveMerge(m, add map[string]any) {
	for k, v := range add {
		a, ok1 := m[k].(map[string]any)
		b, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			naiveMerge(a, b)
			continue
		}
		m[k] = v
	}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func decode(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

// flat is v with lists flattened into their elements.
func flat(v any) []any {
	l, ok := v.([]any)
	if !ok {
		return []any{v}
	}
	var out []any
	for _, e := range l {
		out = append(out, flat(e)...)
	}
	return out
}

// naiveObject: the pattern object p matches the JSON value doc (a missing
// one is nil). A nested object under a list must match one element whole.
func naiveObject(p map[string]any, doc any) bool {
	m, _ := doc.(map[string]any)
	for k, v := range p {
		if k == "$or" {
			one := false
			for _, alt := range v.([]any) {
				if naiveObject(alt.(map[string]any), doc) {
					one = true
				}
			}
			if !one {
				return false
			}
			continue
		}
		kid, present := m[k]
		switch v := v.(type) {
		case map[string]any:
			if _, isList := kid.([]any); !isList {
				if !naiveObject(v, kid) {
					return false
				}
				continue
			}
			one := false
			for _, e := range flat(kid) {
				if naiveObject(v, e) {
					one = true
				}
			}
			if !one {
				return false
			}
		case []any:
			var leaves []any
			if present {
				for _, c := range flat(kid) {
					if _, isObj := c.(map[string]any); !isObj {
						leaves = append(leaves, c)
					}
				}
			}
			ok := false
			for _, rule := range v {
				if naiveRule(rule, leaves) {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

func naiveRule(rule any, leaves []any) bool {
	if m, ok := rule.(map[string]any); ok {
		if e, ok := m["exists"]; ok {
			return e.(bool) == (len(leaves) > 0)
		}
	}
	for _, l := range leaves {
		if naiveLeaf(rule, l) {
			return true
		}
	}
	return false
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

func naiveLeaf(rule, leaf any) bool {
	s, isStr := leaf.(string)
	switch r := rule.(type) {
	case string:
		return isStr && s == r
	case bool:
		b, ok := leaf.(bool)
		return ok && b == r
	case nil:
		return leaf == nil
	case json.Number:
		a, ok1 := num(r)
		b, ok2 := num(leaf)
		return ok1 && ok2 && a == b
	}
	m := rule.(map[string]any)
	for op, arg := range m {
		switch op {
		case "prefix", "suffix":
			if !isStr {
				return false
			}
			return affix(op, arg, s)
		case "equals-ignore-case":
			return isStr && strings.EqualFold(s, arg.(string))
		case "wildcard":
			return isStr && wildRE(arg.(string)).MatchString(s)
		case "numeric":
			f, ok := num(leaf)
			if !ok || f < -5e9 || f > 5e9 {
				return false
			}
			l := arg.([]any)
			for i := 0; i < len(l); i += 2 {
				b, _ := num(l[i+1])
				var in bool
				switch l[i].(string) {
				case "=":
					in = f == b
				case "<":
					in = f < b
				case "<=":
					in = f <= b
				case ">":
					in = f > b
				case ">=":
					in = f >= b
				}
				if !in {
					return false
				}
			}
			return true
		case "anything-but":
			// event-ruler: any value there, of any type, but the ones
			// named; a string is never a number, nor a number a string.
			switch a := arg.(type) {
			case string, json.Number:
				return !naiveLeaf(a, leaf)
			case []any:
				for _, e := range a {
					if naiveLeaf(e, leaf) {
						return false
					}
				}
				return true
			case map[string]any:
				for op, v := range a {
					l, ok := v.([]any)
					if !ok {
						l = []any{v}
					}
					for _, e := range l {
						if naiveLeaf(map[string]any{op: e}, leaf) {
							return false
						}
					}
					return true
				}
			}
		}
	}
	return false
}

func isNum(v any) bool { _, ok := v.(json.Number); return ok }

// affix: s begins (prefix) or ends (suffix) with arg, a string or
// {"equals-ignore-case": string}; the case-insensitive forms try every
// cut of s at a character boundary.
func affix(op string, arg any, s string) bool {
	if p, ok := arg.(string); ok {
		if op == "prefix" {
			return strings.HasPrefix(s, p)
		}
		return strings.HasSuffix(s, p)
	}
	p := arg.(map[string]any)["equals-ignore-case"].(string)
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !utf8.RuneStart(s[i]) {
			continue
		}
		if op == "prefix" && strings.EqualFold(s[:i], p) {
			return true
		}
		if op == "suffix" && strings.EqualFold(s[i:], p) {
			return true
		}
	}
	return false
}

// wildRE turns a wildcard into a regexp: * is .*, \* and \\ are literal.
func wildRE(w string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	escaped := false
	for _, c := range w {
		switch {
		case escaped:
			b.WriteString(regexp.QuoteMeta(string(c)))
			escaped = false
		case c == '\\':
			escaped = true
		case c == '*':
			b.WriteString(`.*`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}
