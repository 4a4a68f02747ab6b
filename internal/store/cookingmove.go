package store

import (
	"context"
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
// table's record says (AgreeSharding sets it; zero: the cook's partition for
// every change, and a removal deletes the legacy key too).
type Layout struct {
	// MarkersMoved: a change whose record time is before it has its marker
	// in the recipe's partition.
	MarkersMoved time.Time
	// RecentsMoved: no recent item is left in a recipe's partition.
	RecentsMoved bool
}

// MoveOverlap is how long after the first program of this layout starts
// the old build may still count changes (the last batches of a Lambda
// version being replaced, a rolling deployment): changes with a record time
// up to then keep their markers where the old build writes them. An old
// build that runs longer than this after the new one started may count a
// change twice.
const MoveOverlap = time.Hour

// markerPK is the partition of a delta's marker.
func (l Layout) markerPK(recipeID string, d CookingDelta) string {
	if d.Cook == "" || d.At.Before(l.MarkersMoved) {
		return RecipePK(recipeID)
	}
	return UserPK(d.Cook)
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

// item is the ledger's item in recipeID's partition (false: it names
// nothing).
func (l cookLedger) item(recipeID string) (map[string]types.AttributeValue, bool, error) {
	if len(l.Keys) == 0 {
		return nil, false, nil
	}
	it, err := marshal(head{Key: Key{RecipePK(recipeID), SKPrefixCookList + l.first}, ItemType: TypeCookLedger, Derived: true}, l)
	return it, err == nil, err
}

// ledgerKeyOK reports whether a key a ledger names is a recent item's: a
// ledger written by anyone else can name no other item for the cascade to
// delete.
func ledgerKeyOK(k Key) bool {
	return strings.HasPrefix(k.PK, prefixUser) && len(k.PK) > len(prefixUser) && strings.HasPrefix(k.SK, SKPrefixCooked)
}

// agreeLayout reads the layout from the table's record, recording the move's
// time in a record that has none (an older deployment: now + MoveOverlap).
// A record made by this build says the epoch, and that nothing is left to
// move (a new table).
func (s *Store) agreeLayout(ctx context.Context, rec ShardRecord, now time.Time) error {
	if rec.CookingMoved != "" {
		return s.setLayout(rec)
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(),
		UpdateExpression:          aws.String("SET cookingMoved = if_not_exists(cookingMoved, :t)"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": strAV(now.Add(MoveOverlap).UTC().Format(time.RFC3339))},
		ReturnValues:              types.ReturnValueAllNew})
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
	s.Layout = Layout{MarkersMoved: t, RecentsMoved: rec.RecentsMoved}
	return nil
}

// MoveStats counts what BackfillCookingPartitions did.
type MoveStats struct {
	// Scanned items; Recents are the recent items among them, Moved those
	// moved to their cook's partition, Gone those deleted meanwhile.
	Scanned, Recents, Moved, Gone int64
}

// BackfillCookingPartitions moves the recent items that builds before the
// move wrote in recipes' partitions to their cooks' partitions, each in a
// transaction with a ledger item in the recipe's partition that names it,
// and on the condition that the old item is still there (a history removal
// meanwhile deletes it, and it is not moved). Reads find every item during
// the move (GSI3 names no partition). A second run finds nothing to move.
// After a complete run it records the move (ShardRecord.RecentsMoved), and
// history removals stop deleting the old key.
func (s Upkeep) BackfillCookingPartitions(ctx context.Context, segments int, progress func(MoveStats)) (MoveStats, error) {
	var scanned, recents, moved, gone atomic.Int64
	snapshot := func() MoveStats { return MoveStats{scanned.Load(), recents.Load(), moved.Load(), gone.Load()} }
	err := s.scanTypes(ctx, segments, []string{TypeRecentCooking}, &scanned, func(it map[string]types.AttributeValue) error {
		recents.Add(1)
		k := itemKey(it)
		if !strings.HasPrefix(k.PK, prefixRecipe) {
			return nil // in its cook's partition already
		}
		var r RecentCooking
		if !s.decode(it, &r) || r.UserID == "" || r.RecipeID == "" || RecipePK(r.RecipeID) != k.PK {
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
	if err != nil {
		return snapshot(), err
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ShardRecordKey().AV(),
		UpdateExpression:          aws.String("SET recentsMoved = :yes"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":yes": &types.AttributeValueMemberBOOL{Value: true}}})
	if err != nil {
		return snapshot(), fmt.Errorf("store: record the recent items' move: %w", err)
	}
	s.Layout.RecentsMoved = true
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
	ledger, _, err := l.item(r.RecipeID)
	if err != nil {
		return false, err
	}
	for attempt := range 5 {
		_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: aws.String(s.Table), Key: old.AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
			put(s.Table, it, ""),
			put(s.Table, ledger, ""),
		}})
		reasons := cancelReasons(err)
		if len(reasons) > 0 && reasons[0] == "ConditionalCheckFailed" {
			return false, nil
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
