package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/idempotency"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
)

// Derived item types of the cooking patterns.
const (
	TypeRecentCooking = "RecentCooking"
	TypeTrending      = "Trending"
	TypeCookingMarker = "CookingCountMarker"
	TypeSuggestion    = "Suggestion"
)

// Sort-key prefixes of a recipe's derived items.
const (
	SKPrefixCooked   = "COOKED#"
	SKPrefixTrending = "TRENDING#"
	SKPrefixCounted  = "COUNTED#"
	prefixRecent     = "RECENT#"
)

// RecentKey is the recent-cooking item of a history entry, in its cook's
// partition beside the entry: USER#<cook> / COOKED#<cookDate>#<historyId>,
// on GSI3 RECENT#<yyyy-mm> (pattern 6). Builds before the move
// (cookingmove.go) wrote it in the recipe's partition (LegacyRecentKey).
func RecentKey(userID, cookDate, historyID string) Key {
	return Key{UserPK(userID), SKPrefixCooked + cookDate + "#" + historyID}
}

// TrendingKey is a recipe's count for an ISO week (yyyy-Www).
func TrendingKey(recipeID, week string) Key { return Key{RecipePK(recipeID), SKPrefixTrending + week} }

// TrendingSortKey is a Trending item's GSI3 sort key: the count with a
// fixed width, so string order is numeric order, then the recipe.
func TrendingSortKey(count int, recipeID string) string {
	return fmt.Sprintf("%08d#%s", count, recipeID)
}

// RecentCooking is one cooking of a recipe (derived from the history
// entry; its keys come from the entry, so a replay rewrites it).
type RecentCooking struct {
	RecipeID  string `json:"recipeId" dynamodbav:"recipeId"`
	HistoryID string `json:"historyId" dynamodbav:"historyId"`
	UserID    string `json:"userId" dynamodbav:"userId"`
	CookDate  string `json:"cookDate" dynamodbav:"cookDate"`
	Title     string `json:"recipeTitle" dynamodbav:"recipeTitle"`
}

// Trending is a recipe's cooking count in one ISO week.
type Trending struct {
	RecipeID string `json:"recipeId" dynamodbav:"recipeId"`
	Week     string `json:"week" dynamodbav:"week"`
	Count    int    `json:"count" dynamodbav:"count"`
}

// counted is the Guard of a counter's markers: the record, in the
// counted item's own partition (sort key COUNTED#<source change>), that a
// source change (a stream eventID) was counted, written in the same
// transaction as the counts on the condition that it is not there, so a
// redelivered change counts nothing (idempotency.Guard.MarkerIn). Derived;
// removed by TTL keep after the change's own time at.
func (s Cooking) counted(itemType string, at time.Time, keep time.Duration) idempotency.Guard {
	return idempotency.Guard{Table: s.Table, PartitionKey: AttrPK, SortKey: AttrSK, Prefix: SKPrefixCounted,
		ItemType: itemType, Expiry: keep, Now: func() time.Time { return at }}
}

// CookingDelta is what one source change (a cooking history entry's
// insert, change or removal) does to its recipe's derived state.
type CookingDelta struct {
	// SourceID is the stream record's eventID: the change's marker; At is
	// the record's time, from which the marker's ttl is counted. Cook is
	// the history entry's user, in whose partition the marker is written
	// (Layout.markerPK).
	SourceID string
	At       time.Time
	Cook     string
	// Recent, when set, is written (Remove false) or deleted (Remove true).
	Recent *RecentCooking
	Remove bool
	// Week and WeekDelta move the week's trending count.
	Week      string
	WeekDelta int
	// RatingCount and RatingSum move the recipe's rating aggregate.
	RatingCount, RatingSum int
	// Notify, when set, is the recipe author's in-app notification of the
	// change (its UserID is filled in with the author; none when the
	// author is the actor), written with the change's marker.
	Notify *collab.Notification
}

// CookingApplied says what ApplyCooking did.
type CookingApplied struct {
	// Gone: the recipe does not exist (deleted): an apply did nothing; a
	// drain deleted the recipe's pending partitions (DrainPending).
	Gone bool
	// Applied counts the deltas applied now; the others were applied
	// before (their marker exists).
	Applied int
	// Recipe is the recipe after the deltas.
	Recipe cooking.Recipe
	// Raised are the weeks whose counts a drain raised (DrainPending; the
	// projector adds those its pending record shows, so that a drain
	// delivered again after a crash checks them again).
	Raised []string
}

