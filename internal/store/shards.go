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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
}

// DefaultSharding is what New sets: enough for 10,000 user writes a second
// of make load's mix (docs/scale.md).
var DefaultSharding = Sharding{Recent: 4, Trending: 4}

// MaxShards bounds a count: a page reads every shard.
const MaxShards = 64

// Validate says what is wrong with a Sharding.
func (s Sharding) Validate() error {
	for name, n := range map[string]int{"recent": s.Recent, "trending": s.Trending} {
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
// most, with a cursor exactly when the page is full (as DynamoDB gives a
// LastEvaluatedKey when a query reaches its Limit). Each shard is queried
// for one page from the cursor's sort key on, concurrently; the cursor is
// the last item's key, as one key's, so a cursor of the unsharded query
// resumes this one. Sort keys must be unique across the shards (they end
// with the item's id), and q may have no sort-key condition or filter.
func (s *Store) queryShards(ctx context.Context, q query, keys []string, decode func(map[string]types.AttributeValue) error) (string, error) {
	if len(keys) == 1 {
		q.pk = keys[0]
		return s.queryPage(ctx, q, decode)
	}
	if q.skPrefix != "" || q.skFrom != "" || q.topLevel || q.status != "" || q.liveAt != 0 {
		return "", fmt.Errorf("store: a sharded query takes no sort-key condition or filter")
	}
	limit := q.page.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > MaxLimit {
		return "", errs.Field("limit", fmt.Sprintf("must be at most %d", MaxLimit))
	}
	pkAttr, skAttr := q.keyAttrs()
	var bound string
	if q.page.Cursor != "" {
		var start map[string]types.AttributeValue
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
		bound = start[skAttr].(*types.AttributeValueMemberS).Value
	}
	pages := make([][]map[string]types.AttributeValue, len(keys))
	errOf := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			sq := q
			sq.pk = k
			in := sq.input(s.Table)
			in.Limit = aws.Int32(limit)
			if bound != "" {
				op := ">"
				if q.desc {
					op = "<"
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
			pages[i] = out.Items
		})
	}
	wg.Wait()
	var all []map[string]types.AttributeValue
	for i := range keys {
		if errOf[i] != nil {
			return "", errOf[i]
		}
		all = append(all, pages[i]...)
	}
	sortKey := func(it map[string]types.AttributeValue) string {
		v, _ := it[skAttr].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	slices.SortStableFunc(all, func(a, b map[string]types.AttributeValue) int {
		c := strings.Compare(sortKey(a), sortKey(b))
		if q.desc {
			c = -c
		}
		return c
	})
	if len(all) > int(limit) {
		all = all[:limit]
	}
	for _, it := range all {
		if err := decode(it); err != nil {
			return "", err
		}
	}
	if len(all) < int(limit) {
		return "", nil
	}
	last := all[len(all)-1]
	cursor := map[string]types.AttributeValue{AttrPK: last[AttrPK], AttrSK: last[AttrSK], pkAttr: last[pkAttr], skAttr: last[skAttr]}
	return encodeCursor(cursor)
}

// ShardStats count a shard migration's progress.
type ShardStats struct {
	Scanned  int64 // items read
	Indexed  int64 // RecentCooking and Trending items among them
	Moved    int64 // moved to their write shard
	Unmoved  int64 // already there
	Overtook int64 // changed meanwhile (rewritten in its shard, or deleted): left
}

// BackfillIndexShards moves the RecentCooking and Trending items to the
// GSI3 write shard the Store's Sharding gives them (items written before
// it, or with another count), each on the condition that its GSI3 key is
// still the one read: an item the projector rewrote meanwhile is in its
// shard already. Reads find every item during the move (they query the
// unsharded key too). Running it again finds nothing to do. progress, if
// set, is called after every scanned page, never concurrently.
func (s Upkeep) BackfillIndexShards(ctx context.Context, segments int, progress func(ShardStats)) (ShardStats, error) {
	var (
		scanned, indexed, moved, unmoved, overtook atomic.Int64
		progressMu                                 sync.Mutex
	)
	snapshot := func() ShardStats {
		return ShardStats{scanned.Load(), indexed.Load(), moved.Load(), unmoved.Load(), overtook.Load()}
	}
	err := s.scanSegments(ctx, segments, dynamodb.ScanInput{
		FilterExpression:          aws.String("itemType IN (:r, :t)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": strAV(TypeRecentCooking), ":t": strAV(TypeTrending)},
	}, func(_ int, out *dynamodb.ScanOutput) error {
		scanned.Add(int64(out.ScannedCount))
		for _, it := range out.Items {
			indexed.Add(1)
			have, _ := it["GSI3PK"].(*types.AttributeValueMemberS)
			want, ok := s.indexShard(it)
			if !ok || have == nil {
				unmoved.Add(1) // not decodable (quarantine) or not indexed: left
				continue
			}
			if have.Value == want {
				unmoved.Add(1)
				continue
			}
			_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(s.Table), Key: itemKey(it).AV(),
				UpdateExpression:          aws.String("SET GSI3PK = :new"),
				ConditionExpression:       aws.String("GSI3PK = :old"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":new": strAV(want), ":old": strAV(have.Value)},
			})
			switch {
			case err == nil:
				moved.Add(1)
			case isConditionFailed(err):
				overtook.Add(1)
			default:
				return fmt.Errorf("store: move %s %s to its shard: %w", itemKey(it).PK, itemKey(it).SK, err)
			}
		}
		if progress != nil {
			progressMu.Lock()
			progress(snapshot())
			progressMu.Unlock()
		}
		return nil
	})
	return snapshot(), err
}

// indexShard is the GSI3 partition key a RecentCooking or Trending item
// belongs in.
func (s Upkeep) indexShard(it map[string]types.AttributeValue) (string, bool) {
	t, _ := it[AttrItemType].(*types.AttributeValueMemberS)
	if t == nil {
		return "", false
	}
	switch t.Value {
	case TypeRecentCooking:
		var r RecentCooking
		if !s.decode(it, &r) || r.HistoryID == "" || r.CookDate == "" {
			return "", false
		}
		return RecentIndexPK(r.CookDate, r.HistoryID, s.Sharding.Recent), true
	case TypeTrending:
		var tr Trending
		if !s.decode(it, &tr) || tr.RecipeID == "" || tr.Week == "" {
			return "", false
		}
		return TrendingIndexPK(tr.Week, tr.RecipeID, s.Sharding.Trending), true
	}
	return "", false
}
