package ddbtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// FoldLedgers takes the recipes' ledger items (store.TypeCookLedger) out
// of a replay.TableState's items and gives, per recipe partition, the
// keys its ledgers name together, sorted. A ledger is written per
// projector call, in the recipe's partition or one of its pending ones, so
// how its names are split among ledgers and partitions depends on how the
// records were batched; which names there are does not (each recent item
// is named once, when its change is counted): compare the fold.
//
// A recipe's pending items (store.TypeCookingPending) are left out when
// they hold no count (their drains' sequence and the attributes at 0 depend
// on the batching too); one that holds counts stays, with only those, so
// that a state with counts not yet moved into the totals differs.
func FoldLedgers(derived []map[string]any) (items []map[string]any, ledgers map[string][]string) {
	ledgers = map[string][]string{}
	for _, it := range derived {
		pk, _ := it["PK"].(string)
		switch it["itemType"] {
		case store.TypeCookLedger:
		case store.TypeCookingPending:
			if left := pendingLeft(it); left != nil {
				items = append(items, left)
			}
			continue
		default:
			items = append(items, it)
			continue
		}
		if recipeID, _, ok := store.PendingOf(pk); ok {
			pk = store.RecipePK(recipeID)
		}
		keys, _ := it["keys"].([]any)
		for _, k := range keys {
			m, _ := k.(map[string]any)
			if name := fmt.Sprint(m["PK"], " ", m["SK"]); !slices.Contains(ledgers[pk], name) {
				ledgers[pk] = append(ledgers[pk], name)
			}
		}
	}
	for pk := range ledgers {
		slices.Sort(ledgers[pk])
	}
	return items, ledgers
}

// pendingLeft is what a pending item holds that is not 0 yet (nil: nothing).
func pendingLeft(it map[string]any) map[string]any {
	left := map[string]any{}
	for name, v := range it {
		if name == "ratingCount" || name == "ratingSum" || strings.HasPrefix(name, "w#") || strings.HasPrefix(name, "n#") {
			if n, ok := v.(replay.Number); !ok || n.Rat().Sign() != 0 {
				left[name] = v
			}
		}
	}
	if len(left) == 0 {
		return nil
	}
	left["PK"], left["itemType"] = it["PK"], it["itemType"]
	return left
}

// FollowPending is a replay.Target.Follow of the recipes' pending items
// (store.PendingPK): the records of the projector's own writes that ask it
// to drain a recipe's counts into its totals, as the table's stream brings
// them back to it. Make it after capturing what to deliver.
func FollowPending(t testing.TB, streams stream.API, arn string) func(context.Context) ([]events.DynamoDBEventRecord, error) {
	t.Helper()
	f, err := replay.Follower(context.Background(), streams, arn, func(r events.DynamoDBEventRecord) bool {
		pk, sk := r.Change.Keys[store.AttrPK], r.Change.Keys[store.AttrSK]
		return pk.DataType() == events.DataTypeString && sk.DataType() == events.DataTypeString && store.IsPendingKey(pk.String(), sk.String())
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
