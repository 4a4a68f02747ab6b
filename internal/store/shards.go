package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/errs"
)

// Sharding is how many write shards the index keys that every write of a
// kind lands on are split into (docs/scale.md): a key per month or week
// takes all of the growth, and one partition key takes at most 1,000 write
// units a second. An item's shard is chosen from the item (a hash of its
// id), so its writes always go to one shard; reads query every shard at
// once and merge them in the order one key gives. 1 is one key, as the
// seeds have it (no suffix); a count n > 1 writes <key>#<0…n-1>.
//
// Raise a count, never lower it: a read queries the shards of the count it
// runs with, and the unsharded key too, so items written with fewer shards
// (or none: before the migration, `projector backfill`) are still found;
// items in shards past a lowered count would not be.
type Sharding struct {
	// Recent splits GSI3 RECENT#<yyyy-mm> (every cooking of the month).
	Recent int
	// Trending splits GSI3 TRENDING#<week> (every recipe cooked that week;
	// a recipe's item is in one shard, so a week's ranking merges whole
	// counts).
	Trending int
	// Method splits GSI2 METHOD#<method> (every rating of a recipe of that
	// method moves its entry).
	Method int
}

// DefaultSharding is what New sets: enough for 10,000 user writes a second
// of make load's mix (docs/scale.md).
var DefaultSharding = Sharding{Recent: 4, Trending: 4, Method: 4}

// MaxShards bounds a count: a page reads every shard.
const MaxShards = 64

// Validate says what is wrong with a Sharding.
func (s Sharding) Validate() error {
	for name, n := range map[string]int{"recent": s.Recent, "trending": s.Trending, "method": s.Method} {
		if n < 1 || n > MaxShards {
			return fmt.Errorf("store: %s shards %d: want 1 to %d", name, n, MaxShards)
		}
	}
	return nil
}

