package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The per-cooking items off the recipe's partition (docs/scale.md, "The hot
// recipe's partition"). A popular recipe's partition (RECIPE#<id>) took about
// 12 write units per cooking of it: a marker and a recent item per cooking
// besides the folded counts, so one partition's 1,000 write units a second
// capped the recipe at about 80 cookings a second. The markers and the
// recent items are now written in the cook's partition (USER#<cook>), where
// the history entry is; the recipe's partition takes, per projector call, the
// recipe's aggregate, a trending item per week and one ledger item that names
// the recent items the call wrote (so that a deleted recipe's cascade finds
// them).
//
// A deployment with data moves in place:
//   - markers: a change's marker is where the build that counted it wrote
//     it. The table's record (ShardRecord.CookingMoved) says from which
//     record time on changes are counted in the cook's partition: the time
//     the first program of this layout started, plus MoveOverlap. A change
//     older than that is counted, and looked for, in the recipe's partition,
//     as before, so a redelivery of a change the old build counted counts
//     nothing. On a new table the time is the epoch: every change counts in
//     its cook's partition.
//   - recent items: `projector backfill` moves those in recipes' partitions
//     to their cooks' (BackfillCookingPartitions), with a ledger entry each,
//     and records it (ShardRecord.RecentsMoved); until then a history
//     removal deletes both keys. Reads of recent items (GSI3) find them
//     wherever they are, during the move too.

// Layout says where the cooking derivations' per-cooking items are, as the
// table's record says (AgreeSharding sets it). The zero value is a table
// that never had the old layout: every change counted in its cook's
// partition, no recent item in a recipe's.
type Layout struct {
	// LegacyBefore: a change whose record time is before it is counted (and
	// looked for) in the recipe's partition, where builds before the move
	// counted it. Zero: none.
	LegacyBefore time.Time
	// LegacyRecents: recent items may be left in recipes' partitions (until
	// `projector backfill` moved them): a removal deletes that key too.
	LegacyRecents bool
}

// notMoved is the layout of a table whose record does not say the move yet
// to a program that does not count cooking changes: every change where the
// old build counts it.
var notMoved = Layout{LegacyBefore: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), LegacyRecents: true}

// MoveOverlap is how long after the first projector of this layout starts
// the old build may still count changes (the last batches of a Lambda
// version being replaced, a rolling deployment): changes with a record time
// up to then are counted where the old build counts them.
const MoveOverlap = time.Hour

// legacyWatch is how long past LegacyBefore a change is also looked for in
// the recipe's partition: an old build that ran past the overlap may have
// counted it there, and a stream keeps a record 24 hours.
const legacyWatch = 24 * time.Hour

// markerPK is the partition a delta's marker is written in.
func (l Layout) markerPK(recipeID string, d CookingDelta) string {
	if d.Cook == "" || d.At.Before(l.LegacyBefore) {
		return RecipePK(recipeID)
	}
	return UserPK(d.Cook)
}

// markerPKs are the partitions a delta's marker is looked for in: where it
// is written, and for a day past LegacyBefore the recipe's too.
func (l Layout) markerPKs(recipeID string, d CookingDelta) []string {
	pk := l.markerPK(recipeID, d)
	if !l.LegacyBefore.IsZero() && pk != RecipePK(recipeID) && d.At.Before(l.LegacyBefore.Add(legacyWatch)) {
		return []string{pk, RecipePK(recipeID)}
	}
	return []string{pk}
}

// LegacyRecentKey is where builds before the move wrote a recent item:
// RECIPE#<id> / COOKED#<cookDate>#<historyId>.
func LegacyRecentKey(recipeID, cookDate, historyID string) Key {
	return Key{RecipePK(recipeID), SKPrefixCooked + cookDate + "#" + historyID}
}

// Ledger items: RECIPE#<id> / COOKS#<source change>, one per call that
// wrote recent items of the recipe, naming them.
const (
	TypeCookLedger   = "CookLedger"
	SKPrefixCookList = "COOKS#"
)

// cookLedger names recent items of a recipe in their cooks' partitions.
// Its key is the first source change it names, so a redelivered call
// writes the same item; a call that finds some changes counted before
// names only the rest (they are named by the earlier ledger).
type cookLedger struct {
	first string
	Keys  []Key `dynamodbav:"keys"`
}

func (l *cookLedger) add(sourceID string, k Key) {
	if l.first == "" {
		l.first = sourceID
	}
	l.Keys = append(l.Keys, k)
}

