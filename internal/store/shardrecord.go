package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
)

// The table's record of its write shards: one item, read by every program
// at start (AgreeSharding). It is a core item of no entity: the consumers
// pass over it.
const (
	TypeShardRecord = "ShardRecord"
	shardRecordPK   = "STORE#SHARDS"
	shardRecordSK   = "COUNTS"
)

// ShardRecordKey is the key of the table's record of its write shards.
func ShardRecordKey() Key { return Key{PK: shardRecordPK, SK: shardRecordSK} }

// ShardRecord is what the table says of its write shards: the count each
// kind's items are written with (the highest any program has run with),
// and the kinds whose unsharded key a completed `projector backfill` left
// empty.
type ShardRecord struct {
	Recent     int      `dynamodbav:"recent"`
	Trending   int      `dynamodbav:"trending"`
	Method     int      `dynamodbav:"method"`
	Backfilled []string `dynamodbav:"backfilled,stringset,omitempty"`
	// CookingMoved is the record time (RFC 3339) from which changes are
	// counted in their cook's partition (the epoch: all of them),
	// RecentsMoved that no recent item is left in a recipe's
	// (cookingmove.go); the first projector of that layout sets both.
	CookingMoved string `dynamodbav:"cookingMoved,omitempty"`
	RecentsMoved bool   `dynamodbav:"recentsMoved,omitempty"`
}

func (r ShardRecord) sharding() Sharding {
	return Sharding{Recent: r.Recent, Trending: r.Trending, Method: r.Method}
}

// ErrShardsDisagree is what AgreeSharding returns when a program's counts
// cannot be used with the table's items; its message says what to do.
var ErrShardsDisagree = errors.New("store: the write shards disagree with the table's record")

// settingOf names a kind's setting, for errors that say what to change.
func settingOf(kind string) string { return "STORE_SHARDS_" + strings.ToUpper(kind) }

// ShardCheck is what AgreeSharding needs besides the Store: the time (the
// month and week a table most likely has items under) and whether the
// caller is `projector backfill`, which may move items written without a
// record.
type ShardCheck struct {
	Now      time.Time
	Backfill bool
	// CountsCooking: the caller counts cooking changes (the projector), and
	// records the cooking layout's move in a record without one
	// (cookingmove.go).
	CountsCooking bool
}

// legacyShards is the count each kind was written with, by default,
// before the table kept a record of its counts (builds between the write
// shards and the record, never released): a table without a record may
// have items in shards up to it.
const legacyShards = 4

// AgreeSharding checks the Store's Sharding against the table's record of
// its write shards, which it creates on a table without one. A table
// without a record whose items are in shards past the Store's counts (one
// written by a build whose default was four shards each: found among this
// and the last month's, week's and every method's keys) is refused, with
// the counts to run with, unless the caller is the backfill, which moves
// them to the Store's shards. A count
// higher than the record's raises it (the returned kinds): items already
// written stay in shards the higher count reads. A lower count is refused,
// because reads with it would not query the shards past it, and so is
// Backfilled while the record does not say that a backfill emptied the
// unsharded key of every sharded kind. Every program that reads or writes
// the sharded keys calls it before it starts. The refusal wraps
// ErrShardsDisagree and names the setting and the value to use.
func (s *Store) AgreeSharding(ctx context.Context, c ShardCheck) (raised []string, err error) {
	if err := s.Sharding.Validate(); err != nil {
		return nil, err
	}
	for range 5 {
		rec, found, err := s.ShardRecord(ctx)
		if err != nil {
			return nil, err
		}
		if !found && !c.Backfill {
			key, err := s.unrecordedShard(ctx, c.Now)
			if err != nil {
				return nil, err
			}
			if key != "" {
				return nil, fmt.Errorf("%w: the table has items in write shards (%s) and no record of their counts: it was written by a "+
					"build whose default was %d shards each. Run with STORE_SHARDS_RECENT=%d STORE_SHARDS_TRENDING=%d STORE_SHARDS_METHOD=%d "+
					"(they are recorded then), or move them to the counts you run with by `projector backfill` first",
					ErrShardsDisagree, key, legacyShards, max(legacyShards, s.Sharding.Recent), max(legacyShards, s.Sharding.Trending), max(legacyShards, s.Sharding.Method))
			}
		}
		if !found {
			item, err := marshal(head{Key: ShardRecordKey(), ItemType: TypeShardRecord},
				ShardRecord{Recent: s.Sharding.Recent, Trending: s.Sharding.Trending, Method: s.Sharding.Method})
			if err != nil {
				return nil, err
			}
			_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item,
				ConditionExpression: aws.String("attribute_not_exists(PK)")})
			if isConditionFailed(err) {
				continue // another program made it first: compare with its
			}
			if err != nil {
				return nil, fmt.Errorf("store: record the write shards: %w", err)
			}
			rec.Recent, rec.Trending, rec.Method = s.Sharding.Recent, s.Sharding.Trending, s.Sharding.Method
		}
		if err := s.agreeLayout(ctx, rec, c.Now, c.CountsCooking); err != nil {
			return nil, err
		}
		have := rec.sharding().kinds()
		var set, cond []string
		vals := map[string]types.AttributeValue{}
		names := map[string]string{} // "method" is a reserved word
		raised = nil
		for i, want := range s.Sharding.kinds() {
			switch n := have[i].n; {
			case want.n < n:
				return nil, fmt.Errorf("%w: %s=%d is lower than the %d shards the table's %s items are written in (item %s / %s): "+
					"run with %s=%d; a count cannot be lowered", ErrShardsDisagree, settingOf(want.name), want.n, n,
					strings.ToUpper(want.name)+"#", shardRecordPK, shardRecordSK, settingOf(want.name), n)
			case want.n > n:
				raised = append(raised, want.name)
				set = append(set, fmt.Sprintf("#%s = :%s", want.name, want.name))
				cond = append(cond, fmt.Sprintf("#%s = :was%s", want.name, want.name))
				names["#"+want.name] = want.name
				vals[":"+want.name] = &types.AttributeValueMemberN{Value: strconv.Itoa(want.n)}
				vals[":was"+want.name] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
			}
		}
		if s.Sharding.Backfilled {
			for _, k := range s.Sharding.kinds() {
				if k.n > 1 && !slices.Contains(rec.Backfilled, k.name) {
					return nil, fmt.Errorf("%w: STORE_SHARDS_BACKFILLED is set, but the table does not record a backfill of the %s shards "+
						"(the unsharded key may still hold items, which reads would then miss): run `projector backfill` first, "+
						"or leave STORE_SHARDS_BACKFILLED unset", ErrShardsDisagree, strings.ToUpper(k.name)+"#")
				}
			}
		}
		if len(set) == 0 {
			return nil, nil
		}
		_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(),
			UpdateExpression:         aws.String("SET " + strings.Join(set, ", ")),
			ConditionExpression:      aws.String(strings.Join(cond, " AND ")),
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals})
		if isConditionFailed(err) {
			continue // changed meanwhile: compare again
		}
		if err != nil {
			return nil, fmt.Errorf("store: raise the write shards: %w", err)
		}
		return raised, nil
	}
	return nil, fmt.Errorf("store: the table's record of its write shards keeps changing; start again")
}

