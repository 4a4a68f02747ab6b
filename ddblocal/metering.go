package ddblocal

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The single-item operations and queries: what each costs and where, the
// throttle, the conflict.

// writeCosts are the units a write of one item takes: on its partition key
// and on each global secondary index whose key the write gives (a put's
// item, an update's SET of the index's key). An update is charged the size
// of its key and values and a delete that of its key, where DynamoDB
// charges the larger of the item's sizes before and after: the Limiter
// does not read the item first, so it undercharges updates of large items
// and deletes (known, and left: this project's large items are written
// whole). An index's partition over its
// units throttles the write, as DynamoDB's "IndexWriteKeyRangeThroughputExceeded"
// does the table's.
func writeCosts(table string, sc *schema, key, it item, update string, names map[string]string, values item, tx bool) []units {
	hv, _ := key.keyValue(sc.hash)
	size := key.size()
	indexed := it
	switch {
	case it != nil:
		size = it.size()
	case update != "":
		for _, v := range values {
			size += valueSize(v)
		}
		indexed = assignments(update, names, values)
	}
	n := writeUnits(size, tx)
	out := []units{{p: part{table: table, key: hv}, write: true, n: n}}
	for _, ix := range sc.indexes {
		if v, ok := indexed.keyValue(ix.hash); ok {
			out = append(out, units{p: part{table, ix.name, v}, write: true, n: n})
		}
	}
	return out
}

// admit counts a request of op on the partitions of costs and takes
// costs off their units; when one of them has no units left, it takes
// nothing, counts the throttle and returns it.
func (l *Limiter) admit(op callOp, costs []units) *units {
	l.mu.Lock()
	defer l.mu.Unlock()
	over := l.cap.admit(costs, l.limits.Now())
	l.tally.add(l.limits.Now(), func(c *Counts, key func(part, callOp) *KeyCount) {
		seen := map[part]bool{}
		for _, u := range costs {
			if !seen[u.p] {
				seen[u.p] = true
				key(u.p, op).Requests++
			}
		}
		if over != nil {
			c.Throttled++
			key(over.p, op).Throttled++
		}
	})
	return over
}

// pay takes costs off their partitions' units: what a read cost beyond
// the least it was admitted on.
func (l *Limiter) pay(costs []units) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cap.pay(costs, l.limits.Now())
}

// reason is the throttling reason DynamoDB gives for u
// ("TableWriteKeyRangeThroughputExceeded", …: the API's ThrottlingReason).
func (l *Limiter) reason(u *units) (reason, resource string) {
	reason, resource = "Table", "arn:aws:dynamodb:ddblocal:000000000000:table/"+u.p.table
	if u.p.index != "" {
		reason, resource = "Index", resource+"/index/"+u.p.index
	}
	if u.write {
		reason += "Write"
	} else {
		reason += "Read"
	}
	return reason + "KeyRangeThroughputExceeded", resource
}

// throttle is the answer to a request over u's units: ThrottlingException
// as an on-demand table gives it, ProvisionedThroughputExceededException
// for a provisioned one, each with its throttling reason.
func (l *Limiter) throttle(u *units) *reply {
	reason, resource := l.reason(u)
	// The two exceptions spell the list differently (the API model's
	// members: throttlingReasons, ThrottlingReasons).
	code, field := "ThrottlingException", "throttlingReasons"
	if l.limits.Provisioned {
		code, field = "ProvisionedThroughputExceededException", "ThrottlingReasons"
	}
	return refusal(code, l.overMessage(u), map[string]any{
		field: []map[string]string{{"reason": reason, "resource": resource}}})
}

// overMessage says which key is over which limit.
func (l *Limiter) overMessage(u *units) string {
	l.mu.Lock()
	limits, kind, limit := l.limits, "read", l.cap.read
	if u.write {
		kind, limit = "write", l.cap.write
	}
	l.mu.Unlock()
	where := "table " + u.p.table
	if u.p.index != "" {
		where = "index " + u.p.index + " of " + where
	}
	return fmt.Sprintf("Throughput exceeds the current capacity of your table or index (ddblocal limiter, %s: partition key %q of %s is over its %g %s units a second)",
		limits, display(u.p.key), where, limit, kind)
}

// conflict counts a conflict on the partitions of parts for op.
func (l *Limiter) conflict(op callOp, parts []part) {
	l.tally.add(l.limits.Now(), func(c *Counts, key func(part, callOp) *KeyCount) {
		c.Conflicts++
		seen := map[part]bool{}
		for _, p := range parts {
			if !seen[p] {
				seen[p] = true
				key(p, op).Conflicts++
			}
		}
	})
}