// item is the ledger's item in partition pk (the recipe's, or one of its
// pending partitions'; false: it names nothing).
func (l cookLedger) item(pk string) (map[string]types.AttributeValue, bool, error) {
	if len(l.Keys) == 0 {
		return nil, false, nil
	}
	it, err := marshal(head{Key: Key{pk, SKPrefixCookList + l.first}, ItemType: TypeCookLedger, Derived: true}, l)
	return it, err == nil, err
}

// ledgerKeyOK reports whether a key a ledger names is a recent item's: a
// ledger written by anyone else can name no other item for the cascade to
// delete.
func ledgerKeyOK(k Key) bool {
	return strings.HasPrefix(k.PK, prefixUser) && len(k.PK) > len(prefixUser) && strings.HasPrefix(k.SK, SKPrefixCooked)
}

// agreeLayout reads the layout from the table's record. A record without
// the move gets it from the first program that counts cooking changes
// (counts: the projector): the epoch where the table has no recent item in a
// recipe's partition (a new table), else that program's start plus
// MoveOverlap. Other programs leave it to the projector and use the old
// layout meanwhile.
func (s *Store) agreeLayout(ctx context.Context, rec ShardRecord, now time.Time, counts bool) error {
	if rec.CookingMoved != "" {
		return s.setLayout(rec)
	}
	if !counts {
		s.Layout = notMoved
		return nil
	}
	legacy, err := s.legacyRecentFound(ctx, now)
	if err != nil {
		return err
	}
	at, moved := time.Unix(0, 0), true
	if legacy {
		at, moved = now.Add(MoveOverlap), false
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(),
		UpdateExpression:    aws.String("SET cookingMoved = if_not_exists(cookingMoved, :t), recentsMoved = if_not_exists(recentsMoved, :m)"),
		ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": strAV(at.UTC().Format(time.RFC3339)),
			":m": &types.AttributeValueMemberBOOL{Value: moved}},
		ReturnValues: types.ReturnValueAllNew})
	if err != nil {
		return fmt.Errorf("store: record the cooking layout's move: %w", err)
	}
	var got ShardRecord
	if !s.decode(out.Attributes, &got) {
		return fmt.Errorf("%w: the item %s / %s cannot be read (see the quarantine log line)", ErrShardsDisagree, shardRecordPK, shardRecordSK)
	}
	return s.setLayout(got)
}

func (s *Store) setLayout(rec ShardRecord) error {
	t, err := time.Parse(time.RFC3339, rec.CookingMoved)
	if err != nil {
		return fmt.Errorf("%w: the item %s / %s has cookingMoved %q, not a time", ErrShardsDisagree, shardRecordPK, shardRecordSK, rec.CookingMoved)
	}
	s.Layout = Layout{LegacyRecents: !rec.RecentsMoved}
	if t.After(time.Unix(0, 0)) {
		s.Layout.LegacyBefore = t
	}
	return nil
}

