package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/drift"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/room"
)

// ScanFacts reads the whole table with a consistent parallel Scan
// (segments) and collects what drift.Check compares: reactions and their
// counts, recipes, cooking history entries, recent and trending items,
// rooms, resources, collaborators and access items. Items that cannot be
// decoded are left out (`projector quarantine` lists them); a resource
// whose Resource item cannot be, is marked drift.Facts.Unreadable. scanned, when set, is called with the items read so far, from one
// goroutine at a time.
func (s Upkeep) ScanFacts(ctx context.Context, segments int, scanned func(int64)) (*drift.Facts, error) {
	return s.ScanFactsWith(ctx, segments, scanned, nil)
}

// ExpectFunc says which feed entries a stored item calls for (the entries
// the projector writes for its insert: projections.ExpectedActivities).
type ExpectFunc func(item map[string]types.AttributeValue) []room.Activity

// ScanFactsWith is ScanFacts that also collects the rooms' feed entries and,
// with expect, the entries each item calls for (drift compares them).
func (s Upkeep) ScanFactsWith(ctx context.Context, segments int, scanned func(int64), expect ExpectFunc) (*drift.Facts, error) {
	return s.ScanFactsFrom(ctx, segments, 0, nil, scanned, expect, nil)
}

// ScanPage is one page of a scan for drift facts, as a journal keeps it so
// that a scan cut off (a crash, Ctrl-C, a lost connection) goes on where it
// was: the items of the page that drift uses (the others are not kept),
// how many the page read, and the key its segment goes on after (nil: the
// segment is done).
type ScanPage struct {
	Segment int
	Items   []map[string]types.AttributeValue
	Read    int
	After   map[string]string
}