// maxDeltasPerTransaction keeps a transaction within DynamoDB's 100 items:
// per delta a marker, a recent item and a notification that is not folded
// or a removal's legacy delete (3 × 32), plus the ledger of the recent items
// written and the pending item (2), 98 in all.
const maxDeltasPerTransaction = 32

// ApplyCooking counts deltas of one recipe exactly once each: it reads the
// recipe and the deltas' markers in one consistent BatchGetItem, leaves out
// the deltas whose marker exists, and writes the rest in one transaction:
// their markers and recent items (in their cooks' partitions; an inserted
// entry's only while the entry exists, read in the same BatchGetItem, so
// that its insertion delivered after its removal, as a Kinesis data stream
// may deliver them, does not bring the recent item back), a ledger
// naming the recent items written, and their deltas added to one of the
// recipe's pending items (combiner.go), whose own record asks the
// projector to move them into the recipe's totals (DrainPending). The
// recipe's own partition and its author's take nothing per call: the
// totals are written by the drains, at most PendingShards per round of a
// mapping's polls however many calls there are. A transaction that loses a
// race is read and tried again: O(1) requests per batch of a recipe's
// records, not per record.
func (s Cooking) ApplyCooking(ctx context.Context, recipeID string, deltas []CookingDelta, markerTTL time.Duration) (CookingApplied, error) {
	var out CookingApplied
	for start := 0; start < len(deltas); start += maxDeltasPerTransaction {
		a, err := s.applyCookingChunk(ctx, recipeID, deltas[start:min(start+maxDeltasPerTransaction, len(deltas))], markerTTL)
		if err != nil {
			return out, err
		}
		out.Gone, out.Recipe = a.Gone, a.Recipe
		out.Applied += a.Applied
		if a.Gone {
			return out, nil
		}
	}
	return out, nil
}

func (s Cooking) applyCookingChunk(ctx context.Context, recipeID string, deltas []CookingDelta, markerTTL time.Duration) (CookingApplied, error) {
	return untilWon(ctx, "recipe "+recipeID+" kept changing under its counts", func() (CookingApplied, error) {
		return s.tryApplyCooking(ctx, recipeID, deltas, markerTTL)
	})
}

var errLostRace = errors.New("store: lost a race")

// untilWon runs try again while it loses a race (errLostRace), with a
// growing pause, up to 8 times; then it says what kept changing.
func untilWon(ctx context.Context, what string, try func() (CookingApplied, error)) (CookingApplied, error) {
	for attempt := 0; attempt < 8; attempt++ {
		a, err := try()
		if !errors.Is(err, errLostRace) {
			return a, err
		}
		// jittered, so that writers that lost to each other do not meet again
		pause := time.Duration(attempt*attempt*10+rand.IntN(10*(attempt+1))) * time.Millisecond
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(pause):
		}
	}
	return CookingApplied{}, fmt.Errorf("store: %s; retry", what)
}

// transact writes items in one transaction; a cancellation by a condition
// or a conflict is errLostRace (read again and retry).
func (s Cooking) transact(ctx context.Context, items []types.TransactWriteItem, what string) error {
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	for _, r := range cancelReasons(err) {
		if r == "ConditionalCheckFailed" || r == "TransactionConflict" {
			return errLostRace
		}
	}
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}

