//go:build !lambda.norpc

package ddb

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// What a Counter with ByKey shares among keys, and how (keys.go): built
// into the programs a local stack runs, not into a Lambda bootstrap,
// which make load never measures (keyuse_lambda.go).

// askOld makes a single-item write that asked for nothing back ask for its
// old item (on a copy of the input), so that the index keys it leaves can
// be counted; it reports whether the answer's item must be dropped.
func askOld(params any) (any, bool) {
	switch v := params.(type) {
	case *dynamodb.PutItemInput:
		if v.ReturnValues == "" || v.ReturnValues == types.ReturnValueNone {
			cp := *v
			cp.ReturnValues = types.ReturnValueAllOld
			return &cp, true
		}
	case *dynamodb.UpdateItemInput:
		if v.ReturnValues == "" || v.ReturnValues == types.ReturnValueNone {
			cp := *v
			cp.ReturnValues = types.ReturnValueAllOld
			return &cp, true
		}
	case *dynamodb.DeleteItemInput:
		if v.ReturnValues == "" || v.ReturnValues == types.ReturnValueNone {
			cp := *v
			cp.ReturnValues = types.ReturnValueAllOld
			return &cp, true
		}
	}
	return params, false
}

// dropOld removes the old item askOld asked for from a call's answer.
func dropOld(result any) {
	switch v := result.(type) {
	case *dynamodb.PutItemOutput:
		v.Attributes = nil
	case *dynamodb.UpdateItemOutput:
		v.Attributes = nil
	case *dynamodb.DeleteItemOutput:
		v.Attributes = nil
	}
}