// ScanFactsFrom is ScanFactsWith that first takes the pages of an earlier
// run of the same scan (same table and segments), in their order, and
// then reads only what they had not: a segment they finished is not read
// again, the others go on after their last key. onPage, when set, gets
// every page read, one at a time, in the order the facts took them (a
// journal of them is an earlier run for the next). pageLimit bounds the
// items per page (0: DynamoDB's 1 MB pages).
func (s Upkeep) ScanFactsFrom(ctx context.Context, segments int, pageLimit int32, done []ScanPage, scanned func(int64), expect ExpectFunc, onPage func(ScanPage) error) (*drift.Facts, error) {
	segments = max(segments, 1)
	facts := make([]*drift.Facts, segments)
	for i := range facts {
		facts[i] = drift.NewFacts()
		facts[i].ExpectActivities = expect != nil
	}
	// take adds an item to its segment's facts and reports whether drift
	// uses it (a journal keeps those).
	take := func(f *drift.Facts, it map[string]types.AttributeValue) bool {
		used := addFact(f, it)
		if expect != nil {
			for _, a := range expect(it) {
				f.AddExpected(a)
				used = true
			}
		}
		return used
	}
	finished := make([]bool, segments)
	from := make([]map[string]types.AttributeValue, segments)
	var total int64
	for _, p := range done {
		if p.Segment < 0 || p.Segment >= segments {
			return nil, fmt.Errorf("store: an earlier scan's page of segment %d does not fit a scan of %d segments", p.Segment, segments)
		}
		if finished[p.Segment] {
			return nil, fmt.Errorf("store: an earlier scan has a page of segment %d after the segment's end", p.Segment)
		}
		for _, it := range p.Items {
			take(facts[p.Segment], it)
		}
		facts[p.Segment].Scanned += int64(p.Read)
		total += int64(p.Read)
		finished[p.Segment], from[p.Segment] = p.After == nil, attrKey(p.After)
	}
	var mu sync.Mutex
	in := dynamodb.ScanInput{ConsistentRead: aws.Bool(true)}
	if pageLimit > 0 {
		in.Limit = aws.Int32(pageLimit)
	}
	err := s.scanSegmentsFrom(ctx, segments, in, from, finished, func(seg int, out *dynamodb.ScanOutput) error {
		after, err := stringKey(out.LastEvaluatedKey)
		if err != nil {
			return err
		}
		p := ScanPage{Segment: seg, Read: len(out.Items), After: after}
		mu.Lock()
		defer mu.Unlock()
		f := facts[seg]
		for _, it := range out.Items {
			if take(f, it) {
				p.Items = append(p.Items, it)
			}
		}
		f.Scanned += int64(p.Read)
		total += int64(p.Read)
		if scanned != nil {
			scanned(total)
		}
		if onPage != nil {
			return onPage(p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := drift.NewFacts()
	for _, f := range facts {
		out.Merge(f)
	}
	return out, nil
}

// attrKey is stringKey's inverse.
func attrKey(k map[string]string) map[string]types.AttributeValue {
	if k == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(k))
	for n, v := range k {
		out[n] = &types.AttributeValueMemberS{Value: v}
	}
	return out
}

// stringKey is a LastEvaluatedKey of string attributes as plain strings
// (nil: the segment's end).
func stringKey(k map[string]types.AttributeValue) (map[string]string, error) {
	if len(k) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(k))
	for n, v := range k {
		sv, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return nil, fmt.Errorf("store: scan position: key attribute %s is not a string", n)
		}
		out[n] = sv.Value
	}
	return out, nil
}

// addFact adds one scanned item to f when it is one drift compares, and
// reports whether it was one (a journal keeps those).
func addFact(f *drift.Facts, it map[string]types.AttributeValue) bool {
	k := itemKey(it)
	used := false
	if id, ok := strings.CutPrefix(k.PK, prefixRoom); ok {
		f.AddRoomItem(id, drift.Key{PK: k.PK, SK: k.SK})
		used = true
	}
	switch itemTypeOf(it) {
	case TypeUserRoom:
		if id, ok := strings.CutPrefix(k.SK, SKPrefixRoom); ok && strings.HasPrefix(k.PK, prefixUser) {
			f.AddRoomItem(id, drift.Key{PK: k.PK, SK: k.SK})
		}
	case TypeRoom:
		var r room.Room
		if attributevalue.UnmarshalMap(it, &r) == nil && k == RoomKey(r.RoomID) {
			f.SetRoom(r)
		}
	case TypeMember:
		var m room.Member
		if attributevalue.UnmarshalMap(it, &m) == nil && m.RoomID != "" {
			f.AddMember(m)
		}
	case TypeCriteria:
		c := room.StoredCriteria{SK: k.SK}
		if attributevalue.UnmarshalMap(it, &c.CriteriaVersion) == nil && c.RoomID != "" {
			f.AddCriteria(c)
		}
	case TypeCombinedCriteria:
		var v room.CombinedVersion
		if attributevalue.UnmarshalMap(it, &v) == nil && v.RoomID != "" {
			f.AddCombined(v)
		}
	case TypeCompatibility:
		var v room.CompatibilityVersion
		if attributevalue.UnmarshalMap(it, &v) == nil && v.RoomID != "" {
			f.AddCompatibility(v)
		}
	case TypeActivity:
		var a room.Activity
		if attributevalue.UnmarshalMap(it, &a) == nil && a.RoomID != "" {
			f.AddActivity(a)
		}
	case TypeMessage:
		// A search room's chat message is the room's too: its cascade
		// deletes it.
		b, _ := it["searchRoom"].(*types.AttributeValueMemberBOOL)
		id, ok := strings.CutPrefix(k.PK, prefixChatRoom)
		if b == nil || !b.Value || !ok {
			return used
		}
		f.AddRoomItem(id, drift.Key{PK: k.PK, SK: k.SK})
	case TypeResource:
		t, id, ok := resourceOf(k.PK)
		if !ok || k.SK != "META" {
			return used
		}
		// the owner as the ordinary way reads it: an item it cannot
		// decode is no resource (a 404)
		var r collab.Resource
		if attributevalue.UnmarshalMap(it, &r) != nil || r.ResourceType != t || r.ResourceID != id || r.OwnerID == "" {
			f.Unreadable[string(t)+" "+id] = true
			return true
		}
		f.Members = append(f.Members, drift.Access{ResourceType: string(t), ResourceID: id, UserID: r.OwnerID, Role: collab.RoleOwner})
	case TypeCollaborator:
		// the ordinary way reads a collaborator item's presence only
		t, id, ok := resourceOf(k.PK)
		user, isCollab := strings.CutPrefix(k.SK, "COLLABORATOR#")
		if !ok || !isCollab {
			return used
		}
		f.Members = append(f.Members, drift.Access{ResourceType: string(t), ResourceID: id, UserID: user, Role: collab.RoleCollaborator})
	case TypeResourceAccess:
		// what AccessCheck reads: the item's type and user, and its role
		t, id, ok := resourceOf(k.PK)
		user, isAccess := strings.CutPrefix(k.SK, "ACCESS#")
		if !ok || !isAccess {
			return used
		}
		g := drift.Access{ResourceType: string(t), ResourceID: id, UserID: user}
		u, _ := it["userId"].(*types.AttributeValueMemberS)
		role, _ := it["role"].(*types.AttributeValueMemberS)
		if u != nil && u.Value == user && role != nil && (role.Value == collab.RoleOwner || role.Value == collab.RoleCollaborator) {
			g.Role = role.Value
		}
		f.Grants = append(f.Grants, g)
	case TypeReaction:
		var r collab.Reaction
		if attributevalue.UnmarshalMap(it, &r) == nil && r.CommentID != "" {
			if f.Reactions[r.CommentID] == nil {
				f.Reactions[r.CommentID] = map[string]int{}
			}
			f.Reactions[r.CommentID][r.Emoji]++
		}
	case TypeReactionCounts:
		var c countsItem
		if attributevalue.UnmarshalMap(it, &c) == nil && strings.HasPrefix(k.PK, "COMMENT#") && k.SK == "COUNTS" {
			f.Counts[strings.TrimPrefix(k.PK, "COMMENT#")] = c.Counts
		}
	case TypeRecipe:
		var r cooking.Recipe
		if attributevalue.UnmarshalMap(it, &r) == nil && k.SK == "METADATA" {
			sk, _ := it["GSI2SK"].(*types.AttributeValueMemberS)
			d := drift.Recipe{RecipeID: r.RecipeID, CreatedAt: r.CreatedAt, Rating: r.Rating}
			if sk != nil {
				d.SortKey = sk.Value
			}
			f.Recipes[r.RecipeID] = d
		}
	case TypeCookingHistory:
		var h cooking.History
		if attributevalue.UnmarshalMap(it, &h) == nil {
			f.Histories = append(f.Histories, h)
		}
	case TypeRecentCooking:
		var r RecentCooking
		if attributevalue.UnmarshalMap(it, &r) == nil {
			f.Recents = append(f.Recents, drift.Recent{RecipeID: r.RecipeID, HistoryID: r.HistoryID, UserID: r.UserID, CookDate: r.CookDate, Title: r.Title})
		}
	case TypeTrending:
		var t Trending
		if attributevalue.UnmarshalMap(it, &t) == nil {
			f.Trending[drift.RecipeWeek{RecipeID: t.RecipeID, Week: t.Week}] = t.Count
		}
	default:
		return used
	}
	return true
}

// ErrChangedMeanwhile is what Repair says of a difference whose item
// changed after the scan read it: it was left as it is; scan again.
var ErrChangedMeanwhile = errors.New("store: the derived item changed after the scan read it")

// Repair writes what one difference says the derived item must be, on the
// condition that it still is what the scan read (ErrChangedMeanwhile when
// not): a comment's counts, a recipe's rating aggregate and GSI2 sort key,
// a week's trending count (its item deleted at 0), a recent-cooking item
// (put, or deleted when stray), a resource member's access item (written
// with its role, or deleted when stray). Derived items only, and access
// items, which the writer keeps with the core items they follow: it never
// writes a core item but a recipe's derived fields, and every derived item
// it writes carries derived = true, so the projector ignores the records it
// causes (nothing consumes an access item's).
//
// Every item it writes carries run in its rebuild attribute
// (events.AttrRebuild), which tells the notifier that the change is a
// repair and no news: it announces nothing. With run "" the attribute is
// removed instead, and the notifier announces the repairs as it would the
// changes (a recipe's RecipeRatingChanged).
func (s Upkeep) Repair(ctx context.Context, d drift.Difference, run string) error {
	var err error
	switch d.Kind {
	case drift.KindReactionCounts:
		err = s.repairCounts(ctx, d.CommentID, d.Counts, d.OldCounts, run)
	case drift.KindRecipeRating:
		if err = s.noPending(ctx, d.Recipe.RecipeID); err == nil {
			err = s.repairRating(ctx, *d.Recipe, *d.OldRating, run)
		}
	case drift.KindTrending:
		if err = s.noPending(ctx, d.Week.RecipeID); err != nil {
			break
		}
		w := s.Cooking.trendingWrite(d.Week.RecipeID, d.Week.Week, d.OldCount, d.Count)
		if w.Put != nil && run != "" {
			w.Put.Item[events.AttrRebuild] = &types.AttributeValueMemberS{Value: run}
		}
		_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{w}})
	case drift.KindRecentCooking:
		if d.Stray { // where this build writes it, and where older ones did
			for _, k := range []Key{RecentKey(d.Recent.UserID, d.Recent.CookDate, d.Recent.HistoryID), LegacyRecentKey(d.Recent.RecipeID, d.Recent.CookDate, d.Recent.HistoryID)} {
				if _, err = s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: k.AV()}); err != nil {
					break
				}
			}
			break
		}
		// in its cook's partition, named by a ledger of its own for the
		// recipe's cascade, and not also where older builds wrote it
		var it, ledger map[string]types.AttributeValue
		if it, err = recentItem(RecentCooking{RecipeID: d.Recent.RecipeID, HistoryID: d.Recent.HistoryID,
			UserID: d.Recent.UserID, CookDate: d.Recent.CookDate, Title: d.Recent.Title}, s.Sharding.Recent); err != nil {
			break
		}
		if run != "" {
			it[events.AttrRebuild] = &types.AttributeValueMemberS{Value: run}
		}
		var l cookLedger
		l.add("repair-"+d.Recent.HistoryID, itemKey(it))
		if ledger, _, err = l.item(RecipePK(d.Recent.RecipeID)); err != nil {
			break
		}
		_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			put(s.Table, it, ""), put(s.Table, ledger, ""),
			{Delete: &types.Delete{TableName: aws.String(s.Table), Key: LegacyRecentKey(d.Recent.RecipeID, d.Recent.CookDate, d.Recent.HistoryID).AV()}},
		}})
	case drift.KindRoomCombined, drift.KindRoomCompatibility, drift.KindRoomActivity:
		var items []map[string]types.AttributeValue
		var dv Derived
		if d.Activity != nil {
			dv.Activities = append(dv.Activities, *d.Activity)
		}
		if d.Combined != nil {
			dv.Combined = append(dv.Combined, *d.Combined)
		}
		if d.Compatibility != nil {
			dv.Compatibility = append(dv.Compatibility, *d.Compatibility)
		}
		if items, err = DerivedItems(dv); err == nil && len(items) == 1 {
			if run != "" {
				items[0][events.AttrRebuild] = &types.AttributeValueMemberS{Value: run}
			}
			_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: items[0]})
		}
	case drift.KindRoomCascade:
		// What the cascade would have deleted; on the condition that the
		// room is still gone (a room id is never used again, but the scan
		// may be old).
		for _, k := range d.Delete {
			_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Delete: &types.Delete{TableName: aws.String(s.Table), Key: Key{k.PK, k.SK}.AV()}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: RoomKey(strings.TrimPrefix(d.Key, "room ")).AV(),
					ConditionExpression: aws.String("attribute_not_exists(PK)")}},
			}})
			if err != nil {
				break
			}
		}
	case drift.KindAccess:
		err = s.repairAccess(ctx, *d.Access, d.Stray)
	default:
		return fmt.Errorf("store: repair: unknown kind %q", d.Kind)
	}
	var cfe *types.ConditionalCheckFailedException
	if errors.As(err, &cfe) || cancelReasons(err) != nil {
		return fmt.Errorf("%w: %s", ErrChangedMeanwhile, d.Key)
	}
	if err != nil {
		return fmt.Errorf("store: repair %s %s: %w", d.Kind, d.Key, err)
	}
	return nil
}