func (s Cooking) tryApplyCooking(ctx context.Context, recipeID string, deltas []CookingDelta, markerTTL time.Duration) (CookingApplied, error) {
	var out CookingApplied
	keys := []Key{RecipeKey(recipeID)}
	for _, d := range deltas {
		for _, pk := range s.Layout.markerPKs(recipeID, d) {
			keys = append(keys, itemKey(s.counted(TypeCookingMarker, d.At, markerTTL).MarkerKeyIn(pk, d.SourceID)))
		}
		if r := d.Recent; r != nil && !d.Remove {
			keys = append(keys, HistoryKey(r.UserID, r.CookDate, r.HistoryID))
		}
	}
	var recipe *cooking.Recipe
	marked := map[string]bool{}
	histories := map[Key]bool{} // the entries whose recent items may be written: those that still exist
	err := s.batchGet(ctx, keys, true, func(it map[string]types.AttributeValue) error {
		switch itemTypeOf(it) {
		case TypeRecipe:
			var r cooking.Recipe
			if s.decode(it, &r) {
				recipe = &r
			}
		case TypeCookingMarker:
			marked[itemKey(it).SK[len(SKPrefixCounted):]] = true
		case TypeCookingHistory:
			histories[itemKey(it)] = true
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("store: read recipe %s: %w", recipeID, err)
	}
	if recipe == nil {
		out.Gone = true
		return out, nil
	}
	var items []types.TransactWriteItem
	seen := map[string]bool{}
	p := Pending{Weeks: map[string]int{}, Notes: map[string]int{}, Bodies: map[string]collab.Notification{}}
	var ledger cookLedger
	first := ""
	for _, d := range deltas {
		if marked[d.SourceID] || seen[d.SourceID] {
			continue // applied before (or twice in this batch)
		}
		seen[d.SourceID] = true
		if first == "" {
			first = d.SourceID
		}
		out.Applied++
		items = append(items, s.counted(TypeCookingMarker, d.At, markerTTL).MarkerIn(s.Layout.markerPK(recipeID, d), d.SourceID))
		p.RatingCount += d.RatingCount
		p.RatingSum += d.RatingSum
		if d.Week != "" {
			p.Weeks[d.Week] += d.WeekDelta
		}
		if n := d.Notify; n != nil && n.ActorID != recipe.AuthorID {
			note := *n
			note.UserID = recipe.AuthorID
			if note.Count > 0 { // folded: added up per notification, in the pending item
				// no actor: which cook is the latest depends on the order
				// the stream delivers a recipe's cookings in
				note.ActorID = ""
				p.Notes[note.NotificationID] += note.Count
				note.Count = 0
				p.Bodies[note.NotificationID] = note
			} else {
				its, err := NotificationItems([]collab.Notification{note})
				if err != nil {
					return out, err
				}
				items = append(items, put(s.Table, its[0], ""))
			}
		}
		if r := d.Recent; r != nil {
			k := RecentKey(r.UserID, r.CookDate, r.HistoryID)
			if d.Remove {
				items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: k.AV()}})
				if s.Layout.LegacyRecents {
					items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: LegacyRecentKey(recipeID, r.CookDate, r.HistoryID).AV()}})
				}
				continue
			}
			if !histories[HistoryKey(r.UserID, r.CookDate, r.HistoryID)] {
				// Removed since: its removal's record, here or still to
				// come, deletes the recent item, and an insertion read
				// after it (a Kinesis data stream may deliver one item's
				// records out of order) must not write it again.
				continue
			}
			it, err := recentItem(*r, s.Sharding.Recent)
			if err != nil {
				return out, err
			}
			items = append(items, put(s.Table, it, ""))
			ledger.add(d.SourceID, k)
		}
	}
	out.Recipe = *recipe
	if out.Applied == 0 {
		return out, nil
	}
	// A recent item's put and delete for one history in one transaction
	// would name the same key twice: keep the last.
	items = lastPerKey(items)
	n := pendingShard(first)
	if it, ok, err := ledger.item(PendingPK(recipeID, n)); err != nil {
		return out, err
	} else if ok {
		items = append(items, put(s.Table, it, ""))
	}
	if u, err := (Combiner{s.Store}).pendingAdd(recipeID, recipe.AuthorID, n, p); err != nil {
		return out, err
	} else if u != nil {
		items = append(items, types.TransactWriteItem{Update: u})
	} else {
		// Nothing to add (the deltas cancel out), so no pending record asks
		// for a drain, whose check would find a recipe deleted meanwhile:
		// check it here, or its recent items would outlive its cascade.
		items = append(items, s.recipeExists(recipeID))
	}
	return out, s.transact(ctx, items, "apply cooking counts of recipe "+recipeID)
}

