package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
)

// Sharding is how many write shards the index keys that every write of a
// kind lands on are split into (docs/scale.md): a key per month or week
// takes all of the growth, and one partition key takes at most 1,000 write
// units a second. An item's shard is chosen from the item (a hash of its
// id), so its writes always go to one shard; reads query every shard at
// once and merge them in the order one key gives (shardpages.go). 1 is one
// key, as the seeds have it (no suffix), and the default; a count n > 1
// writes <key>#<0…n-1>.
//
// The counts are part of the data: the table records them (shardrecord.go,
// Store.AgreeSharding), a program with a higher count raises the record,
// and one with a lower count is refused, since it would not read the shards
// past its count. Items stay in the shard they were written to when a count
// is raised (each shard of the lower count is one of the higher), and
// `projector backfill` moves the items of the unsharded key into shards.
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
	// Backfilled says that the unsharded key of every kind with more than
	// one shard is empty (`projector backfill` ran, and the table's record
	// says so): reads no longer query it. Until then a read of a sharded
	// key queries the unsharded one too.
	Backfilled bool
}

// DefaultSharding is what New sets: one key each, the seeds' own layout,
// so that a reader who follows the seeds' access patterns (Query GSI3
// where GSI3PK = RECENT#<yyyy-mm>) finds every item. Sharding is a setting
// a deployment opts into when `make load -target` names the key
// (docs/scale.md says which keys it helps).
var DefaultSharding = Sharding{Recent: 1, Trending: 1, Method: 1}

// MaxShards bounds a count: a page reads every shard.
const MaxShards = 64

// Validate says what is wrong with a Sharding.
func (s Sharding) Validate() error {
	for _, k := range s.kinds() {
		if k.n < 1 || k.n > MaxShards {
			return fmt.Errorf("store: %s shards %d: want 1 to %d", k.name, k.n, MaxShards)
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

// shardKind is one kind of sharded key: its name (as the table's record
// and the settings name it) and count.
type shardKind struct {
	name string
	n    int
}

// kinds are s's kinds, in one order.
func (s Sharding) kinds() []shardKind {
	return []shardKind{{"recent", s.Recent}, {"trending", s.Trending}, {"method", s.Method}}
}

// shardKeys are the partition keys of key in n shards, as a read orders
// them: the shards, then the key itself (items written before the shards).
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

// ShardStats count a shard migration's progress.
type ShardStats struct {
	Scanned  int64 // items read
	Indexed  int64 // RecentCooking, Trending and Recipe items among them
	Moved    int64 // moved to their write shard
	Unmoved  int64 // already there
	Overtook int64 // changed meanwhile, and read again
}

// BackfillIndexShards moves the RecentCooking, Trending and Recipe items
// on an unsharded key (written before its kind had shards) to the write
// shard the Store's Sharding gives them, and gives Recipe items a GSI2 sort
// key that ends with the recipe's id, each on the condition that its index
// keys are still the ones read (moveToShard: one that changed is read again
// and redone). Items already in a shard stay there: after a count is
// raised, each shard of the lower count is one of the higher. Reads find
// every item during the move (they query the unsharded key first). Running
// it again finds nothing to do. progress, if set, is called after every
// scanned page, never concurrently. The caller records a complete run
// (MarkBackfilled).
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
// has once it is moved: its write shard's, if it is on the unsharded key
// (or on no shard of its key: written for another method, say), else the
// shard it is in; and for a recipe, a sort key that ends with its id.
func (s Upkeep) indexShard(it map[string]types.AttributeValue) (map[string]string, bool) {
	t, _ := it[AttrItemType].(*types.AttributeValueMemberS)
	if t == nil {
		return nil, false
	}
	// stay keeps the item's key in attr if it is one of base's shards
	stay := func(attr, base, want string, n int) string {
		if have := strAttr(it, attr); inShard(have, base, n) {
			return have
		}
		return want
	}
	switch t.Value {
	case TypeRecentCooking:
		var r RecentCooking
		if !s.decode(it, &r) || r.HistoryID == "" || r.CookDate == "" {
			return nil, false
		}
		n := s.Sharding.Recent
		return map[string]string{"GSI3PK": stay("GSI3PK", prefixRecent+cooking.Month(r.CookDate), RecentIndexPK(r.CookDate, r.HistoryID, n), n)}, true
	case TypeTrending:
		var tr Trending
		if !s.decode(it, &tr) || tr.RecipeID == "" || tr.Week == "" {
			return nil, false
		}
		n := s.Sharding.Trending
		return map[string]string{"GSI3PK": stay("GSI3PK", SKPrefixTrending+tr.Week, TrendingIndexPK(tr.Week, tr.RecipeID, n), n)}, true
	case TypeRecipe:
		var r cooking.Recipe
		if !s.decode(it, &r) || r.RecipeID == "" || r.Method == "" || itemKey(it).SK != "METADATA" {
			return nil, false
		}
		n := s.Sharding.Method
		return map[string]string{"GSI2PK": stay("GSI2PK", prefixMethod+r.Method, MethodIndexPK(r.Method, r.RecipeID, n), n),
			"GSI2SK": cooking.RatingSortKey(r.AvgRating, r.CreatedAt, r.RecipeID)}, true
	}
	return nil, false
}

// inShard reports whether pk is one of base's shards: base#i with i < n
// (the shard numbers written: never base itself, nor a number with a
// leading zero).
func inShard(pk, base string, n int) bool {
	num, ok := strings.CutPrefix(pk, base+"#")
	if !ok || n <= 1 || num == "" || len(num) > 1 && num[0] == '0' {
		return false
	}
	i, err := strconv.Atoi(num)
	return err == nil && i >= 0 && i < n
}