// itemWrite is a single-item write's request, or one action of a
// transaction.
type itemWrite struct {
	TableName                 string
	Item, Key                 item
	UpdateExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues item
}

// target is the written item's key and its identity.
func (w *itemWrite) target(sc *schema) (item, string) {
	key := w.Key
	if w.Item != nil {
		key = w.Item
	}
	return key, key.identity(w.TableName, sc.key)
}

// write is PutItem, UpdateItem or DeleteItem.
func (l *Limiter) write(r *http.Request, op string, body []byte) (*reply, error) {
	var in itemWrite
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errUnread
	}
	sc, err := l.schemas.get(r.Context(), in.TableName)
	if err != nil {
		return nil, err
	}
	key, id := in.target(sc)
	costs := writeCosts(in.TableName, sc, key, in.Item, in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, false)
	if over := l.admit(callOp{op, appOf(r)}, costs); over != nil {
		return l.throttle(over), nil
	}
	// A write refused for a conflict keeps what it was charged: AWS
	// documents no refund, and the stricter reading is the one a test
	// should meet.
	if !l.limits.NoConflicts {
		end, at := l.flight.begin([]string{id}, singleWrite)
		if at != nil {
			l.conflict(callOp{op, appOf(r)}, []part{costs[0].p})
			return refusal("TransactionConflictException", "Operation was rejected because there is an ongoing transaction for the item.", nil), nil
		}
		defer end()
	}
	return l.call(r, body), nil
}

// getItem is GetItem: let in while its key has read units, then charged
// what the item it read costs.
func (l *Limiter) getItem(r *http.Request, body []byte) (*reply, error) {
	var in struct {
		TableName      string
		Key            item
		ConsistentRead bool
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errUnread
	}
	sc, err := l.schemas.get(r.Context(), in.TableName)
	if err != nil {
		return nil, err
	}
	hv, _ := in.Key.keyValue(sc.hash)
	least := readUnits(0, in.ConsistentRead, false)
	costs := []units{{p: part{table: in.TableName, key: hv}, n: least}}
	if over := l.admit(callOp{"GetItem", appOf(r)}, costs); over != nil {
		return l.throttle(over), nil
	}
	rp := l.call(r, body)
	var out struct{ Item item }
	if rp.status == http.StatusOK && json.Unmarshal(rp.body, &out) == nil {
		costs[0].n = readUnits(out.Item.size(), in.ConsistentRead, false) - least
		l.pay(costs)
	}
	return rp, nil
}

// query is Query: its partition is its key condition's equality on the
// table's or index's partition key; charged what the items it read cost
// (summed, then rounded up to 4 KB, as DynamoDB charges a query).
func (l *Limiter) query(r *http.Request, body []byte) (*reply, error) {
	var in struct {
		TableName, IndexName      string
		KeyConditionExpression    string
		KeyConditions             map[string]struct{ AttributeValueList []json.RawMessage }
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues item
		ConsistentRead            bool
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errUnread
	}
	sc, err := l.schemas.get(r.Context(), in.TableName)
	if err != nil {
		return nil, err
	}
	hash := sc.hash
	if in.IndexName != "" {
		if hash, _ = sc.indexHash(in.IndexName); hash == "" {
			return l.call(r, body), nil // DynamoDB Local says what is wrong
		}
	}
	eq := assignments(in.KeyConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	raw, ok := eq[hash]
	if kc, found := in.KeyConditions[hash]; !ok && found && len(kc.AttributeValueList) == 1 {
		raw, ok = kc.AttributeValueList[0], true
	}
	hv, isKey := scalar(raw)
	if !ok || !isKey {
		return l.call(r, body), nil
	}
	consistent := in.ConsistentRead && in.IndexName == ""
	least := readUnits(0, consistent, false)
	costs := []units{{p: part{in.TableName, in.IndexName, hv}, n: least}}
	if over := l.admit(callOp{"Query", appOf(r)}, costs); over != nil {
		return l.throttle(over), nil
	}
	rp := l.call(r, body)
	var out struct{ Items []item }
	if rp.status == http.StatusOK && json.Unmarshal(rp.body, &out) == nil {
		size := 0
		for _, it := range out.Items {
			size += it.size()
		}
		costs[0].n = readUnits(size, consistent, false) - least
		l.pay(costs)
	}
	return rp, nil
}