// foldedNote adds n.Count to a folded notification (one per recipe and
// day), creating it with n's fields.
// Exact under redelivery: it is written in the transaction of the markers
// of the changes it counts, which a change already counted fails.
func (s Cooking) foldedNote(n collab.Notification) (*types.Update, error) {
	it, err := NotificationItems([]collab.Notification{n})
	if err != nil {
		return nil, err
	}
	k := NotificationKey(n.UserID, n.CreatedAt, n.NotificationID)
	names := map[string]string{"#count": "count", "#ttl": "ttl"}
	vals := map[string]types.AttributeValue{":n": num(n.Count), ":ttl": it[0]["ttl"]}
	set := []string{"#ttl = if_not_exists(#ttl, :ttl)"}
	for name, v := range it[0] {
		if name == "PK" || name == "SK" || name == "count" || name == "ttl" {
			continue
		}
		ph := fmt.Sprintf("a%d", len(names))
		names["#"+ph], vals[":"+ph] = name, v
		set = append(set, fmt.Sprintf("#%s = :%s", ph, ph))
	}
	slices.Sort(set)
	return &types.Update{TableName: &s.Table, Key: k.AV(),
		UpdateExpression:         aws.String("SET " + strings.Join(set, ", ") + " ADD #count :n"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals}, nil
}

// ratingUpdate sets a recipe's rating aggregate and GSI2 sort key to
// after, on the condition that it is before; absent counts may stand for 0
// when lenient (recipes written before the aggregate existed).
func (s Cooking) ratingUpdate(recipeID, createdAt string, before, after cooking.Rating, lenient bool) *types.Update {
	cond := "attribute_exists(PK) AND ratingCount = :oc AND ratingSum = :os"
	if lenient && before.RatingCount == 0 && before.RatingSum == 0 {
		cond = "attribute_exists(PK) AND (attribute_not_exists(ratingCount) OR ratingCount = :oc) AND (attribute_not_exists(ratingSum) OR ratingSum = :os)"
	}
	return &types.Update{
		TableName: &s.Table, Key: RecipeKey(recipeID).AV(),
		UpdateExpression:    aws.String("SET ratingCount = :c, ratingSum = :s, avgRating = :a, GSI2SK = :sk"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": num(after.RatingCount), ":s": num(after.RatingSum), ":a": &types.AttributeValueMemberN{Value: strconv.FormatFloat(after.AvgRating, 'f', -1, 64)},
			":sk": &types.AttributeValueMemberS{Value: cooking.RatingSortKey(after.AvgRating, createdAt, recipeID)},
			":oc": num(before.RatingCount), ":os": num(before.RatingSum),
		},
	}
}

// recentItem is a RecentCooking item, in its cook's partition, on GSI3
// RECENT#<yyyy-mm> (in one of shards write shards, chosen by its
// history's id).
func recentItem(r RecentCooking, shards int) (map[string]types.AttributeValue, error) {
	it, err := marshal(head{Key: RecentKey(r.UserID, r.CookDate, r.HistoryID), ItemType: TypeRecentCooking, Derived: true}, r)
	if err != nil {
		return nil, err
	}
	it["GSI3PK"] = &types.AttributeValueMemberS{Value: RecentIndexPK(r.CookDate, r.HistoryID, shards)}
	it["GSI3SK"] = &types.AttributeValueMemberS{Value: r.CookDate + "#" + r.HistoryID}
	return it, nil
}

// trendingWrite moves a week's trending item from old to count: written
// while the count is above 0, deleted at 0; conditioned on the old count.
// (A drain moves all of a recipe's pending counts at once, so a count never
// goes below 0: DrainPending.)
func (s Cooking) trendingWrite(recipeID, week string, old, count int) types.TransactWriteItem {
	k := TrendingKey(recipeID, week)
	cond := aws.String("attribute_not_exists(PK)")
	var names map[string]string
	var vals map[string]types.AttributeValue
	if old != 0 {
		cond, names, vals = aws.String("#count = :old"), map[string]string{"#count": "count"}, map[string]types.AttributeValue{":old": num(old)}
	}
	if count <= 0 {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: k.AV(), ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals}}
	}
	it, _ := marshal(head{Key: k, ItemType: TypeTrending, Derived: true}, Trending{RecipeID: recipeID, Week: week, Count: count})
	it["GSI3PK"] = &types.AttributeValueMemberS{Value: TrendingIndexPK(week, recipeID, s.Sharding.Trending)}
	it["GSI3SK"] = &types.AttributeValueMemberS{Value: TrendingSortKey(count, recipeID)}
	return types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: it, ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals}}
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

// lastPerKey keeps, of several writes to one key, the last.
func lastPerKey(items []types.TransactWriteItem) []types.TransactWriteItem {
	keyOf := func(it types.TransactWriteItem) Key {
		switch {
		case it.Put != nil:
			return itemKey(it.Put.Item)
		case it.Delete != nil:
			return itemKey(it.Delete.Key)
		}
		return Key{}
	}
	last := map[Key]int{}
	for i, it := range items {
		last[keyOf(it)] = i
	}
	out := items[:0:0]
	for i, it := range items {
		if last[keyOf(it)] == i {
			out = append(out, it)
		}
	}
	return out
}

// RecentIndexPK is the GSI3 partition key of a cooking's RecentCooking
// item: its month's, in the write shard of its history's id.
func RecentIndexPK(cookDate, historyID string, shards int) string {
	return shardKey(prefixRecent+cooking.Month(cookDate), historyID, shards)
}

