package ddblocal

import (
	"encoding/json"
	"net/http"
)

// The batch operations: "If DynamoDB returns any unprocessed items, you
// should retry the batch operation on those items" and "If none of the
// items can be processed due to insufficient provisioned throughput on all
// of the tables in the request, then BatchGetItem returns a
// ProvisionedThroughputExceededException" (API_BatchGetItem,
// API_BatchWriteItem): a key over its partition's units, or drawn by
// Limits.Unprocessed, is answered unprocessed; the call fails only when
// every key was over its units.

// sorting is what one batch key or item met.
type sorting int

const (
	kept sorting = iota
	overUnits
	drawn
)

// sorted is one batch key's or item's fate, and the partition over its
// units that left it.
type sorted struct {
	costs []units
	fate  sorting
	over  *units
}

// sort decides one batch key's or item's fate (under l.mu).
func (l *Limiter) sort(costs []units) sorted {
	over := l.cap.admit(costs, l.limits.Now())
	fate := kept
	switch {
	case over != nil:
		fate = overUnits
	case l.limits.Unprocessed > 0 && l.rnd.Float64() < l.limits.Unprocessed:
		fate = drawn
		l.cap.refund(costs, l.limits.Now()) // it is not done, so not charged
	}
	return sorted{costs, fate, over}
}

// record counts a batch call's keys or items: whole says the call was
// refused as a whole (a throttle, no key left unprocessed).
func (l *Limiter) record(op callOp, all []sorted, whole bool) {
	l.tally.add(l.limits.Now(), func(c *Counts, key func(part, callOp) *KeyCount) {
		if whole {
			c.Throttled++
		}
		for _, s := range all {
			kc := key(s.costs[0].p, op)
			kc.Requests++
			if s.over != nil {
				key(s.over.p, op).Throttled++
			}
			if s.fate != kept && !whole {
				c.Unprocessed++
				kc.Unprocessed++
			}
		}
	})
}

// fates gathers a batch's keys (or items) by what they met: kept, and
// left (unprocessed) per table.
type fates[T any] struct {
	keep, left  map[string][]T
	all         []sorted
	over        *units // a partition over its units that left one
	kept, drawn bool
}

func newFates[T any]() *fates[T] {
	return &fates[T]{keep: map[string][]T{}, left: map[string][]T{}}
}

func (f *fates[T]) add(table string, x T, st sorted) {
	f.all = append(f.all, st)
	switch st.fate {
	case kept:
		f.keep[table], f.kept = append(f.keep[table], x), true
	case overUnits:
		f.left[table], f.over = append(f.left[table], x), st.over
	case drawn:
		f.left[table], f.drawn = append(f.left[table], x), true
	}
}

// whole says the call processes nothing, every key for its partition's
// units: DynamoDB then fails it.
func (f *fates[T]) whole() bool { return len(f.left) > 0 && !f.kept && !f.drawn }

