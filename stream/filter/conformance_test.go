package filter_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/filter"
)

// row is one line of testdata/conformance.json: a pattern, a record and
// the outcome, with where the row comes from. A source is one of
//
//	"Lambda, <page>#<section> …"       Lambda documents it (the example named)
//	"EventBridge, <page> (<section>) …" EventBridge's pattern language does
//	"event-ruler, <file> …"            AWS's matcher does it (its README or code)
//	"not documented…"                  nothing says; the row is the choice made
//
// Syntax is the syntax the pattern is parsed with: Lambda's unless it
// says "EventBridge" (the row's operator is not in Lambda's syntax).
type row struct {
	Source   string          `json:"source"`
	Syntax   string          `json:"syntax"`
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

// TestConformance: every row gives its outcome, and the naive second
// evaluation agrees; a row in EventBridge's syntax is refused in
// Lambda's, naming its operator and the page.
func TestConformance(t *testing.T) {
	ops := map[string]bool{}
	for _, c := range conformance(t) {
		ops[c.Operator] = true
		if !strings.HasPrefix(c.Source, "Lambda, ") && !strings.HasPrefix(c.Source, "EventBridge, ") &&
			!strings.HasPrefix(c.Source, "event-ruler, ") && !strings.HasPrefix(c.Source, "not documented") {
			t.Errorf("%s: source %q says neither a page, event-ruler, nor \"not documented\"", c.Operator, c.Source)
		}
		syntax := filter.Lambda
		if c.Syntax == "EventBridge" {
			syntax = filter.EventBridge
			if strings.HasPrefix(c.Source, "Lambda, ") {
				t.Errorf("%s: a row Lambda documents parses in Lambda's syntax", c.Operator)
			}
			_, err := filter.Parse(string(c.Pattern))
			if err == nil || !strings.Contains(err.Error(), "invocation-eventfiltering") && !strings.Contains(err.Error(), "with-ddb-filtering") {
				t.Errorf("%s: Lambda's syntax took %s (err %v)", c.Operator, c.Pattern, err)
			}
		}
		p, err := syntax.Parse(string(c.Pattern))
		if err != nil {
			t.Errorf("%s (%s): %s: %v", c.Operator, c.Source, c.Pattern, err)
			continue
		}
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal(c.Record, &r); err != nil {
			t.Fatalf("%s: record: %v", c.Operator, err)
		}
		if got := p.Match(r); got != c.Match {
			t.Errorf("%s (%s): %s on %s: match=%v, want %v %s", c.Operator, c.Source, c.Pattern, c.Record, got, c.Match, c.Note)
		}
		if got := naiveMatch(p.String(), r); got != c.Match {
			t.Errorf("naive evaluation: %s: %s: match=%v, want %v", c.Operator, c.Pattern, got, c.Match)
		}
	}
	for _, op := range []string{"equals", "empty", "null", "equals (ignore case)", "and", "or", "or (multiple fields)",
		"not (anything-but)", "numeric (equals)", "numeric (range)", "exists", "does not exist", "begins with", "ends with",
		"anything-but (begins with)", "anything-but (ends with)", "anything-but (ignore case)", "anything-but (wildcard)",
		"begins with (ignore case)", "ends with (ignore case)", "wildcard", "array (any element)", "nested keys (map attribute)",
		"exists on a leaf", "exists on an intermediate node", "array consistency", "and (repeated object key)",
		"repeated leaf path", "anything-but (on a boolean)", "anything-but (on null)", "anything-but (begins with, a list)"} {
		if !ops[op] {
			t.Errorf("no conformance row for %s", op)
		}
	}
}

// TestLambdaRefuses: by default a pattern may use what Lambda's pages
// document for a DynamoDB mapping ("Control which events Lambda sends to
// your function", its filter rule syntax,
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax,
// and https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html),
// nothing else; the error names the operator, its place and the page, and
// EventBridge's syntax takes what its pattern language has
// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html).
// The cases refused in both are event-ruler's refusals (README "Anything-but
// matching": lists entirely strings or entirely numbers;
// JsonRuleCompiler.java), or patterns AWS documents nothing for.
func TestLambdaRefuses(t *testing.T) {
	for _, c := range []struct {
		pattern, want string
		eventBridge   bool // EventBridge's syntax takes it
	}{
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"wildcard":"dir/*.png"}]}}}}`, "dynamodb.NewImage.f.S: wildcard: wildcard is not in Lambda's filter rule syntax (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"prefix":{"equals-ignore-case":"us-"}}]}}}}`, "f.S: prefix: prefix with equals-ignore-case is not in Lambda's", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"suffix":{"equals-ignore-case":".png"}}]}}}}`, "f.S: suffix: suffix with equals-ignore-case is not in Lambda's", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"anything-but":{"prefix":"us-"}}]}}}}`, "f.S: anything-but: prefix: anything-but with prefix is not in Lambda's", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"anything-but":{"suffix":["a","b"]}}]}}}}`, "anything-but with suffix is not in Lambda's", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"anything-but":{"equals-ignore-case":"a"}}]}}}}`, "anything-but with equals-ignore-case is not in Lambda's", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"anything-but":{"wildcard":"*/lib/*"}}]}}}}`, "anything-but with wildcard is not in Lambda's", true},
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"anything-but":"Raining"}]}}}}`, `anything-but: a single value (write ["Raining"]) is not in Lambda's`, true},
		{`{"dynamodb":{"SizeBytes":[{"anything-but":100}]}}`, `a single value (write [100])`, true},
		{`{"dynamodb":{"NewImage":{"n":{"N":[{"numeric":[">",5]}]}}}}`, "dynamodb.NewImage.n.N: numeric: a numeric rule on an attribute value", true},
		{`{"dynamodb":{"Keys":{"n":{"N":[{"numeric":["=",5]}]}}}}`, "(https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html)", true},
		{`{"dynamodb":{"OldImage":{"m":{"M":{"n":{"N":[{"numeric":["=",5]}]}}}}}}`, "dynamodb.OldImage.m.M.n.N: numeric: a numeric rule on an attribute value", true},
		{`{"dynamodb":{"$or":[{"NewImage":{"n":{"N":[{"numeric":["=",5]}]}}},{"SizeBytes":[1]}]}}`, "dynamodb.$or[0].NewImage.n.N: numeric", true},
		// "DynamoDB event filtering doesn't support the use of numeric
		// operators (numeric equals and numeric range)" (with-ddb-filtering):
		// not on the record's own numbers either, where AWS's sample record
		// has SizeBytes a number and ApproximateCreationDateTime a string.
		{`{"dynamodb":{"SizeBytes":[{"numeric":[">",100]}]}}`, "dynamodb.SizeBytes: numeric: DynamoDB event filtering does not support numeric operators", true},
		{`{"dynamodb":{"ApproximateCreationDateTime":[{"numeric":[">=",1678831218]}]}}`, "dynamodb.ApproximateCreationDateTime: numeric: DynamoDB event filtering does not support numeric operators, numeric equals or numeric range (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html)", true},
		{`{"dynamodb":{"$or":[{"SizeBytes":[{"numeric":["=",5]}]},{"SizeBytes":[1]}]}}`, "dynamodb.$or[0].SizeBytes: numeric: DynamoDB event filtering", true},
		{`{"eventVersion":[{"numeric":["=",1]}]}`, "eventVersion: numeric: DynamoDB event filtering", true},
		// Refused in both: AWS's matcher refuses these, or reads them in
		// a way AWS documents nothing for.
		{`{"dynamodb":{"NewImage":{"f":{"S":[{"anything-but":["a",5]}]}}}}`, "not both (AWS's matcher refuses a mixed list)", false},
		{`{"dynamodb":{"$or":[{"SizeBytes":[1]},{"SizeBytes":[2]}]},"dynamodb":{"$or":[{"SizeBytes":[3]},{"SizeBytes":[4]}]}}`, "dynamodb: $or twice in one object", false},
		{`{"dynamodb":{"NewImage":{"a":{"S":["x"]}}},"dynamodb":["x"]}`, `the pattern: key "dynamodb" is an object once and a list of rules once`, false},
		{`{"dynamodb":{"NewImage":{"a":{"S":["x"]},"$or":[{"a":{"S":["y"]}},{"b":{"S":["z"]}}]}}}`, "dynamodb.NewImage: a.S is named both in $or[0] and beside the $or", false},
	} {
		_, err := filter.Parse(c.pattern)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want an error with %q", c.pattern, err, c.want)
		}
		_, err = filter.EventBridge.Parse(c.pattern)
		if c.eventBridge && err != nil {
			t.Errorf("EventBridge.Parse(%s): %v", c.pattern, err)
		}
		if !c.eventBridge && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("EventBridge.Parse(%s) = %v, want an error with %q", c.pattern, err, c.want)
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
		{`{"a":[{"cidr":"10.0.0.0/24"}]}`, "no cidr"},
		{`{"a":[{"anything-but":[true]}]}`, "a list of strings or of numbers, not a boolean"},
		{`{"$or":[{"a":["x"]}]}`, "at least two alternatives"},
		{`{"a":["x"]} {}`, "text after"},
		{long, "Lambda takes at most 4096"},
	} {
		_, err := filter.Parse(c.pattern)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60s) = %v, want an error with %q", c.pattern, err, c.want)
		}
	}
	for _, c := range []struct{ pattern, want string }{
		{`{"a":[{"numeric":["<",5,">",1]}]}`, `operator "<" out of place`},
		{`{"a":[{"numeric":[">",5,"<",1]}]}`, "empty range"},
		{`{"a":[{"numeric":["=",6e9]}]}`, "out of range"},
		{`{"a":[{"numeric":["=",1.1234567]}]}`, "six decimals"},
		{`{"a":[{"numeric":[">","5"]}]}`, "wants a number"},
		{`{"a":[{"wildcard":"a**b"}]}`, "consecutive wildcards"},
		{`{"a":[{"wildcard":"a\\b"}]}`, `escapes only`},
		{`{"a":[{"anything-but":{"prefix":""}}]}`, "empty prefix"},
		{`{"a":[{"anything-but":{"suffix":["x",""]}}]}`, "empty suffix"},
		{`{"a":[{"anything-but":{"prefix":{"equals-ignore-case":"x"}}}]}`, "want a string or a list of strings"},
	} {
		_, err := filter.EventBridge.Parse(c.pattern)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("EventBridge.Parse(%.60s) = %v, want an error with %q", c.pattern, err, c.want)
		}
	}
}