// repairCounts sets a comment's counts to want if they are still old
// (every entry, and no other: size(counts)); with want empty it deletes
// the item (an empty map is never written).
func (s Upkeep) repairCounts(ctx context.Context, commentID string, want, old map[string]int, run string) error {
	names := map[string]string{}
	vals := map[string]types.AttributeValue{}
	cond := "attribute_not_exists(PK)"
	if old != nil {
		conds := []string{"size(counts) = :n"}
		vals[":n"] = num(len(old))
		for i, e := range slices.Sorted(maps.Keys(old)) {
			n, v := "#o"+strconv.Itoa(i), ":o"+strconv.Itoa(i)
			names[n], vals[v] = e, num(old[e])
			conds = append(conds, "counts."+n+" = "+v)
		}
		cond = strings.Join(conds, " AND ")
	}
	key := CountsKey(commentID).AV()
	if len(want) == 0 {
		if old == nil {
			return nil
		}
		_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: key,
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals})
		return err
	}
	m := map[string]types.AttributeValue{}
	for e, n := range want {
		m[e] = num(n)
	}
	vals[":c"] = &types.AttributeValueMemberM{Value: m}
	vals[":t"] = &types.AttributeValueMemberS{Value: TypeReactionCounts}
	vals[":true"] = &types.AttributeValueMemberBOOL{Value: true}
	vals[":id"] = &types.AttributeValueMemberS{Value: commentID}
	set := "SET counts = :c, itemType = :t, derived = :true, commentId = :id" + rebuildClause(run, vals)
	if len(names) == 0 {
		names = nil
	}
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: key,
		UpdateExpression:    aws.String(set),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals})
	return err
}

