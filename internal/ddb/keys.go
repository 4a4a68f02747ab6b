package ddb

import (
	"math"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A Counter with ByKey also sums the capacity each call used by partition
// key, for the table and each global secondary index apart: the limits
// that matter on DynamoDB are per partition (1,000 write and 3,000 read
// units a second, an index's partition key included), not per table. It
// asks for ReturnConsumedCapacity INDEXES and shares each table's and
// index's units among the keys the call names:
//
//   - a single-item call's table units go to its key; an index's units to
//     the item's index key, before and after the write (a put, an update
//     or a delete that asked for no old item is sent asking for ALL_OLD,
//     and the answer's old item is dropped before the caller sees it);
//   - a Query's units to its partition key, a Scan's to ScanKey;
//   - a batch's units among its items (a write by size, a read evenly);
//   - a transaction is priced per item at AWS's rates (units.go), since
//     DynamoDB Local reports a transaction's units otherwise.
//
// An index entry that a call changes without naming its partition key (a
// transaction's update that sets only the index's sort key, a delete in a
// batch) is taken to be where the counter last saw that item's entry, in
// the items its calls read or wrote; one it never saw is counted under
// UnknownKey: such rows are shown, not guessed. A Lambda bootstrap counts
// nothing by key (keyuse_lambda.go).

// Index is a global secondary index's name and key attributes.
type Index struct{ Name, PK, SK string }

// KeyUnits is the capacity a partition key used.
type KeyUnits struct {
	Read  float64 `json:"read,omitempty"`
	Write float64 `json:"write,omitempty"`
	Calls int64   `json:"calls"`
	// Writes counts the calls that wrote in the key (a transaction once,
	// however many of its items are there).
	Writes int64 `json:"writes,omitempty"`
	// Top, for an index's key, are the items (by their table partition
	// key) whose entries wrote the most in it, with their write units:
	// a hot item's share of an index key (space-saving counts: an item's
	// units are at most its true units plus the smallest of them).
	Top [topItems]ItemUnits `json:"top,omitzero"`
}

// topItems is how many of an index key's busiest items KeyUnits.Top keeps.
const topItems = 4

// ItemUnits is an item's (its table partition key's) write units in an
// index key.
type ItemUnits struct {
	Item  string  `json:"item,omitempty"`
	Write float64 `json:"write,omitempty"`
}

// AddTop counts w write units of item in u.Top (space-saving: an item
// not there takes the place of the least, with its units added). A w
// below 0 takes units off an item there, and leaves the rest alone (what
// a snapshot before a phase held, taken off the one after it).
func (u *KeyUnits) AddTop(item string, w float64) {
	least := 0
	for i := range u.Top {
		if u.Top[i].Item == item {
			u.Top[i].Write += w
			return
		}
		if u.Top[i].Item == "" {
			least = i
			break
		}
		if u.Top[i].Write < u.Top[least].Write {
			least = i
		}
	}
	if w <= 0 {
		return
	}
	u.Top[least] = ItemUnits{item, u.Top[least].Write + w}
}

// Keys is capacity by table or index and partition key: Keys[target][key],
// where target is the table's name, or "<table>/<index>" for a global
// secondary index.
type Keys map[string]map[string]KeyUnits

// UnknownKey stands for the partition keys a call used without naming them;
// ScanKey for a Scan's (every key).
const (
	UnknownKey = "?"
	ScanKey    = "(scan)"
)

// Target names a table's index as Keys does.
func Target(table, index string) string {
	if index == "" {
		return table
	}
	return table + "/" + index
}

// keyUse is what one call used of one key.
type keyUse struct {
	target, key string
	read, write float64
	// item is the table partition key of the item whose index entry an
	// index's use is ("" for a table's use, or when not known).
	item string
}

// tableKey is the partition-key attribute of every table a Counter sees.
const tableKey = "PK"

// known is an item's index partition key (attr) as last seen, "" if the
// item is not in the index, ok false if it was not seen.
type known func(table string, key map[string]types.AttributeValue, attr string) (pk string, ok bool)

// txKeyUses prices a TransactWriteItems per item at AWS's rates: every item
// twice (prepare and commit). A put by its size, 1 unit per KB started, on
// the table and on each index whose partition key it carries; an update, a
// delete and a condition check as items of 1 KB on the table, and an update
// twice more on each index it names a key attribute of (the old entry
// deleted, the new one put: the old under the partition key seen for the
// item (seen; nil or not seen: UnknownKey), the new under the one it sets,
// or the old). A delete's index entries, and an update's size past 1 KB,
// are not known here, so for those it is a lower bound.
func txKeyUses(in *dynamodb.TransactWriteItemsInput, indexes []Index, seen known) []keyUse {
	var uses []keyUse
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			table, units := deref(it.Put.TableName), 2*kb(it.Put.Item)
			uses = append(uses, keyUse{target: table, key: keyOf(it.Put.Item, tableKey), write: units})
			for _, ix := range indexes {
				if _, ok := it.Put.Item[ix.PK]; ok {
					uses = append(uses, keyUse{target: Target(table, ix.Name), key: keyOf(it.Put.Item, ix.PK), write: units, item: keyOf(it.Put.Item, tableKey)})
				}
			}
		case it.Update != nil:
			u := it.Update
			table := deref(u.TableName)
			uses = append(uses, keyUse{target: table, key: keyOf(u.Key, tableKey), write: 2})
			expr := deref(u.UpdateExpression)
			for _, ix := range indexes {
				if !names(expr, u.ExpressionAttributeNames, ix.PK) && !names(expr, u.ExpressionAttributeNames, ix.SK) {
					continue
				}
				before := UnknownKey
				if seen != nil {
					if pk, ok := seen(table, u.Key, ix.PK); ok && pk != "" {
						before = pk
					}
				}
				now := before
				if v, ok := setValue(u.UpdateExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues, ix.PK); ok {
					now = str(v)
				}
				item := keyOf(u.Key, tableKey)
				uses = append(uses, keyUse{target: Target(table, ix.Name), key: before, write: 2, item: item},
					keyUse{target: Target(table, ix.Name), key: now, write: 2, item: item})
			}
		case it.Delete != nil:
			uses = append(uses, keyUse{target: deref(it.Delete.TableName), key: keyOf(it.Delete.Key, tableKey), write: 2})
		case it.ConditionCheck != nil:
			uses = append(uses, keyUse{target: deref(it.ConditionCheck.TableName), key: keyOf(it.ConditionCheck.Key, tableKey), write: 2})
		}
	}
	return uses
}

