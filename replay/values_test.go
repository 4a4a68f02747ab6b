package replay_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/replay"
)

func TestMain(m *testing.M) {
	ddblocal.MainLimited(m, ddblocal.Limits{Scale: 0.1, Unprocessed: 0.05, Seed: 1})
}

func TestParseNumberCanonical(t *testing.T) {
	for in, want := range map[string]replay.Number{
		"0": "0", "-0": "0", "0.000": "0", "0e5": "0", "+0": "0",
		"1.50": "1.5", "15e-1": "1.5", "0.15E1": "1.5", "+1.5": "1.5", "001.5000": "1.5",
		"-12": "-12", "12e2": "1200", "1.2e-3": "0.0012", ".5": "0.5", "5.": "5",
		"1795438980123456789":                      "1795438980123456789",
		"99999999999999999999999999999999999999":   "99999999999999999999999999999999999999",
		"1E+2":                                     "100",
		"-1.0000000000000000000000000000000000001": "-1.0000000000000000000000000000000000001",
	} {
		got, err := replay.ParseNumber(in)
		if err != nil || got != want {
			t.Errorf("ParseNumber(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", ".", "e5", "1e", "1e+", "1.2.3", "0x10", "1,5", "NaN", "Infinity", "1e99999", "1 2", "--1"} {
		if got, err := replay.ParseNumber(in); err == nil {
			t.Errorf("ParseNumber(%q) = %q, want an error", in, got)
		}
	}
}

func TestValuesCompareExactly(t *testing.T) {
	a, err := replay.Values(map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1795438980123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := replay.Values(map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1795438980123456788"}})
	if cmp.Equal(a, b) {
		t.Fatal("numbers that differ in the 19th digit compare equal")
	}
	c, _ := replay.Values(map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "17954389801234567890e-1"}})
	if !cmp.Equal(a, c) {
		t.Fatalf("the same number spelled differently compares unequal: %v vs %v", a, c)
	}
}

func TestValuesSortsSets(t *testing.T) {
	got, err := replay.Values(map[string]types.AttributeValue{
		"ss": &types.AttributeValueMemberSS{Value: []string{"b", "a", "c"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"10", "9", "-1", "1e1"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{2}, {1}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberN{Value: "2.0"}, &types.AttributeValueMemberNULL{Value: true},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberBOOL{Value: true}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ss": []string{"a", "b", "c"},
		"ns": []replay.Number{"-1", "9", "10", "10"},
		"bs": [][]byte{{1}, {2}},
		"l":  []any{replay.Number("2"), nil, map[string]any{"x": true}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
	if _, err := replay.Values(map[string]types.AttributeValue{"bad": &types.AttributeValueMemberN{Value: "1x"}}); err == nil {
		t.Fatal("a malformed number was accepted")
	}
}

// Regression: TableState read numbers as float64, so two states that
// differ only in the 19th digit of a number compared equal — a false pass.
func TestTableStateComparesNumbersExactly(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	c, table := tbl, tbl.Name
	ctx := context.Background()
	ts := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	put := func(total string) any {
		t.Helper()
		_, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "CUSTOMER#1"}, "SK": &types.AttributeValueMemberS{Value: "TOTAL"},
			"derived": &types.AttributeValueMemberBOOL{Value: true}, "total": &types.AttributeValueMemberN{Value: total},
		}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := ts.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := put("1795438980123456789"), put("1795438980123456788")
	if cmp.Equal(a, b) {
		t.Fatalf("states differing in 1795438980123456789 vs …788 compare equal: %v", a)
	}
	if d := cmp.Diff(a, put("1795438980123456789")); d != "" {
		t.Fatalf("the same state read twice differs: %s", d)
	}
}

// Ignore leaves attributes out of the state (a marker's TTL, counted from
// the real time), and only those.
func TestTableStateIgnores(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	ts := replay.TableState{DB: tbl.DB, Table: tbl.Name, Derived: replay.DerivedFlag, Ignore: []string{"ttl"}}
	put := func(ttl, n string) any {
		t.Helper()
		_, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "M"}, "SK": &types.AttributeValueMemberS{Value: "1"},
			"derived": &types.AttributeValueMemberBOOL{Value: true}, "ttl": &types.AttributeValueMemberN{Value: ttl},
			"n": &types.AttributeValueMemberN{Value: n},
		}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := ts.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := put("1795438980", "1")
	if d := cmp.Diff(a, put("1795439999", "1")); d != "" {
		t.Fatalf("states differing only in the ignored ttl differ: %s", d)
	}
	if cmp.Equal(a, put("1795438980", "2")) {
		t.Fatal("states differing in n compare equal")
	}
	if want := []map[string]any{{"PK": "M", "SK": "1", "derived": true, "n": replay.Number("2")}}; !cmp.Equal(put("1", "2"), any(want)) {
		t.Fatalf("state %v, want %v", put("1", "2"), want)
	}
}
