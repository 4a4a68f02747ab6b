package ddblocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The transactions: throttled or cancelled as a whole, with a reason per
// item ("Cancellation reason codes", API_TransactWriteItems: None,
// TransactionConflict, ThrottlingError for an on-demand table and
// ProvisionedThroughputExceeded for a provisioned one).

// cancelled is TransactionCanceledException with reasons[i] for item i
// ("" is None).
func cancelled(reasons []string) *reply {
	list := make([]map[string]string, len(reasons))
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = "None"
		list[i] = map[string]string{"Code": "None"}
		switch r {
		case "TransactionConflict":
			codes[i], list[i] = r, map[string]string{"Code": r, "Message": "Transaction is ongoing for the item"}
		case "ThrottlingError", "ProvisionedThroughputExceeded":
			codes[i], list[i] = r, map[string]string{"Code": r, "Message": "Throughput exceeds the current capacity of your table or index."}
		}
	}
	msg := fmt.Sprintf("Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", "))
	rp := refusal("TransactionCanceledException", "", map[string]any{"Message": msg, "CancellationReasons": list})
	return rp
}

// txItems reads a transaction's items: their identities, their tables'
// schemas, and what each costs (the item's index in costs' owners).
func (l *Limiter) txItems(r *http.Request, tables []string, keys []item, each func(i int, sc *schema) []units) (ids []string, costs []units, owners []int, err error) {
	for i, name := range tables {
		sc, err := l.schemas.get(r.Context(), name)
		if err != nil {
			return nil, nil, nil, err
		}
		ids = append(ids, keys[i].identity(name, sc.key))
		for _, u := range each(i, sc) {
			costs, owners = append(costs, u), append(owners, i)
		}
	}
	return ids, costs, owners, nil
}

// owner is the index of the item whose cost is over.
func owner(costs []units, owners []int, over *units) int {
	for i := range costs {
		if costs[i].p == over.p && costs[i].write == over.write {
			return owners[i]
		}
	}
	return 0
}

// throttledTx is a transaction cancelled for item i's throughput.
func (l *Limiter) throttledTx(n, i int) *reply {
	reasons := make([]string, n)
	reasons[i] = "ThrottlingError"
	if l.limits.Provisioned {
		reasons[i] = "ProvisionedThroughputExceeded"
	}
	return cancelled(reasons)
}

// conflictTx is a transaction cancelled for conflicts on items at.
func (l *Limiter) conflictTx(op callOp, n int, at []int, costs []units, owners []int) *reply {
	reasons := make([]string, n)
	var parts []part
	for _, i := range at {
		reasons[i] = "TransactionConflict"
		for j := range costs {
			if owners[j] == i && costs[j].p.index == "" {
				parts = append(parts, costs[j].p)
			}
		}
	}
	l.conflict(op, parts)
	return cancelled(reasons)
}

// transactWrite is TransactWriteItems. A ConditionCheck is metered as a
// transactional write of its key.
func (l *Limiter) transactWrite(r *http.Request, body []byte) (*reply, error) {
	var in struct {
		TransactItems []struct{ ConditionCheck, Put, Delete, Update *itemWrite }
	}
	if json.Unmarshal(body, &in) != nil {
		return nil, errUnread
	}
	n := len(in.TransactItems)
	actions := make([]*itemWrite, n)
	tables := make([]string, n)
	keys := make([]item, n)
	for i, t := range in.TransactItems {
		for _, a := range []*itemWrite{t.ConditionCheck, t.Put, t.Delete, t.Update} {
			if a != nil {
				actions[i] = a
			}
		}
		if actions[i] == nil {
			return nil, errUnread
		}
		tables[i] = actions[i].TableName
		keys[i] = actions[i].Key
		if actions[i].Item != nil {
			keys[i] = actions[i].Item
		}
	}
	ids, costs, owners, err := l.txItems(r, tables, keys, func(i int, sc *schema) []units {
		a := actions[i]
		return writeCosts(a.TableName, sc, keys[i], a.Item, a.UpdateExpression, a.ExpressionAttributeNames, a.ExpressionAttributeValues, true)
	})
	if err != nil {
		return nil, err
	}
	if over := l.admit(callOp{"TransactWriteItems", appOf(r)}, costs); over != nil {
		return l.throttledTx(n, owner(costs, owners, over)), nil
	}
	if !l.limits.NoConflicts {
		end, at := l.flight.begin(ids, txWrite)
		if at != nil {
			return l.conflictTx(callOp{"TransactWriteItems", appOf(r)}, n, at, costs, owners), nil
		}
		defer end()
	}
	return l.call(r, body), nil
}

// transactGet is TransactGetItems: cancelled when one of its items is
// being written (a transaction, or a single write); charged what the items
// it read cost, as transactional reads.
func (l *Limiter) transactGet(r *http.Request, body []byte) (*reply, error) {
	var in struct {
		TransactItems []struct {
			Get *struct {
				TableName string
				Key       item
			}
		}
	}
	if json.Unmarshal(body, &in) != nil {
		return nil, errUnread
	}
	n := len(in.TransactItems)
	tables := make([]string, n)
	keys := make([]item, n)
	for i, t := range in.TransactItems {
		if t.Get == nil {
			return nil, errUnread
		}
		tables[i], keys[i] = t.Get.TableName, t.Get.Key
	}
	schemas := make([]*schema, n)
	ids, costs, owners, err := l.txItems(r, tables, keys, func(i int, sc *schema) []units {
		schemas[i] = sc
		hv, _ := keys[i].keyValue(sc.hash)
		return []units{{p: part{table: tables[i], key: hv}, n: readUnits(0, true, true)}}
	})
	if err != nil {
		return nil, err
	}
	if over := l.admit(callOp{"TransactGetItems", appOf(r)}, costs); over != nil {
		return l.throttledTx(n, owner(costs, owners, over)), nil
	}
	if !l.limits.NoConflicts {
		if _, at := l.flight.begin(ids, txRead); at != nil {
			return l.conflictTx(callOp{"TransactGetItems", appOf(r)}, n, at, costs, owners), nil
		}
	}
	rp := l.call(r, body)
	var out struct{ Responses []struct{ Item item } }
	if rp.status == http.StatusOK && json.Unmarshal(rp.body, &out) == nil && len(out.Responses) == n {
		for i := range costs {
			costs[i].n = readUnits(out.Responses[owners[i]].Item.size(), true, true) - readUnits(0, true, true)
		}
		l.pay(costs)
	}
	return rp, nil
}