// legacyRecentFound looks for a recent item in a recipe's partition under
// the keys an old build most likely wrote some under: this and last month's
// (GSI3 RECENT#<yyyy-mm>, unsharded and in each shard up to the larger of
// the Store's count and legacyShards). An old deployment with cookings has
// some there; a new table has none.
func (s *Store) legacyRecentFound(ctx context.Context, now time.Time) (bool, error) {
	for _, t := range []time.Time{now, now.AddDate(0, -1, 0)} {
		base := prefixRecent + t.UTC().Format("2006-01")
		keys := []string{base}
		for i := range max(s.Sharding.Recent, legacyShards) {
			keys = append(keys, fmt.Sprintf("%s#%d", base, i))
		}
		for _, pk := range keys {
			in := query{index: IndexGSI3, pk: pk}.input(s.Table)
			in.Limit = aws.Int32(1)
			out, err := s.DB.Query(ctx, in)
			if err != nil {
				return false, fmt.Errorf("store: look for recent items in recipes' partitions: %w", err)
			}
			for _, it := range out.Items {
				if strings.HasPrefix(itemKey(it).PK, prefixRecipe) {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// MoveStats counts what BackfillCookingPartitions did.
type MoveStats struct {
	// Scanned items; Recents are the recent items among them, Moved those
	// moved to their cook's partition, Gone those deleted meanwhile,
	// Skipped those in a recipe's partition it could not read (left, and
	// the move not recorded).
	Scanned, Recents, Moved, Gone, Skipped int64
}

// ErrMoveTooEarly is what BackfillCookingPartitions returns while the old
// build may still write recent items in recipes' partitions.
var ErrMoveTooEarly = errors.New("store: the cooking layout's move is not safe to complete yet")

// BackfillCookingPartitions moves the recent items that builds before the
// move wrote in recipes' partitions to their cooks' partitions, each in a
// transaction with a ledger item in the recipe's partition that names it,
// on the condition that the old item is still there (a history removal
// meanwhile deletes it, and it is not moved). Reads find every item during
// the move (GSI3 names no partition). A second run finds nothing to move.
// After a run that left none behind it records the move
// (ShardRecord.RecentsMoved), and history removals stop deleting the old
// key. It refuses to run before a projector of this layout has recorded the
// move, and while the old build may still be counting (before
// Layout.LegacyBefore).
func (s Upkeep) BackfillCookingPartitions(ctx context.Context, segments int, now time.Time, progress func(MoveStats)) (MoveStats, error) {
	switch {
	case !s.Layout.LegacyRecents:
		return MoveStats{}, nil // nothing was left to move
	case s.Layout == notMoved:
		return MoveStats{}, fmt.Errorf("%w: no projector of this build has started on the table (it records the move)", ErrMoveTooEarly)
	case now.Before(s.Layout.LegacyBefore):
		return MoveStats{}, fmt.Errorf("%w: the old build may count changes until %s (the first new projector's start plus %s); run it after that",
			ErrMoveTooEarly, s.Layout.LegacyBefore.Format(time.RFC3339), MoveOverlap)
	}
	var scanned, recents, moved, gone, skipped atomic.Int64
	snapshot := func() MoveStats {
		return MoveStats{scanned.Load(), recents.Load(), moved.Load(), gone.Load(), skipped.Load()}
	}
	err := s.scanTypes(ctx, segments, []string{TypeRecentCooking}, &scanned, func(it map[string]types.AttributeValue) error {
		recents.Add(1)
		k := itemKey(it)
		if !strings.HasPrefix(k.PK, prefixRecipe) {
			return nil // in its cook's partition already
		}
		var r RecentCooking
		if !s.decode(it, &r) || r.UserID == "" || r.RecipeID == "" || RecipePK(r.RecipeID) != k.PK {
			skipped.Add(1)
			return nil // not readable (quarantine): left
		}
		ok, err := s.moveRecent(ctx, k, r)
		switch {
		case err != nil:
			return err
		case ok:
			moved.Add(1)
		default:
			gone.Add(1)
		}
		return nil
	}, func() {
		if progress != nil {
			progress(snapshot())
		}
	})
	if err != nil || skipped.Load() > 0 {
		return snapshot(), err
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(),
		UpdateExpression:          aws.String("SET recentsMoved = :yes"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":yes": &types.AttributeValueMemberBOOL{Value: true}}})
	if err != nil {
		return snapshot(), fmt.Errorf("store: record the recent items' move: %w", err)
	}
	s.Layout.LegacyRecents = false
	return snapshot(), nil
}

// moveRecent moves one recent item from its recipe's partition (old) to its
// cook's, with a ledger naming it; false: the old item was gone.
func (s Upkeep) moveRecent(ctx context.Context, old Key, r RecentCooking) (bool, error) {
	it, err := recentItem(r, s.Sharding.Recent)
	if err != nil {
		return false, err
	}
	var l cookLedger
	l.add("moved-"+r.HistoryID, itemKey(it))
	ledger, _, err := l.item(RecipePK(r.RecipeID))
	if err != nil {
		return false, err
	}
	items := []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(s.Table), Key: old.AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		put(s.Table, it, "attribute_not_exists(PK)"),
		put(s.Table, ledger, ""),
	}
	for attempt := range 5 {
		_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		reasons := cancelReasons(err)
		if len(reasons) > 0 && reasons[0] == "ConditionalCheckFailed" {
			return false, nil
		}
		if len(reasons) > 1 && reasons[1] == "ConditionalCheckFailed" {
			// written there already (a repair, named by its own ledger):
			// the old copy goes, the new one stays as it is
			items = items[:1]
			continue
		}
		if !slices.Contains(reasons, "TransactionConflict") {
			break // done, or failed
		}
		select { // the projector is writing beside it: again
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(10*(attempt+1)) * time.Millisecond):
		}
	}
	if err != nil {
		return false, fmt.Errorf("store: move recent item %s %s: %w", old.PK, old.SK, err)
	}
	return true, nil
}