// batchGet is BatchGetItem.
func (l *Limiter) batchGet(r *http.Request, body []byte) (*reply, error) {
	var top map[string]json.RawMessage
	var in struct {
		RequestItems map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(body, &in) != nil {
		return nil, errUnread
	}
	tables := map[string]batchTable{}
	f := newFates[item]()
	for _, name := range sortedKeys(in.RequestItems) {
		ka := in.RequestItems[name]
		var keys []item
		var consistent bool
		if json.Unmarshal(ka["Keys"], &keys) != nil {
			return nil, errUnread
		}
		_ = json.Unmarshal(ka["ConsistentRead"], &consistent)
		sc, err := l.schemas.get(r.Context(), name)
		if err != nil {
			return nil, err
		}
		tables[name] = batchTable{sc, consistent}
		l.mu.Lock()
		for _, k := range keys {
			hv, _ := k.keyValue(sc.hash)
			f.add(name, k, l.sort([]units{{p: part{table: name, key: hv}, n: readUnits(0, consistent, false)}}))
		}
		l.mu.Unlock()
	}
	l.record(callOp{"BatchGetItem", appOf(r)}, f.all, f.whole())
	switch {
	case len(f.left) == 0:
		return l.paidGet(r, body, tables), nil
	case f.whole():
		return l.throttle(f.over), nil
	}
	// What is left goes back with the table's other settings (projection,
	// names, consistency), as DynamoDB gives UnprocessedKeys.
	with := func(keys map[string][]item) map[string]map[string]json.RawMessage {
		out := map[string]map[string]json.RawMessage{}
		for name, ks := range keys {
			ka := map[string]json.RawMessage{}
			for k, v := range in.RequestItems[name] {
				ka[k] = v
			}
			ka["Keys"], _ = json.Marshal(ks)
			out[name] = ka
		}
		return out
	}
	var rp *reply
	if f.kept {
		top["RequestItems"], _ = json.Marshal(with(f.keep))
		fwd, _ := json.Marshal(top)
		if rp = l.paidGet(r, fwd, tables); rp.status != http.StatusOK {
			return rp, nil
		}
	} else {
		rp = &reply{status: http.StatusOK, header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, body: []byte(`{"Responses":{}}`)}
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(rp.body, &out) != nil {
		return rp, nil
	}
	unprocessed := with(f.left)
	var theirs map[string]map[string]json.RawMessage
	_ = json.Unmarshal(out["UnprocessedKeys"], &theirs)
	for name, ka := range theirs {
		var more, ours []item
		_ = json.Unmarshal(ka["Keys"], &more)
		if u, ok := unprocessed[name]; ok {
			_ = json.Unmarshal(u["Keys"], &ours)
			ka["Keys"], _ = json.Marshal(append(ours, more...))
		}
		unprocessed[name] = ka
	}
	out["UnprocessedKeys"], _ = json.Marshal(unprocessed)
	b, _ := json.Marshal(out)
	return rp.rewrite(b), nil
}

// batchTable is what a BatchGetItem asked of one table.
type batchTable struct {
	sc         *schema
	consistent bool
}

// paidGet passes a BatchGetItem on and charges each item it read to its
// partition key (each item's size rounded up to 4 KB, as DynamoDB charges a
// batch read).
func (l *Limiter) paidGet(r *http.Request, body []byte, tables map[string]batchTable) *reply {
	rp := l.call(r, body)
	var out struct{ Responses map[string][]item }
	if rp.status != http.StatusOK || json.Unmarshal(rp.body, &out) != nil {
		return rp
	}
	var costs []units
	for name, items := range out.Responses {
		t, ok := tables[name]
		if !ok {
			continue
		}
		for _, it := range items {
			hv, _ := it.keyValue(t.sc.hash)
			costs = append(costs, units{p: part{table: name, key: hv}, n: readUnits(it.size(), t.consistent, false) - readUnits(0, t.consistent, false)})
		}
	}
	l.pay(costs)
	return rp
}

// batchWrite is BatchWriteItem. Its items are held in flight while it
// runs, for the transactional reads that meet them; DynamoDB documents no
// conflict of a BatchWriteItem's own with a transaction, so it meets none.
func (l *Limiter) batchWrite(r *http.Request, body []byte) (*reply, error) {
	var top map[string]json.RawMessage
	var in struct{ RequestItems map[string][]json.RawMessage }
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(body, &in) != nil {
		return nil, errUnread
	}
	f := newFates[json.RawMessage]()
	var ids []string
	for _, name := range sortedKeys(in.RequestItems) {
		sc, err := l.schemas.get(r.Context(), name)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		for _, raw := range in.RequestItems[name] {
			var wr struct {
				PutRequest    *struct{ Item item }
				DeleteRequest *struct{ Key item }
			}
			if json.Unmarshal(raw, &wr) != nil || (wr.PutRequest == nil) == (wr.DeleteRequest == nil) {
				l.mu.Unlock()
				return nil, errUnread
			}
			w := itemWrite{TableName: name}
			if wr.PutRequest != nil {
				w.Item = wr.PutRequest.Item
			} else {
				w.Key = wr.DeleteRequest.Key
			}
			key, id := w.target(sc)
			costs := writeCosts(name, sc, key, w.Item, "", nil, nil, false)
			st := l.sort(costs)
			if st.fate == kept {
				ids = append(ids, id)
			}
			f.add(name, raw, st)
		}
		l.mu.Unlock()
	}
	l.record(callOp{"BatchWriteItem", appOf(r)}, f.all, f.whole())
	if f.whole() {
		return l.throttle(f.over), nil
	}
	end := l.flight.hold(ids)
	defer end()
	if len(f.left) == 0 {
		return l.call(r, body), nil
	}
	rp := &reply{status: http.StatusOK, header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, body: []byte(`{}`)}
	if f.kept {
		top["RequestItems"], _ = json.Marshal(f.keep)
		fwd, _ := json.Marshal(top)
		if rp = l.call(r, fwd); rp.status != http.StatusOK {
			return rp, nil
		}
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(rp.body, &out) != nil {
		return rp, nil
	}
	var theirs map[string][]json.RawMessage
	_ = json.Unmarshal(out["UnprocessedItems"], &theirs)
	for name, reqs := range theirs {
		f.left[name] = append(f.left[name], reqs...)
	}
	out["UnprocessedItems"], _ = json.Marshal(f.left)
	b, _ := json.Marshal(out)
	return rp.rewrite(b), nil
}
