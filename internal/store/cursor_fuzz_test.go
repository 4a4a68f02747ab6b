package store

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FuzzCursor: any cursor string is either refused as invalid input or is a
// start key that fits its query exactly — the key attributes the query's
// table or index has and no others, its partition, a sort key the query
// can reach, values within DynamoDB's key sizes — so DynamoDB never gets a
// start key it refuses (a 500). A cursor the API gave out is always taken.
func FuzzCursor(f *testing.F) {
	queries := []query{
		{pk: "ROOM#r", skPrefix: SKPrefixMember},
		{pk: "ROOM#r", skPrefix: SKPrefixActivity, skFrom: SKPrefixActivity + "2026-01-01T00:00:00.000Z$", skTo: "ACTIVITY$"},
		{index: IndexGSI1, pk: "LOCATION"},
		{index: IndexGSI2, pk: "LOCATION", skPrefix: "CODE#"},
		{index: IndexGSI1, pk: "USER#alice", skPrefix: "COLLAB#goal#"},
	}
	enc := func(m map[string]string) string {
		b, _ := json.Marshal(m)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	f.Add(uint8(0), enc(map[string]string{"PK": "ROOM#r", "SK": "MEMBER#bob"}))
	f.Add(uint8(1), enc(map[string]string{"PK": "ROOM#r", "SK": "ACTIVITY#2000-01-01T00:00:00.000Z#a"}))
	f.Add(uint8(2), enc(map[string]string{"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "LOCATION", "GSI1SK": "2026"}))
	f.Add(uint8(2), enc(map[string]string{"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "LOCATION", "nope": "1"}))
	f.Add(uint8(3), enc(map[string]string{"PK": "LOCATION#x", "SK": "METADATA", "GSI2PK": "LOCATION", "GSI2SK": "CODE#zh"}))
	f.Add(uint8(4), "!!!")
	f.Add(uint8(0), "e30")
	f.Fuzz(func(t *testing.T, qi uint8, c string) {
		q := queries[int(qi)%len(queries)]
		start, err := q.decodeCursor(c)
		if err != nil || start == nil {
			return
		}
		m := map[string]string{}
		for k, v := range start {
			sv, ok := v.(*types.AttributeValueMemberS)
			if !ok {
				t.Fatalf("start key %s is not a string", k)
			}
			m[k] = sv.Value
		}
		if !q.fits(m) {
			t.Fatalf("a cursor that does not fit its query was taken: %v", m)
		}
		// Taken: it must fit, and encode back to an equivalent cursor.
		back, err := encodeCursor(start)
		if err != nil {
			t.Fatalf("a taken cursor does not encode: %v", err)
		}
		again, err := q.decodeCursor(back)
		if err != nil || len(again) != len(start) {
			t.Fatalf("a taken cursor, encoded again, is refused: %v", err)
		}
	})
}