// shardKey is the write shard of key for an item with id, of n shards.
func shardKey(key, id string, n int) string {
	if n <= 1 {
		return key
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return key + "#" + strconv.Itoa(int(h.Sum32()%uint32(n)))
}

// shardKeys are the partition keys a read of key queries with n shards:
// the shards and, for items not migrated yet, the key itself.
func shardKeys(key string, n int) []string {
	if n <= 1 {
		return []string{key}
	}
	out := make([]string, 0, n+1)
	for i := range n {
		out = append(out, key+"#"+strconv.Itoa(i))
	}
	return append(out, key)
}

// queryShards pages through the items of q.pk's shards (keys) as one
// query of one key would: in the index's sort-key order, q.page.Limit at
// most, with a cursor when the page is full (as DynamoDB gives a
// LastEvaluatedKey when a query reaches its Limit) or a shard's answer was
// cut short (its 1 MB). Each shard is queried for one page from the
// cursor's sort key on, concurrently; the cursor is the last item's key, as
// one key's, so a cursor of the unsharded query resumes this one. Items of
// one sort key (sort keys written before they ended with the item's id)
// are ordered by their table key, and a page resumes after exactly the
// cursor's item. q may have a sort-key prefix, and no other condition or
// filter.
func (s *Store) queryShards(ctx context.Context, q query, keys []string, decode func(map[string]types.AttributeValue) error) (string, error) {
	if len(keys) == 1 {
		q.pk = keys[0]
		return s.queryPage(ctx, q, decode)
	}
	if q.skFrom != "" || q.topLevel || q.status != "" || q.liveAt != 0 {
		return "", fmt.Errorf("store: a sharded query takes a sort-key prefix and no other condition or filter")
	}
	limit := q.page.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > MaxLimit {
		return "", errs.Field("limit", fmt.Sprintf("must be at most %d", MaxLimit))
	}
	pkAttr, skAttr := q.keyAttrs()
	str := func(it map[string]types.AttributeValue, attr string) string {
		v, _ := it[attr].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	// order compares two items as the list runs: sort key, then table key
	order := func(a, b map[string]types.AttributeValue) int {
		c := strings.Compare(str(a, skAttr), str(b, skAttr))
		if c == 0 {
			c = strings.Compare(str(a, AttrPK)+"\x00"+str(a, AttrSK), str(b, AttrPK)+"\x00"+str(b, AttrSK))
		}
		if q.desc {
			c = -c
		}
		return c
	}
	var start map[string]types.AttributeValue
	if q.page.Cursor != "" {
		var err error
		for _, k := range keys { // the cursor is in one of them
			sq := q
			sq.pk = k
			if start, err = sq.decodeCursor(q.page.Cursor); err == nil {
				break
			}
		}
		if err != nil {
			return "", err
		}
	}
	bound := str(start, skAttr)
	type shardPage struct {
		items []map[string]types.AttributeValue
		cut   bool // DynamoDB stopped before Limit (its 1 MB): more may follow
	}
	pages := make([]shardPage, len(keys))
	errOf := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			sq := q
			sq.pk = k
			in := sq.input(s.Table)
			// one more than a page: the cursor's own item, or one of its
			// sort key, may come first and is dropped below
			in.Limit = aws.Int32(limit + 1)
			switch {
			case bound != "" && q.skPrefix != "":
				// one sort-key condition per query: the prefix's range
				// up to the bound, inclusive
				lo, hi := q.skPrefix, bound
				if !q.desc {
					lo, hi = bound, q.skPrefix+string(utf8.MaxRune)
				}
				if lo > hi {
					return // nothing can follow such a cursor
				}
				in.KeyConditionExpression = aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi")
				delete(in.ExpressionAttributeValues, ":sk")
				in.ExpressionAttributeValues[":lo"] = &types.AttributeValueMemberS{Value: lo}
				in.ExpressionAttributeValues[":hi"] = &types.AttributeValueMemberS{Value: hi}
			case bound != "":
				op := ">="
				if q.desc {
					op = "<="
				}
				in.KeyConditionExpression = aws.String(*in.KeyConditionExpression + " AND #sk " + op + " :bound")
				in.ExpressionAttributeNames["#sk"] = skAttr
				in.ExpressionAttributeValues[":bound"] = &types.AttributeValueMemberS{Value: bound}
			}
			out, err := s.DB.Query(ctx, in)
			if err != nil {
				errOf[i] = fmt.Errorf("store: query %s %s: %w", q.index, k, err)
				return
			}
			for _, it := range out.Items {
				if start == nil || order(it, start) > 0 { // after the cursor's item
					pages[i].items = append(pages[i].items, it)
				}
			}
			// the shard has more than it gave, and what it gave may not
			// fill a page
			pages[i].cut = len(out.LastEvaluatedKey) > 0 && len(pages[i].items) < int(limit)
		})
	}
	wg.Wait()
	var all []map[string]types.AttributeValue
	var cutAt map[string]types.AttributeValue // the earliest last item of a cut shard
	for i := range keys {
		if errOf[i] != nil {
			return "", errOf[i]
		}
		all = append(all, pages[i].items...)
		if p := pages[i]; p.cut && len(p.items) > 0 && (cutAt == nil || order(p.items[len(p.items)-1], cutAt) < 0) {
			cutAt = p.items[len(p.items)-1]
		}
	}
	slices.SortStableFunc(all, order)
	more := len(all) > int(limit)
	if cutAt != nil {
		// past a cut shard's last item, that shard's unread items may
		// come first: the page ends there, and more follows
		n := 0
		for n < len(all) && order(all[n], cutAt) <= 0 {
			n++
		}
		all, more = all[:n], true
	}
	if len(all) >= int(limit) {
		all, more = all[:limit], true
	}
	for _, it := range all {
		if err := decode(it); err != nil {
			return "", err
		}
	}
	if !more || len(all) == 0 {
		return "", nil
	}
	last := all[len(all)-1]
	cursor := map[string]types.AttributeValue{AttrPK: last[AttrPK], AttrSK: last[AttrSK], pkAttr: last[pkAttr], skAttr: last[skAttr]}
	return encodeCursor(cursor)
}

// ShardStats count a shard migration's progress.
type ShardStats struct {
	Scanned  int64 // items read
	Indexed  int64 // RecentCooking, Trending and Recipe items among them
	Moved    int64 // moved to their write shard
	Unmoved  int64 // already there
	Overtook int64 // changed meanwhile, and read again
}

