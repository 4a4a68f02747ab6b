package filter_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/filter"
)

// gen turns fuzz bytes into choices (0 when they run out).
type gen struct{ b []byte }

func (g *gen) n(k int) int {
	if len(g.b) == 0 {
		return 0
	}
	c := int(g.b[0])
	g.b = g.b[1:]
	return c % k
}

// Strings and numbers chosen to meet at the rules' edges: case, multi-byte
// case folding (ß, K and the Kelvin sign), stars and backslashes, empty
// text, prefixes of one another.
var (
	texts = []string{"", "x", "X", "xy", "XY", "yx", "a*b", "a\\b", "us-east-1", "US-west", "ß", "SS", "K", "\u212a", "é", "É", "1", "100", "dir/a.png", "*"}
	nums  = []float64{0, 1, -1, 10, 100, 5e9, -5e9, 5e9 + 1, 0.5, 1e-6}
)

func (g *gen) text() string { return texts[g.n(len(texts))] }

// attr makes an attribute value of any type, lists and maps included.
func (g *gen) attr(depth int) events.DynamoDBAttributeValue {
	switch k := g.n(12); {
	case k == 0:
		return events.NewNumberAttribute([]string{"1", "100", "-1", "0.5"}[g.n(4)])
	case k == 1:
		return events.NewBooleanAttribute(g.n(2) == 0)
	case k == 2:
		return events.NewNullAttribute()
	case k == 3:
		return events.NewStringSetAttribute([]string{g.text(), g.text() + "!"})
	case k == 4 && depth < 2:
		return events.NewListAttribute([]events.DynamoDBAttributeValue{g.attr(depth + 1), g.attr(depth + 1)})
	case k == 5 && depth < 2:
		return events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"a": g.attr(depth + 1), "b": g.attr(depth + 1)})
	default:
		return events.NewStringAttribute(g.text())
	}
}

func (g *gen) record() events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{}
	for _, name := range []string{"a", "b", "c"} {
		if g.n(3) != 0 {
			img[name] = g.attr(0)
		}
	}
	r := events.DynamoDBEventRecord{EventName: []string{"INSERT", "MODIFY", "REMOVE"}[g.n(3)], EventID: "e1"}
	r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(g.text())}
	r.Change.SizeBytes = int64(nums[g.n(len(nums))])
	r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Unix(1700000000, 0)}
	switch g.n(8) {
	case 0:
		r.Change.OldImage = img
	case 1, 2:
		r.Change.OldImage, r.Change.NewImage = img, img
	default:
		r.Change.NewImage = img
	}
	return r
}

// rule makes one leaf rule of any kind.
func (g *gen) rule() any {
	t := g.text()
	switch g.n(16) {
	case 0:
		return nums[g.n(len(nums))]
	case 1:
		return g.n(2) == 0
	case 2:
		return map[string]any{"prefix": t}
	case 3:
		return map[string]any{"prefix": map[string]any{"equals-ignore-case": t}}
	case 4:
		return map[string]any{"suffix": t}
	case 5:
		return map[string]any{"suffix": map[string]any{"equals-ignore-case": t}}
	case 6:
		return map[string]any{"equals-ignore-case": t}
	case 7:
		return map[string]any{"wildcard": []string{"*", "x*", "*y", "a\\*b", "*/*.png", "*\u212a*", "x*y*"}[g.n(7)]}
	case 8:
		return map[string]any{"exists": g.n(2) == 0}
	case 9:
		ops := [][]any{{"=", nums[g.n(4)]}, {">", nums[g.n(4)]}, {"<=", nums[g.n(4)]}, {">=", -1, "<", 100}, {">", 0, "<=", 5e9}}
		return map[string]any{"numeric": ops[g.n(len(ops))]}
	case 10:
		return map[string]any{"anything-but": []any{t, g.text()}}
	case 11:
		return map[string]any{"anything-but": nums[g.n(len(nums))]}
	case 12:
		if g.n(2) == 0 {
			return map[string]any{"anything-but": map[string]any{[]string{"prefix", "suffix"}[g.n(2)]: []string{t + "x", g.text() + "y"}}}
		}
		return map[string]any{"anything-but": map[string]any{[]string{"prefix", "suffix"}[g.n(2)]: t + "x"}}
	case 13:
		return map[string]any{"anything-but": map[string]any{"equals-ignore-case": []string{t, g.text()}}}
	case 14:
		return map[string]any{"anything-but": map[string]any{"wildcard": "*" + t}}
	}
	return t
}

