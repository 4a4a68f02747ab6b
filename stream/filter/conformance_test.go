package filter_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/filter"
)

// row is one line of testdata/conformance.json: a pattern from the AWS
// documentation's examples of an operator (Lambda's filter rule syntax and
// its DynamoDB page; EventBridge's operator page for the forms Lambda's
// table does not list), a record, and the documented outcome.
type row struct {
	Source   string          `json:"source"`
	Operator string          `json:"operator"`
	Pattern  json.RawMessage `json:"pattern"`
	Record   json.RawMessage `json:"record"`
	Match    bool            `json:"match"`
	Note     string          `json:"note"`
}

func conformance(t testing.TB) []row {
	b, err := os.ReadFile("testdata/conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestConformance: every operator's documented examples give the
// documented outcome, and the naive second evaluation agrees.
func TestConformance(t *testing.T) {
	ops := map[string]bool{}
	for _, c := range conformance(t) {
		ops[c.Operator] = true
		p, err := filter.Parse(string(c.Pattern))
		if err != nil {
			t.Errorf("%s (%s): %s: %v", c.Operator, c.Source, c.Pattern, err)
			continue
		}
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal(c.Record, &r); err != nil {
			t.Fatalf("%s: record: %v", c.Operator, err)
		}
		if got := p.Match(r); got != c.Match {
			t.Errorf("%s (%s): %s on %s: match=%v, documented %v %s", c.Operator, c.Source, c.Pattern, c.Record, got, c.Match, c.Note)
		}
		if got := naiveMatch(p.String(), r); got != c.Match {
			t.Errorf("naive evaluation: %s: %s: match=%v, want %v", c.Operator, c.Pattern, got, c.Match)
		}
	}
	for _, op := range []string{"equals", "empty", "null", "equals (ignore case)", "and", "or", "or (multiple fields)",
		"not (anything-but)", "numeric (equals)", "numeric (range)", "exists", "does not exist", "begins with", "ends with",
		"anything-but (begins with)", "anything-but (ends with)", "anything-but (ignore case)", "anything-but (wildcard)",
		"begins with (ignore case)", "ends with (ignore case)", "wildcard", "array (any element)", "nested keys (map attribute)",
		"exists on a leaf", "exists on an intermediate node", "array consistency"} {
		if !ops[op] {
			t.Errorf("no conformance row for %s", op)
		}
	}
}

// TestParseRefuses: what Lambda refuses is refused, and the error names
// the place.
func TestParseRefuses(t *testing.T) {
	long := `{"dynamodb":{"NewImage":{"a":{"S":["` + string(make([]byte, 4096)) + `"]}}}}`
	for _, c := range []struct{ pattern, want string }{
		{`[]`, "a pattern is a JSON object"},
		{`{}`, "empty object"},
		{`{"a":"x"}`, `a: want an object or a list of rules, got a string (write ["x"])`},
		{`{"a":[]}`, "a: an empty list of rules"},
		{`{"a":[{"bogus":1}]}`, "a: bogus: unknown operator"},
		{`{"a":[{"prefix":"x","suffix":"y"}]}`, "exactly one operator"},
		{`{"a":[{"exists":"yes"}]}`, "a: exists: want true or false"},
		{`{"a":[{"numeric":["<",5,">",1]}]}`, `operator "<" out of place`},
		{`{"a":[{"numeric":[">",5,"<",1]}]}`, "empty range"},
		{`{"a":[{"numeric":["=",6e9]}]}`, "out of range"},
		{`{"a":[{"numeric":["=",1.1234567]}]}`, "six decimals"},
		{`{"a":[{"numeric":[">","5"]}]}`, "wants a number"},
		{`{"a":[{"wildcard":"a**b"}]}`, "consecutive wildcards"},
		{`{"a":[{"wildcard":"a\\b"}]}`, `escapes only`},
		{`{"a":[{"cidr":"10.0.0.0/24"}]}`, "no cidr"},
		{`{"a":[{"anything-but":{"prefix":""}}]}`, "empty prefix"},
		{`{"a":[{"anything-but":[true]}]}`, "strings or numbers"},
		{`{"$or":[{"a":["x"]}]}`, "at least two alternatives"},
		{`{"a":["x"]} {}`, "text after"},
		{long, "Lambda takes at most 4096"},
	} {
		_, err := filter.Parse(c.pattern)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60s) = %v, want an error with %q", c.pattern, err, c.want)
		}
	}
	six := make([]string, filter.MaxFilters+1)
	for i := range six {
		six[i] = `{"a":["x"]}`
	}
	if _, err := filter.ParseCriteria(six...); err == nil {
		t.Errorf("ParseCriteria took %d patterns", len(six))
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestCriteriaJSON: criteria round-trip through the FilterCriteria JSON a
// template or the Lambda API holds; no criteria let every record through.
func TestCriteriaJSON(t *testing.T) {
	c := filter.MustCriteria(`{ "dynamodb": { "NewImage": { "t": { "S": [ "a" ] } } } }`, `{"dynamodb":{"OldImage":{"t":{"S":["a"]}}}}`)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Filters":[{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"t\":{\"S\":[\"a\"]}}}}"},{"Pattern":"{\"dynamodb\":{\"OldImage\":{\"t\":{\"S\":[\"a\"]}}}}"}]}`
	if string(b) != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b, want)
	}
	var back filter.Criteria
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[1].String() != c[1].String() {
		t.Errorf("round trip: %v", back.Patterns())
	}
	if !(filter.Criteria{}).Match(events.DynamoDBEventRecord{}) {
		t.Error("empty criteria filtered a record out")
	}
	if (filter.Pattern{}).Match(events.DynamoDBEventRecord{}) {
		t.Error("the zero Pattern matched")
	}
}
