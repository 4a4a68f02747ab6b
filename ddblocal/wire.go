package ddblocal

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The DynamoDB JSON wire format as the Limiter reads it: requests and
// responses are JSON 1.0 bodies whose items are maps of attribute names to
// attribute values ({"S": "…"}, {"N": "…"}, {"M": {…}}, …). The Limiter
// reads what it needs (keys, sizes, expressions) and passes the bodies on
// as they came, but for a batch it answers in part: that one goes on with
// the keys or items it lets through, and its answer gains the others.

// item is an item (or a key) on the wire.
type item map[string]json.RawMessage

// attr is one attribute value, its type tag and its value.
type attr struct {
	tag string
	raw json.RawMessage
}

// parseAttr reads an attribute value ({"S": "x"}).
func parseAttr(raw json.RawMessage) (attr, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 {
		return attr{}, fmt.Errorf("an attribute value is not an object of one type: %.60s", raw)
	}
	for tag, v := range m {
		return attr{tag, v}, nil
	}
	return attr{}, nil
}

// text is a key attribute's value as a person reads it: the string, the
// number, or the binary in base64.
func (a attr) text() string {
	var s string
	if json.Unmarshal(a.raw, &s) == nil {
		return s
	}
	return string(a.raw)
}

// keyValue is the value of a key attribute of it ("" and false: absent or
// not a scalar).
func (it item) keyValue(name string) (string, bool) {
	raw, ok := it[name]
	if !ok {
		return "", false
	}
	return scalar(raw)
}

// scalar is a string, number or binary value as one string with its type
// ("S:x"); false for any other value.
func scalar(raw json.RawMessage) (string, bool) {
	a, err := parseAttr(raw)
	if err != nil || (a.tag != "S" && a.tag != "N" && a.tag != "B") {
		return "", false
	}
	return a.tag + ":" + a.text(), true
}

// identity is the item's primary key as one string (table and key
// attributes), the same however a client spelled the JSON.
func (it item) identity(table string, key []string) string {
	var b strings.Builder
	b.WriteString(table)
	for _, name := range key {
		v, _ := it.keyValue(name)
		b.WriteString("\x00")
		b.WriteString(v)
	}
	return b.String()
}

// size is an item's size as DynamoDB counts it: the UTF-8 length of each
// attribute's name plus its value's size ("Item sizes and formats",
// amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
func (it item) size() int {
	n := 0
	for name, raw := range it {
		n += len(name) + valueSize(raw)
	}
	return n
}

// valueSize is one attribute value's size: a string's UTF-8 bytes, a
// number's about one byte per two digits plus one, a binary's bytes, 1 for
// a boolean or null, and a list's or map's elements plus 3 bytes (and 1 per
// element), as the page above gives it.
func valueSize(raw json.RawMessage) int {
	a, err := parseAttr(raw)
	if err != nil {
		return len(raw)
	}
	switch a.tag {
	case "S":
		var s string
		_ = json.Unmarshal(a.raw, &s)
		return len(s)
	case "N":
		var s string
		_ = json.Unmarshal(a.raw, &s)
		return numberSize(s)
	case "B":
		var s string
		_ = json.Unmarshal(a.raw, &s)
		return base64.StdEncoding.DecodedLen(len(s))
	case "BOOL", "NULL":
		return 1
	case "SS", "NS", "BS":
		var ss []string
		_ = json.Unmarshal(a.raw, &ss)
		n := 0
		for _, s := range ss {
			switch a.tag {
			case "SS":
				n += len(s)
			case "NS":
				n += numberSize(s)
			default:
				n += base64.StdEncoding.DecodedLen(len(s))
			}
		}
		return n
	case "L":
		var l []json.RawMessage
		_ = json.Unmarshal(a.raw, &l)
		n := 3
		for _, v := range l {
			n += 1 + valueSize(v)
		}
		return n
	case "M":
		var m map[string]json.RawMessage
		_ = json.Unmarshal(a.raw, &m)
		n := 3
		for k, v := range m {
			n += 1 + len(k) + valueSize(v)
		}
		return n
	}
	return len(a.raw)
}

func numberSize(s string) int {
	digits := 0
	for _, r := range strings.TrimLeft(s, "-+0") {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

// assignments are the "name = :value" pairs of an expression (an update's
// SET clause, a query's key condition), names resolved through names and
// values through values: what the Limiter reads to know which index keys a
// write sets and which partition a query reads. A value the expression
// computes (if_not_exists, list_append, +) is not read.
func assignments(expr string, names map[string]string, values item) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, m := range assignment.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		if strings.HasPrefix(name, "#") {
			if n, ok := names[name]; ok {
				name = n
			}
		}
		if v, ok := values[m[2]]; ok {
			out[name] = v
		}
	}
	return out
}

// assignment is "name = :value" where no operator follows the value.
var assignment = regexp.MustCompile(`(#?[A-Za-z0-9_.\-]+)\s*=\s*(:[A-Za-z0-9_]+)\b\s*(?:$|,|\)|AND\b|and\b|REMOVE\b|ADD\b|DELETE\b|SET\b)`)

// errorBody is DynamoDB's JSON body of an error of type code (AWS's
// namespace, as the SDKs read it) with its message and fields.
func errorBody(code, message string, fields map[string]any) []byte {
	m := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + code}
	if message != "" {
		m["message"] = message
	}
	for k, v := range fields {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// display is a key value for people: at most 200 bytes of it, whole runes.
func display(v string) string {
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	if len(v) <= 200 {
		return v
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…"
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