// WriteUnits is what one standard (not transactional) write of item
// costs: 1 write unit per KB started, at least 1.
func WriteUnits(item map[string]types.AttributeValue) float64 { return kb(item) }

// kb is an item's size in write units: 1 per KB started, at least 1.
func kb(item map[string]types.AttributeValue) float64 {
	return math.Ceil(float64(max(itemSize(item), 1)) / 1024)
}

// keyOf is an item's value of attr as a key (UnknownKey without one).
func keyOf(item map[string]types.AttributeValue, attr string) string {
	if v, ok := item[attr]; ok {
		return str(v)
	}
	return UnknownKey
}

func str(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return string(v.Value)
	}
	return UnknownKey
}

// assignment is "name = :value" in an update or key condition expression.
var assignment = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// setValue is the value an expression sets attr to, or compares it equal
// with ("PK = :pk" in a key condition, "SET GSI1PK = :g" in an update).
func setValue(expr *string, names map[string]string, values map[string]types.AttributeValue, attr string) (types.AttributeValue, bool) {
	if expr == nil {
		return nil, false
	}
	for _, m := range assignment.FindAllStringSubmatch(*expr, -1) {
		name := m[1]
		if n, ok := names[name]; ok {
			name = n
		}
		if name == attr {
			v, ok := values[m[2]]
			return v, ok
		}
	}
	return nil, false
}

// names reports whether an expression names attr, directly or through an
// expression attribute name.
func names(expr string, names map[string]string, attr string) bool {
	for _, w := range strings.FieldsFunc(expr, func(r rune) bool {
		return !(r == '#' || r == '_' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z')
	}) {
		if n, ok := names[w]; ok {
			w = n
		}
		if w == attr {
			return true
		}
	}
	return false
}