// ShardRecord reads the table's record of its write shards (found false:
// none yet).
func (s *Store) ShardRecord(ctx context.Context) (rec ShardRecord, found bool, err error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return rec, false, fmt.Errorf("store: read the write shards' record: %w", err)
	}
	if out.Item == nil {
		return rec, false, nil
	}
	if !s.decode(out.Item, &rec) {
		return rec, false, fmt.Errorf("%w: the item %s / %s cannot be read (see the quarantine log line)", ErrShardsDisagree, shardRecordPK, shardRecordSK)
	}
	return rec, true, nil
}

// MarkBackfilled records that a backfill with the Store's Sharding left
// the unsharded key of every kind with more than one shard empty, on the
// condition that the record's counts are still the Store's (a count raised
// meanwhile from one may have put items there again). It returns the kinds
// it marked.
func (s Upkeep) MarkBackfilled(ctx context.Context) ([]string, error) {
	var kinds []string
	vals := map[string]types.AttributeValue{}
	names := map[string]string{}
	var cond []string
	for _, k := range s.Sharding.kinds() {
		if k.n > 1 {
			kinds = append(kinds, k.name)
		}
		cond = append(cond, fmt.Sprintf("#%s = :%s", k.name, k.name))
		names["#"+k.name] = k.name
		vals[":"+k.name] = &types.AttributeValueMemberN{Value: strconv.Itoa(k.n)}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	vals[":kinds"] = &types.AttributeValueMemberSS{Value: kinds}
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(),
		UpdateExpression:         aws.String("ADD backfilled :kinds"),
		ConditionExpression:      aws.String(strings.Join(cond, " AND ")),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals})
	if isConditionFailed(err) {
		return nil, fmt.Errorf("%w: the table's write shards changed during the backfill (or were never recorded): run it again", ErrShardsDisagree)
	}
	if err != nil {
		return nil, fmt.Errorf("store: record the backfill: %w", err)
	}
	return kinds, nil
}

// unrecordedShard looks for an item in a shard past the Store's count,
// below legacyShards, under the keys a table of the old default most
// likely has items under: the month and week of now and of a week before
// (GSI3), and every cooking method's (GSI2). It returns the first such key
// ("GSI3 RECENT#2026-12#2"), or "".
func (s *Store) unrecordedShard(ctx context.Context, now time.Time) (string, error) {
	type probe struct{ index, base string }
	var probes []probe
	add := func(index, base string, n int) {
		if n <= 1 {
			n = 0 // one key reads no shard
		}
		for i := n; i < legacyShards; i++ {
			probes = append(probes, probe{index, fmt.Sprintf("%s#%d", base, i)})
		}
	}
	for _, t := range []time.Time{now, now.AddDate(0, 0, -7)} {
		add(IndexGSI3, prefixRecent+t.UTC().Format("2006-01"), s.Sharding.Recent)
		y, w := t.UTC().ISOWeek()
		add(IndexGSI3, fmt.Sprintf("%s%04d-W%02d", SKPrefixTrending, y, w), s.Sharding.Trending)
	}
	for _, m := range cooking.Methods {
		add(IndexGSI2, prefixMethod+m, s.Sharding.Method)
	}
	found := make([]bool, len(probes))
	errOf := make([]error, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() {
			q := query{index: p.index, pk: p.base}
			in := q.input(s.Table)
			in.Limit = aws.Int32(1)
			out, err := s.DB.Query(ctx, in)
			found[i], errOf[i] = err == nil && len(out.Items) > 0, err
		})
	}
	wg.Wait()
	for i, p := range probes {
		if errOf[i] != nil {
			return "", fmt.Errorf("store: look for items in write shards: %w", errOf[i])
		}
		if found[i] {
			return p.index + " " + p.base, nil
		}
	}
	return "", nil
}