// leaf is a pattern for one attribute: down to a typed leaf, or stopping
// short at the attribute (an intermediate node), or through a map.
func (g *gen) leaf() any {
	rules := []any{g.rule()}
	for len(rules) < 4 && g.n(3) == 1 {
		rules = append(rules, g.rule())
	}
	switch g.n(7) {
	case 0:
		return rules
	case 1:
		return map[string]any{"M": map[string]any{"a": map[string]any{"S": rules}}}
	case 2:
		return map[string]any{"L": map[string]any{"S": rules}}
	case 3: // two fields inside one element of a list of maps
		return map[string]any{"L": map[string]any{"M": map[string]any{"a": map[string]any{"S": rules}, "b": map[string]any{"BOOL": []any{g.rule()}}}}}
	}
	return map[string]any{[]string{"S", "N", "BOOL", "SS", "NULL", "S", "S", "S"}[g.n(8)]: rules}
}

func (g *gen) image() map[string]any {
	img := map[string]any{}
	for _, name := range []string{"a", "b", "c"} {
		if g.n(3) == 0 {
			img[name] = g.leaf()
		}
	}
	if g.n(4) == 0 {
		img["$or"] = []any{map[string]any{"a": g.leaf()}, map[string]any{"b": g.leaf()}}
	}
	if len(img) == 0 {
		img["a"] = g.leaf()
	}
	return img
}

func (g *gen) pattern() string {
	d := map[string]any{[]string{"NewImage", "NewImage", "NewImage", "OldImage"}[g.n(4)]: g.image()}
	if g.n(5) == 0 {
		d["SizeBytes"] = []any{g.rule()}
	}
	p := map[string]any{"dynamodb": d}
	if g.n(6) == 0 {
		p["eventName"] = []any{g.rule()}
	}
	b, _ := json.Marshal(p)
	if g.n(4) == 0 {
		// "dynamodb" again, as AWS's own Boolean example writes it: its
		// paths add to the first one's (a path given twice keeps the
		// second's rules).
		again, _ := json.Marshal(map[string]any{[]string{"NewImage", "OldImage"}[g.n(2)]: g.image()})
		return string(b[:len(b)-1]) + `,"dynamodb":` + string(again) + "}"
	}
	return string(b)
}

// FuzzMatch compares Pattern.Match with the naive evaluation on generated
// patterns of every rule kind and records of every attribute type.
func FuzzMatch(f *testing.F) {
	for _, seed := range []string{"", "\x01\x02\x03", "\x05\x00\x07\x09\x0b", "\xff\xfe\xfd\xfc\xfb\xfa\xf9", "abcdefghijklmnopqrstuvwxyz"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g := &gen{b: b}
		r := g.record()
		text := g.pattern()
		p, err := filter.EventBridge.Parse(text)
		if err != nil {
			return // a generated range can be empty
		}
		if got, want := p.Match(r), naiveMatch(text, r); got != want {
			rb, _ := json.Marshal(r)
			t.Fatalf("pattern %s\nrecord %s\nMatch=%v, naive=%v", text, rb, got, want)
		}
		if lp, err := filter.Parse(text); err == nil && lp.Match(r) != p.Match(r) {
			t.Fatalf("pattern %s: Lambda's syntax matches otherwise than EventBridge's", text)
		}
	})
}

// TestMatchAgreesWithNaive runs the fuzz target's generator over many
// seeds in every `go test`, so the comparison runs without -fuzz too.
func TestMatchAgreesWithNaive(t *testing.T) {
	matched, parsed, lambda, repeated := 0, 0, 0, 0
	defer func() {
		// Both outcomes come often, or the comparison proves little.
		if matched < 500 || parsed-matched < 500 {
			t.Errorf("%d of %d generated patterns matched", matched, parsed)
		}
		if lambda < 1000 || repeated < 1000 {
			t.Errorf("of %d patterns, %d in Lambda's syntax and %d with a repeated key", parsed, lambda, repeated)
		}
	}()
	for i := range 20000 {
		b := make([]byte, 64)
		x := uint64(i)*0x9E3779B97F4A7C15 + 1
		for j := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[j] = byte(x)
		}
		g := &gen{b: b}
		r := g.record()
		text := g.pattern()
		p, err := filter.EventBridge.Parse(text)
		if err != nil {
			continue
		}
		parsed++
		if lp, err := filter.Parse(text); err == nil {
			lambda++
			if lp.Match(r) != p.Match(r) {
				t.Fatalf("seed %d: pattern %s: Lambda's syntax matches otherwise than EventBridge's", i, text)
			}
		}
		if strings.Count(text, `"dynamodb"`) > 1 {
			repeated++
		}
		if p.Match(r) {
			matched++
		}
		if got, want := p.Match(r), naiveMatch(text, r); got != want {
			rb, _ := json.Marshal(r)
			t.Fatalf("seed %d: pattern %s\nrecord %s\nMatch=%v, naive=%v", i, text, rb, got, want)
		}
	}
}