// BackfillIndexShards moves the RecentCooking and Trending items to the
// GSI3 write shard the Store's Sharding gives them, and the Recipe items
// to their GSI2 one with a sort key that ends with the recipe's id (items
// written before, or with another count), each on the condition that its
// index keys are still the ones read (moveToShard: one that changed is
// read again and redone). Reads find every item during the move (they query the
// unsharded key too). Running it again finds nothing to do. progress, if
// set, is called after every scanned page, never concurrently.
func (s Upkeep) BackfillIndexShards(ctx context.Context, segments int, progress func(ShardStats)) (ShardStats, error) {
	var scanned, indexed, moved, unmoved, overtook atomic.Int64
	snapshot := func() ShardStats {
		return ShardStats{scanned.Load(), indexed.Load(), moved.Load(), unmoved.Load(), overtook.Load()}
	}
	err := s.scanTypes(ctx, segments, []string{TypeRecentCooking, TypeTrending, TypeRecipe}, &scanned, func(it map[string]types.AttributeValue) error {
		indexed.Add(1)
		done, raced, err := s.moveToShard(ctx, it)
		if raced {
			overtook.Add(1)
		}
		switch {
		case err != nil:
			return err
		case done:
			moved.Add(1)
		default:
			unmoved.Add(1)
		}
		return nil
	}, func() {
		if progress != nil {
			progress(snapshot())
		}
	})
	return snapshot(), err
}

// moveToShard sets an item's index keys to those of its write shard if
// they differ, on the condition that they are still the ones read; if the
// item changed meanwhile (the projector re-rated a recipe, the writer
// changed its method), it is read again and redone.
func (s Upkeep) moveToShard(ctx context.Context, it map[string]types.AttributeValue) (moved, raced bool, err error) {
	for range 5 {
		want, ok := s.indexShard(it)
		var set, cond []string
		vals := map[string]types.AttributeValue{}
		for attr, w := range want {
			have, _ := it[attr].(*types.AttributeValueMemberS)
			if have == nil {
				return false, raced, nil // not in the index: left
			}
			if have.Value != w {
				set = append(set, fmt.Sprintf("%s = :new%s", attr, attr))
				vals[":new"+attr] = strAV(w)
			}
			cond = append(cond, fmt.Sprintf("%s = :old%s", attr, attr))
			vals[":old"+attr] = strAV(have.Value)
		}
		if !ok || len(set) == 0 {
			return false, raced, nil // already there, or not decodable (quarantine): left
		}
		slices.Sort(set)
		slices.Sort(cond)
		k := itemKey(it)
		_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.Table), Key: k.AV(),
			UpdateExpression:          aws.String("SET " + strings.Join(set, ", ")),
			ConditionExpression:       aws.String(strings.Join(cond, " AND ")),
			ExpressionAttributeValues: vals,
		})
		if err == nil {
			return true, raced, nil
		}
		if !isConditionFailed(err) {
			return false, raced, fmt.Errorf("store: move %s %s to its shard: %w", k.PK, k.SK, err)
		}
		raced = true
		out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: k.AV(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return false, raced, fmt.Errorf("store: reread %s %s: %w", k.PK, k.SK, err)
		}
		if out.Item == nil {
			return false, raced, nil // deleted meanwhile
		}
		it = out.Item
	}
	return false, raced, fmt.Errorf("store: an item keeps changing while it is moved to its shard; run the backfill again")
}

// indexShard is the index keys a RecentCooking, Trending or Recipe item
// has when it is in its write shard.
func (s Upkeep) indexShard(it map[string]types.AttributeValue) (map[string]string, bool) {
	t, _ := it[AttrItemType].(*types.AttributeValueMemberS)
	if t == nil {
		return nil, false
	}
	switch t.Value {
	case TypeRecentCooking:
		var r RecentCooking
		if !s.decode(it, &r) || r.HistoryID == "" || r.CookDate == "" {
			return nil, false
		}
		return map[string]string{"GSI3PK": RecentIndexPK(r.CookDate, r.HistoryID, s.Sharding.Recent)}, true
	case TypeTrending:
		var tr Trending
		if !s.decode(it, &tr) || tr.RecipeID == "" || tr.Week == "" {
			return nil, false
		}
		return map[string]string{"GSI3PK": TrendingIndexPK(tr.Week, tr.RecipeID, s.Sharding.Trending)}, true
	case TypeRecipe:
		var r cooking.Recipe
		if !s.decode(it, &r) || r.RecipeID == "" || r.Method == "" || itemKey(it).SK != "METADATA" {
			return nil, false
		}
		return map[string]string{"GSI2PK": MethodIndexPK(r.Method, r.RecipeID, s.Sharding.Method),
			"GSI2SK": cooking.RatingSortKey(r.AvgRating, r.CreatedAt, r.RecipeID)}, true
	}
	return nil, false
}
