package ddb_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddb"
)

func TestSameItem(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	item := func(kv ...any) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return m
	}
	for _, c := range []struct {
		name string
		a, b map[string]types.AttributeValue
		same bool
	}{
		{"equal", item("PK", s("a"), "n", n("1.50")), item("PK", s("a"), "n", n("1.5")), true},
		{"1e21 as DynamoDB writes it", item("n", n("1e+21")), item("n", n("1000000000000000000000")), true},
		{"another number", item("n", n("1.5")), item("n", n("1.6")), false},
		{"sets in any order", item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}), item("ss", &types.AttributeValueMemberSS{Value: []string{"b", "a"}}), true},
		{"another set", item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}), item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "c"}}), false},
		{"an attribute more", item("PK", s("a")), item("PK", s("a"), "x", s("y")), false},
		{"nested", item("m", &types.AttributeValueMemberM{Value: item("l", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("2"), s("x")}})}),
			item("m", &types.AttributeValueMemberM{Value: item("l", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("2.0"), s("x")}})}), true},
		{"a type differs", item("v", s("1")), item("v", n("1")), false},
		{"nothing there", nil, item("PK", s("a")), false},
	} {
		if got := ddb.SameItem(c.a, c.b); got != c.same {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}