// TrendingIndexPK is the GSI3 partition key of a recipe's Trending item of
// a week: the week's, in the write shard of the recipe's id.
func TrendingIndexPK(week, recipeID string, shards int) string {
	return shardKey(SKPrefixTrending+week, recipeID, shards)
}

// RecentCookings pages through a month's cookings, newest first (pattern
// 6: GSI3 RECENT#<yyyy-mm>).
func (s Cooking) RecentCookings(ctx context.Context, month string, p Page) ([]RecentCooking, string, error) {
	var out []RecentCooking
	next, err := s.queryShards(ctx, query{index: IndexGSI3, desc: true, page: p}, prefixRecent+month, s.Sharding.Recent, decodeInto(s.Store, &out))
	return out, next, err
}

// TrendingRecipes pages through a week's trending counts, most cooked
// first (GSI3 TRENDING#<yyyy-Www>, descending).
func (s Cooking) TrendingRecipes(ctx context.Context, week string, p Page) ([]Trending, string, error) {
	var out []Trending
	next, err := s.queryShards(ctx, query{index: IndexGSI3, desc: true, page: p}, SKPrefixTrending+week, s.Sharding.Trending, decodeInto(s.Store, &out))
	return out, next, err
}

// DeleteRecipeCascade deletes what is left of a deleted recipe's partition
// and its pending partitions (their derived items), and the recent items
// their ledgers name in its cooks' partitions; it returns how many. A
// cascade cut short is run again on the record's retry and finds the rest.
func (s Cooking) DeleteRecipeCascade(ctx context.Context, recipeID string) (int, error) {
	return s.cascade(ctx, append([]string{RecipePK(recipeID)}, pendingPKs(recipeID)...)...)
}

// SuggestionKey is a user's suggestions (one item, replaced on refresh).
func SuggestionKey(userID string) Key { return Key{UserPK(userID), "SUGGESTION#LATEST"} }

// SuggestRead is one user's suggestion inputs as SuggestInputs read them.
type SuggestRead struct {
	In cooking.SuggestInput
	// Newest is the time of the newest input (a preferences or history
	// change), "" when there is none.
	Newest string
	// Err, when set, says why the inputs could not be read.
	Err error
}

// SuggestInputs reads what cooking.Suggest needs for each of users, with
// the reads the users can share shared: each one's newest history entries
// (a consistent Query per user, up to concurrency at once), then in one
// consistent BatchGetItem every user's cooking preferences and every recipe
// the entries name, then the newest recipes of each author any of them
// liked (one Query per author, at once). Each user's input is what reading
// that user alone gives: their history's recipes and their own liked
// authors' recipes only. For n users, at most n + 1 + cooking.SuggestAuthors·n
// requests in three rounds, and fewer when they cooked the same recipes or
// like the same authors.
func (s Cooking) SuggestInputs(ctx context.Context, users []string, concurrency int) map[string]*SuggestRead {
	out := make(map[string]*SuggestRead, len(users))
	for _, u := range users {
		out[u] = &SuggestRead{In: cooking.SuggestInput{Preferences: cooking.DefaultPreferences(u), Recipes: map[string]cooking.Recipe{}}}
	}
	// ok are the users whose reads have not failed yet.
	ok := func() []string {
		var us []string
		for _, u := range users {
			if out[u].Err == nil {
				us = append(us, u)
			}
		}
		return us
	}
	// Round 1: the histories.
	each(max(concurrency, 1), users, func(_ int, u string) {
		r := out[u]
		q := query{pk: UserPK(u), skPrefix: SKPrefixCooking, desc: true, consistent: true, page: Page{Limit: cooking.SuggestHistory}}
		_, r.Err = s.queryPage(ctx, q, decodeInto(s.Store, &r.In.History))
	})
	// Round 2: preferences and the histories' recipes, in one read.
	var keys []Key
	prefsOf := map[Key]*SuggestRead{} // by key, not by the item's own userId: a stored item cannot pass as another user's
	for _, u := range ok() {
		r := out[u]
		keys = append(keys, CookingPreferencesKey(u))
		prefsOf[CookingPreferencesKey(u)] = r
		for _, h := range r.In.History {
			keys = append(keys, RecipeKey(h.RecipeID))
			r.Newest = max(r.Newest, h.UpdatedAt, h.CreatedAt)
		}
	}
	recipes := map[string]cooking.Recipe{}
	err := s.batchGet(ctx, keys, true, func(it map[string]types.AttributeValue) error {
		switch itemTypeOf(it) {
		case TypeCookingPreferences:
			var p cooking.Preferences
			if r := prefsOf[itemKey(it)]; r != nil && s.decode(it, &p) {
				p.UserID = r.In.Preferences.UserID
				r.In.Preferences = p
			}
		case TypeRecipe:
			var rc cooking.Recipe
			if s.decode(it, &rc) {
				recipes[rc.RecipeID] = rc
			}
		}
		return nil
	})
	liked := map[string][]string{}
	var authors []string
	for _, u := range ok() {
		r := out[u]
		if err != nil {
			r.Err = err
			continue
		}
		for _, h := range r.In.History {
			if rc, found := recipes[h.RecipeID]; found {
				r.In.Recipes[rc.RecipeID] = rc
			}
		}
		r.Newest = max(r.Newest, r.In.Preferences.UpdatedAt)
		liked[u] = cooking.LikedAuthors(u, r.In.History, r.In.Recipes)
		for _, a := range liked[u] {
			if !slices.Contains(authors, a) {
				authors = append(authors, a)
			}
		}
	}
	// Round 3: the liked authors' newest recipes, each author once.
	byAuthor := make([][]cooking.Recipe, len(authors))
	aerrs := make([]error, len(authors))
	each(max(concurrency, 1), authors, func(i int, a string) {
		byAuthor[i], _, aerrs[i] = s.RecipesByAuthor(ctx, a, Page{Limit: cooking.SuggestPerAuthor})
	})
	for u, as := range liked {
		r := out[u]
		for _, a := range as {
			i := slices.Index(authors, a)
			if aerrs[i] != nil {
				r.Err = aerrs[i]
				break
			}
			for _, rc := range byAuthor[i] {
				r.In.Recipes[rc.RecipeID] = rc
			}
		}
	}
	return out
}