// TestCriteriaQuota: "By default, you can define up to five different
// filters for a single event source mapping … you can request a quota
// increase for up to 10 filters for each event source"
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html):
// five by default, up to ten when the user says the quota is raised, no
// more than the quota said, and no quota AWS does not grant.
func TestCriteriaQuota(t *testing.T) {
	patterns := func(n int) []string {
		ps := make([]string, n)
		for i := range ps {
			ps[i] = fmt.Sprintf(`{"dynamodb":{"Keys":{"PK":{"S":["k%d"]}}}}`, i)
		}
		return ps
	}
	if c, err := filter.ParseCriteria(patterns(filter.MaxFilters)...); err != nil || len(c) != 5 {
		t.Errorf("ParseCriteria(5 patterns) = %d, %v", len(c), err)
	}
	if _, err := filter.ParseCriteria(patterns(6)...); err == nil || !contains(err.Error(), "6 patterns; a mapping takes 5 (Lambda's default quota; raised on request, say so with CriteriaQuota") {
		t.Errorf("ParseCriteria(6 patterns): %v", err)
	}
	if _, err := filter.Lambda.Criteria(patterns(6)...); err == nil {
		t.Error("Lambda.Criteria took 6 patterns")
	}
	c, err := filter.Lambda.CriteriaQuota(filter.MaxFiltersRaised, patterns(10)...)
	if err != nil || len(c) != 10 {
		t.Fatalf("CriteriaQuota(10, 10 patterns) = %d, %v", len(c), err)
	}
	rec := events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("k9")}}}
	if !c.Match(rec) {
		t.Error("the tenth pattern of a raised quota does not match its record")
	}
	if _, err := filter.Lambda.CriteriaQuota(7, patterns(8)...); err == nil || !contains(err.Error(), "8 patterns; a mapping takes 7 (the quota said raised") {
		t.Errorf("CriteriaQuota(7, 8 patterns): %v", err)
	}
	for _, q := range []int{0, 4, 11} {
		if _, err := filter.Lambda.CriteriaQuota(q, patterns(1)...); err == nil || !contains(err.Error(), "by default and 10 at most") {
			t.Errorf("CriteriaQuota(%d): %v", q, err)
		}
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