// repairRating sets a recipe's rating aggregate and GSI2 sort key if its
// aggregate is still old.
func (s Upkeep) repairRating(ctx context.Context, r drift.Recipe, old cooking.Rating, run string) error {
	u := s.Cooking.ratingUpdate(r.RecipeID, r.CreatedAt, old, r.Rating, true)
	in := updateInput(u)
	in.UpdateExpression = aws.String(aws.ToString(u.UpdateExpression) + rebuildClause(run, u.ExpressionAttributeValues))
	_, err := s.DB.UpdateItem(ctx, in)
	return err
}

// rebuildClause is the end of a SET that marks the item with the rebuild
// run (its value added to vals), or, with no run, the REMOVE of the mark.
func rebuildClause(run string, vals map[string]types.AttributeValue) string {
	if run == "" {
		return " REMOVE " + events.AttrRebuild
	}
	vals[":rebuild"] = &types.AttributeValueMemberS{Value: run}
	return ", " + events.AttrRebuild + " = :rebuild"
}

// repairAccess writes an access item as the core items say it must be,
// on the condition that they still say so (the Resource item names the
// user its owner; or the Collaborator item and the Resource item are
// there), or deletes a stray one on the condition that they still do not
// (no Resource item naming the user, no Collaborator item): a repair that
// races an invite's acceptance is refused (ErrChangedMeanwhile), not
// undone. It carries no rebuild mark: nothing acts on an access item's
// changes.
func (s Upkeep) repairAccess(ctx context.Context, a drift.Access, stray bool) error {
	t := collab.ResourceType(a.ResourceType)
	user := map[string]types.AttributeValue{":user": strAV(a.UserID)}
	check := func(k Key, cond string, vals map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: k.AV(),
			ConditionExpression: aws.String(cond), ExpressionAttributeValues: vals}}
	}
	var items []types.TransactWriteItem
	switch {
	case stray:
		items = []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: aws.String(s.Table), Key: AccessKey(t, a.ResourceID, a.UserID).AV()}},
			check(ResourceKey(t, a.ResourceID), "attribute_not_exists(PK) OR ownerId <> :user", user),
			check(CollaboratorKey(t, a.ResourceID, a.UserID), "attribute_not_exists(PK)", nil),
		}
	case a.Role == collab.RoleOwner:
		items = []types.TransactWriteItem{
			{Update: s.Collab.accessUpdate(t, a.ResourceID, a.UserID, a.Role, false)},
			check(ResourceKey(t, a.ResourceID), "ownerId = :user", user),
		}
	default:
		items = []types.TransactWriteItem{
			{Update: s.Collab.accessUpdate(t, a.ResourceID, a.UserID, a.Role, false)},
			check(ResourceKey(t, a.ResourceID), "attribute_exists(PK) AND ownerId <> :user", user),
			check(CollaboratorKey(t, a.ResourceID, a.UserID), "attribute_exists(PK)", nil),
		}
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

// resourceOf reads a resource's type and id from its partition key.
func resourceOf(pk string) (collab.ResourceType, string, bool) {
	for _, t := range collab.ResourceTypes {
		if id, ok := strings.CutPrefix(pk, ResourcePK(t, "")); ok && id != "" {
			return t, id, true
		}
	}
	return "", "", false
}

// noPending drains a recipe's pending items (combiner.go) before its
// totals are repaired: counts still in them are not in the totals the scan
// read, and a repair would count them again with their drain. When it
// moved anything the repair is not made (ErrChangedMeanwhile: verify
// again); a pending item it cannot read is the drain's error.
func (s Upkeep) noPending(ctx context.Context, recipeID string) error {
	a, err := (Combiner{s.Store}).DrainPending(ctx, recipeID)
	if err != nil {
		return fmt.Errorf("store: drain recipe %s's pending counts before its repair: %w", recipeID, err)
	}
	if a.Applied > 0 {
		return fmt.Errorf("recipe %s: its pending counts were drained into its totals: %w", recipeID, ErrChangedMeanwhile)
	}
	return nil
}
