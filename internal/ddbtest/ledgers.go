package ddbtest

import (
	"fmt"
	"slices"

	"github.com/dynastream/dynastream/internal/store"
)

// FoldLedgers takes the recipes' ledger items (store.TypeCookLedger) out
// of a replay.TableState's items and gives, per recipe partition, the
// keys its ledgers name together, sorted. A ledger is written per
// projector call, so how its names are split among ledgers depends on how
// the records were batched; which names there are does not (each recent
// item is named once, when its change is counted): compare the fold.
func FoldLedgers(derived []map[string]any) (items []map[string]any, ledgers map[string][]string) {
	ledgers = map[string][]string{}
	for _, it := range derived {
		if it["itemType"] != store.TypeCookLedger {
			items = append(items, it)
			continue
		}
		pk, _ := it["PK"].(string)
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
