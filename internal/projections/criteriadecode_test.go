package projections

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/room"
)

// genValue is a random attribute value: mostly what the store writes for
// the field, sometimes anything else attributevalue has to judge.
func genValue(rng *rand.Rand, want string) types.AttributeValue {
	if rng.IntN(8) == 0 {
		want = []string{"S", "N", "L", "M", "NULL", "SS", "BOOL", "badN", "emptyL"}[rng.IntN(9)]
	}
	s := func() string { return []string{"Zurich", "Basel", "", "ü", "x"}[rng.IntN(5)] }
	switch want {
	case "S":
		return &types.AttributeValueMemberS{Value: s()}
	case "N":
		return &types.AttributeValueMemberN{Value: []string{"1", "2.5", "-3", "1e3", "5", "0", "9223372036854775807"}[rng.IntN(7)]}
	case "badN":
		return &types.AttributeValueMemberN{Value: []string{"x", "", "1e999", "1.5.5"}[rng.IntN(4)]}
	case "L":
		l := make([]types.AttributeValue, 1+rng.IntN(3))
		for i := range l {
			l[i] = genValue(rng, "S")
		}
		return &types.AttributeValueMemberL{Value: l}
	case "emptyL":
		return &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	case "SS":
		return &types.AttributeValueMemberSS{Value: []string{"a", "b"}}
	case "NULL":
		return &types.AttributeValueMemberNULL{Value: true}
	case "BOOL":
		return &types.AttributeValueMemberBOOL{Value: true}
	}
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
}

func genMap(rng *rand.Rand, fields map[string]func() types.AttributeValue) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for k, gen := range fields {
		if rng.IntN(5) == 0 {
			continue // absent
		}
		if rng.IntN(20) == 0 {
			// The field's key in another case: attributevalue decodes it
			// into the field all the same. (Never both forms of one key: with
			// both, attributevalue's own result depends on map order.)
			k = strings.ToUpper(k[:1]) + k[1:]
		}
		m[k] = gen()
	}
	if rng.IntN(4) == 0 {
		m["itemType"] = &types.AttributeValueMemberS{Value: "Criteria"}
		m["other"] = genValue(rng, "N")
	}
	return m
}

func TestDecodeCriteriaVersionMatchesAttributeValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261125, 1))
	fast := 0
	defer func() {
		if fast < 2000 {
			t.Errorf("only %d of 50,000 cases took the fast path", fast)
		}
	}()
	for i := range 50000 {
		crit := func() types.AttributeValue {
			if rng.IntN(10) == 0 {
				return genValue(rng, "S")
			}
			return &types.AttributeValueMemberM{Value: genMap(rng, map[string]func() types.AttributeValue{
				"locations": func() types.AttributeValue { return genValue(rng, "L") }, "features": func() types.AttributeValue { return genValue(rng, "L") },
				"priceMin": func() types.AttributeValue { return genValue(rng, "N") }, "priceMax": func() types.AttributeValue { return genValue(rng, "N") },
				"roomsMin": func() types.AttributeValue { return genValue(rng, "N") }, "roomsMax": func() types.AttributeValue { return genValue(rng, "N") },
				"areaMin": func() types.AttributeValue { return genValue(rng, "N") },
			})}
		}
		weights := func() types.AttributeValue {
			return &types.AttributeValueMemberM{Value: genMap(rng, map[string]func() types.AttributeValue{
				"locations": func() types.AttributeValue { return genValue(rng, "N") }, "price": func() types.AttributeValue { return genValue(rng, "N") },
				"rooms": func() types.AttributeValue { return genValue(rng, "N") }, "area": func() types.AttributeValue { return genValue(rng, "N") },
				"features": func() types.AttributeValue { return genValue(rng, "N") },
			})}
		}
		str := func() types.AttributeValue { return genValue(rng, "S") }
		m := genMap(rng, map[string]func() types.AttributeValue{"roomId": str, "userId": str, "timestamp": str, "source": str, "criteria": crit, "weights": weights})
		if _, ok := fastCriteriaVersion(m); ok {
			fast++
		}
		got, gotErr := decodeCriteriaVersion(m)
		var want room.CriteriaVersion
		wantErr := attributevalue.UnmarshalMap(m, &want)
		// attributevalue's message names whichever bad field its map
		// iteration met first: only the verdict is compared.
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("case %d %v: error %v, attributevalue's %v", i, m, gotErr, wantErr)
		}
		if wantErr == nil {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("case %d %#v (-attributevalue +fast):\n%s", i, m, diff)
			}
		}
	}
}