// SuggestionsItem is the item of a user's suggestions (derived; ttl 90
// days after generatedAt).
func SuggestionsItem(sg cooking.Suggestions) (map[string]types.AttributeValue, error) {
	return marshal(head{Key: SuggestionKey(sg.UserID), ItemType: TypeSuggestion, Derived: true}, sg)
}

// GetSuggestions reads a user's live suggestions (none: an empty list).
func (s Cooking) GetSuggestions(ctx context.Context, userID string, now time.Time) (cooking.Suggestions, error) {
	sg := cooking.Suggestions{UserID: userID}
	ok, err := s.get(ctx, SuggestionKey(userID), &sg)
	if err != nil || !ok || sg.TTL <= now.Unix() {
		sg = cooking.Suggestions{UserID: userID}
	}
	if sg.Items == nil {
		sg.Items = []cooking.Suggestion{}
	}
	return sg, err
}

// DeleteSuggestions removes a user's suggestions (no inputs left).
func (s Cooking) DeleteSuggestions(ctx context.Context, userID string) error {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.Table, Key: SuggestionKey(userID).AV()})
	if err != nil {
		return fmt.Errorf("store: delete suggestions: %w", err)
	}
	return nil
}

// cascade deletes partitions' items (cascadePartition), one partition
// after another; it returns how many items it deleted.
func (s Cooking) cascade(ctx context.Context, pks ...string) (int, error) {
	total := 0
	for _, pk := range pks {
		n, err := s.cascadePartition(ctx, pk)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// cascadePartition deletes a partition's items, and first the recent items
// its ledgers name (in batches of 25; a cascade cut short is run again on
// the record's retry and finds the rest).
func (s Cooking) cascadePartition(ctx context.Context, pk string) (int, error) {
	var recents, keys []types.WriteRequest
	seen := map[Key]bool{}
	err := s.queryAll(ctx, query{pk: pk, consistent: true}, func(it map[string]types.AttributeValue) error {
		if itemTypeOf(it) == TypeCookLedger {
			var l cookLedger
			if !s.decode(it, &l) {
				return nil // kept (quarantined): the items it names are verify's to find
			}
			for _, k := range l.Keys {
				if ledgerKeyOK(k) && !seen[k] {
					seen[k] = true
					recents = append(recents, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k.AV()}})
				}
			}
		}
		keys = append(keys, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: itemKey(it).AV()}})
		return nil
	})
	if err != nil {
		return 0, err
	}
	keys = append(recents, keys...)
	for start := 0; start < len(keys); start += 25 {
		if err := s.batchWrite(ctx, keys[start:min(start+25, len(keys))]); err != nil {
			return start, err
		}
	}
	return len(keys), nil
}