// keyUses shares the capacity a successful call reported among the keys
// it names; an index entry a call does not name is looked up in seen.
func keyUses(params, result any, indexes []Index, seen known) []keyUse {
	var uses []keyUse
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		out := result.(*dynamodb.GetItemOutput)
		uses = appendItemUses(uses, out.ConsumedCapacity, false, in.Key, indexes, nil)
	case *dynamodb.PutItemInput:
		out := result.(*dynamodb.PutItemOutput)
		uses = appendItemUses(uses, out.ConsumedCapacity, true, in.Item, indexes, func(ix Index) (string, string) {
			return entry(out.Attributes, ix.PK), entry(in.Item, ix.PK) // ALL_OLD: askOld
		})
	case *dynamodb.UpdateItemInput:
		out := result.(*dynamodb.UpdateItemOutput)
		uses = appendItemUses(uses, out.ConsumedCapacity, true, in.Key, indexes, func(ix Index) (string, string) {
			set, sets := setValue(in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, ix.PK)
			switch in.ReturnValues {
			case types.ReturnValueAllOld:
				before := entry(out.Attributes, ix.PK)
				if sets {
					return before, str(set)
				}
				return before, before
			case types.ReturnValueAllNew:
				now := entry(out.Attributes, ix.PK)
				if sets {
					if pk, ok := seen(deref(in.TableName), in.Key, ix.PK); ok {
						return pk, now
					}
					return UnknownKey, now
				}
				return now, now
			}
			return UnknownKey, UnknownKey
		})
	case *dynamodb.DeleteItemInput:
		out := result.(*dynamodb.DeleteItemOutput)
		uses = appendItemUses(uses, out.ConsumedCapacity, true, in.Key, indexes, func(ix Index) (string, string) {
			return entry(out.Attributes, ix.PK), "" // ALL_OLD: askOld
		})
	case *dynamodb.QueryInput:
		out := result.(*dynamodb.QueryOutput)
		attr := tableKey
		index := deref(in.IndexName)
		for _, ix := range indexes {
			if ix.Name == index {
				attr = ix.PK
			}
		}
		key := UnknownKey
		if v, ok := setValue(in.KeyConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, attr); ok {
			key = str(v)
		}
		if cc := out.ConsumedCapacity; cc != nil {
			r, _ := partUnits(cc, index, false)
			uses = append(uses, keyUse{target: Target(deref(cc.TableName), index), key: key, read: r})
		}
	case *dynamodb.ScanInput:
		out := result.(*dynamodb.ScanOutput)
		if cc := out.ConsumedCapacity; cc != nil {
			index := deref(in.IndexName)
			r, _ := partUnits(cc, index, false)
			uses = append(uses, keyUse{target: Target(deref(cc.TableName), index), key: ScanKey, read: r})
		}
	case *dynamodb.BatchGetItemInput:
		out := result.(*dynamodb.BatchGetItemOutput)
		for _, cc := range out.ConsumedCapacity {
			table := deref(cc.TableName)
			keys := in.RequestItems[table].Keys
			r, _ := partUnits(&cc, "", false)
			for _, k := range keys {
				uses = append(uses, keyUse{target: table, key: keyOf(k, tableKey), read: r / float64(len(keys))})
			}
		}
	case *dynamodb.BatchWriteItemInput:
		out := result.(*dynamodb.BatchWriteItemOutput)
		for _, cc := range out.ConsumedCapacity {
			uses = appendBatchWriteUses(uses, cc, in.RequestItems[deref(cc.TableName)], indexes, seen)
		}
	case *dynamodb.TransactGetItemsInput:
		out := result.(*dynamodb.TransactGetItemsOutput)
		for _, cc := range out.ConsumedCapacity {
			table := deref(cc.TableName)
			var keys []string
			for _, it := range in.TransactItems {
				if it.Get != nil && deref(it.Get.TableName) == table {
					keys = append(keys, keyOf(it.Get.Key, tableKey))
				}
			}
			r, _ := partUnits(&cc, "", false)
			for _, k := range keys {
				uses = append(uses, keyUse{target: table, key: k, read: r / float64(len(keys))})
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		uses = txKeyUses(in, indexes, seen)
	}
	return uses
}

// appendItemUses shares a single-item call's units: the table's to its
// key, each index's between the item's index entry before and after the
// write (entries; "" where there is none): a write that moves an entry
// deletes one and puts another.
func appendItemUses(uses []keyUse, cc *types.ConsumedCapacity, write bool, key map[string]types.AttributeValue, indexes []Index, entries func(Index) (before, now string)) []keyUse {
	if cc == nil {
		return uses
	}
	table := deref(cc.TableName)
	itemPK := keyOf(key, tableKey)
	add := func(target, key string, units float64) {
		if write {
			item := ""
			if target != table {
				item = itemPK
			}
			uses = append(uses, keyUse{target: target, key: key, write: units, item: item})
		} else {
			uses = append(uses, keyUse{target: target, key: key, read: units})
		}
	}
	r, w := partUnits(cc, "", write)
	add(table, keyOf(key, tableKey), r+w)
	for _, ix := range indexes {
		r, w := partUnits(cc, ix.Name, write)
		units := r + w
		if units == 0 {
			continue
		}
		before, now := UnknownKey, UnknownKey
		if entries != nil {
			before, now = entries(ix)
		}
		target := Target(table, ix.Name)
		switch {
		case before == "" && now == "":
			add(target, UnknownKey, units)
		case before == "" || before == now:
			add(target, now, units)
		case now == "":
			add(target, before, units)
		default:
			add(target, before, units/2)
			add(target, now, units/2)
		}
	}
	return uses
}

// entry is an item's index entry's partition key: "" if the item has none
// (or there is no item).
func entry(item map[string]types.AttributeValue, attr string) string {
	if v, ok := item[attr]; ok {
		return str(v)
	}
	return ""
}

// appendBatchWriteUses shares a BatchWriteItem's units for one table among
// its requests: a put's by its size, a delete's as one unit; a delete's
// index entry is the one seen for its item, if any was.
func appendBatchWriteUses(uses []keyUse, cc types.ConsumedCapacity, reqs []types.WriteRequest, indexes []Index, seen known) []keyUse {
	table := deref(cc.TableName)
	weights := make([]float64, len(reqs))
	var total float64
	for i, r := range reqs {
		weights[i] = 1
		if r.PutRequest != nil {
			weights[i] = kb(r.PutRequest.Item)
		}
		total += weights[i]
	}
	if total == 0 {
		return uses
	}
	_, w := partUnits(&cc, "", true)
	for i, r := range reqs {
		var key map[string]types.AttributeValue
		if r.PutRequest != nil {
			key = r.PutRequest.Item
		} else if r.DeleteRequest != nil {
			key = r.DeleteRequest.Key
		}
		uses = append(uses, keyUse{target: table, key: keyOf(key, tableKey), write: w * weights[i] / total})
	}
	for _, ix := range indexes {
		_, w := partUnits(&cc, ix.Name, true)
		if w == 0 {
			continue
		}
		named := map[int]string{}
		var sum float64
		for i, r := range reqs {
			switch {
			case r.PutRequest != nil:
				if _, ok := r.PutRequest.Item[ix.PK]; ok {
					named[i] = keyOf(r.PutRequest.Item, ix.PK)
					sum += weights[i]
				}
			case r.DeleteRequest != nil:
				switch pk, ok := seen(table, r.DeleteRequest.Key, ix.PK); {
				case !ok:
					named[i] = UnknownKey
					sum += weights[i]
				case pk != "":
					named[i] = pk
					sum += weights[i]
				}
			}
		}
		target := Target(table, ix.Name)
		if len(named) == 0 {
			uses = append(uses, keyUse{target: target, key: UnknownKey, write: w})
			continue
		}
		for i, pk := range named {
			uses = append(uses, keyUse{target: target, key: pk, write: w * weights[i] / sum})
		}
	}
	return uses
}

// partUnits is what a consumed capacity reports for the table (index "")
// or one index: read and write units where it says which, otherwise its
// units as the call's kind.
func partUnits(cc *types.ConsumedCapacity, index string, write bool) (r, w float64) {
	var c *types.Capacity
	if index == "" {
		c = cc.Table
	} else {
		v, ok := cc.GlobalSecondaryIndexes[index]
		if !ok {
			return 0, 0
		}
		c = &v
	}
	if c == nil {
		if index != "" {
			return 0, 0
		}
		// only the call's total: all of it the table's
		c = &types.Capacity{CapacityUnits: cc.CapacityUnits, ReadCapacityUnits: cc.ReadCapacityUnits, WriteCapacityUnits: cc.WriteCapacityUnits}
	}
	r, w = deref(c.ReadCapacityUnits), deref(c.WriteCapacityUnits)
	if r == 0 && w == 0 {
		if write {
			w = deref(c.CapacityUnits)
		} else {
			r = deref(c.CapacityUnits)
		}
	}
	return r, w
}

// seenItems remembers the index partition keys of the items a counter's
// calls read or wrote, by table and item key, for the calls that change an
// index entry without naming it (known). It forgets everything past
// seenLimit items.
type seenItems struct {
	items map[string]map[string]string // table, PK, SK → index PK attribute → value ("" none)
}

const seenLimit = 200_000

func itemID(table string, key map[string]types.AttributeValue) (string, bool) {
	pk, ok1 := key[tableKey]
	sk, ok2 := key["SK"]
	if !ok1 || !ok2 {
		return "", false
	}
	return table + "\x00" + str(pk) + "\x00" + str(sk), true
}

func (s *seenItems) lookup(table string, key map[string]types.AttributeValue, attr string) (string, bool) {
	id, ok := itemID(table, key)
	if !ok {
		return "", false
	}
	m, ok := s.items[id]
	if !ok {
		return "", false
	}
	return m[attr], true
}

func (s *seenItems) remember(table string, item map[string]types.AttributeValue, indexes []Index) {
	id, ok := itemID(table, item)
	if !ok || len(indexes) == 0 {
		return
	}
	if s.items == nil || len(s.items) >= seenLimit {
		s.items = map[string]map[string]string{}
	}
	m := make(map[string]string, len(indexes))
	for _, ix := range indexes {
		m[ix.PK] = entry(item, ix.PK)
	}
	s.items[id] = m
}

func (s *seenItems) forget(table string, key map[string]types.AttributeValue) {
	if id, ok := itemID(table, key); ok {
		delete(s.items, id)
	}
}

// learn remembers the whole items a successful call read or wrote.
func (s *seenItems) learn(params, result any, indexes []Index) {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		if out := result.(*dynamodb.GetItemOutput); out.Item != nil {
			s.remember(deref(in.TableName), out.Item, indexes)
		}
	case *dynamodb.QueryInput:
		for _, it := range result.(*dynamodb.QueryOutput).Items {
			s.remember(deref(in.TableName), it, indexes)
		}
	case *dynamodb.BatchGetItemInput:
		for table, items := range result.(*dynamodb.BatchGetItemOutput).Responses {
			for _, it := range items {
				s.remember(table, it, indexes)
			}
		}
	case *dynamodb.PutItemInput:
		s.remember(deref(in.TableName), in.Item, indexes)
	case *dynamodb.UpdateItemInput:
		out := result.(*dynamodb.UpdateItemOutput)
		switch in.ReturnValues {
		case types.ReturnValueAllNew:
			s.remember(deref(in.TableName), out.Attributes, indexes)
		case types.ReturnValueAllOld: // the old item and what the update sets
			item := map[string]types.AttributeValue{}
			for k, v := range in.Key {
				item[k] = v
			}
			for _, ix := range indexes {
				if v, ok := out.Attributes[ix.PK]; ok {
					item[ix.PK] = v
				}
				if v, ok := setValue(in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, ix.PK); ok {
					item[ix.PK] = v
				}
			}
			s.remember(deref(in.TableName), item, indexes)
		}
	case *dynamodb.DeleteItemInput:
		s.forget(deref(in.TableName), in.Key)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			if it.Put != nil {
				s.remember(deref(it.Put.TableName), it.Put.Item, indexes)
			}
		}
	}
}
