package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
)

// The combiner of a recipe's totals (docs/scale.md, "The hot recipe's
// partition"): Combiner. A projector call of a recipe used to write its
// totals (the rating aggregate, a Trending item per week, the author's
// folded notifications) itself, so the recipe's partition and its author's
// took one write per call, and with a mapping's many lanes at scale about
// one per change. Now a call adds its changes' deltas to one of the
// recipe's PendingShards pending items (PENDING#<recipeId>#<n> / PENDING),
// in the transaction of their markers, so each is counted exactly once
// (Cooking.ApplyCooking, through pendingAdd). The pending item's own stream
// record asks the projector to drain the recipe (DrainPending). A pending
// key's records come in one lane, in order, so a recipe's totals are
// written at most PendingShards times per round of those lanes' calls
// (Lambda polls a shard about four times a second), however many cookings
// there are.
//
// The invariants it rests on, each held by a test:
//   - Counted once. A delta is added in the transaction of its change's
//     marker, so a change delivered again adds nothing
//     (TestApplyCookingWritesTheRecipeOncePerCall, the replay suites).
//   - A snapshot read. A drain reads the recipe and its eight pending items
//     with one TransactGetItems, so it sees a change and a later one in
//     another pending item together or not at all; a BatchGetItem may
//     answer one key in a later round than another
//     (TestDrainReadsASnapshot).
//   - Deltas are ADDed, the drain's negated. Changes added between a drain's
//     read and its write stay on the pending item for the next drain, and a
//     negative delta (a removal counted in another pending item than its
//     cooking) is moved with the rest of the snapshot
//     (TestDrainLeavesWhatCameMeanwhile, TestDrainNeverBelowZero).
//   - drainSeq conditions. Each take is conditioned on the pending item's
//     drain sequence as read, and the totals on what was read, so two
//     drains of one recipe at once (its pending items' records in two
//     lanes, with a ParallelizationFactor above 1) never move the same
//     deltas: the loser reads again (TestConcurrentDrainsMoveEachDeltaOnce).
//   - One drain per recipe per call. The projector keys a pending item's
//     records by recipe, so a call drains a recipe once however many of its
//     pending records it holds (TestProjectorDrainsOncePerCall).
//   - Never clamped, never stranded. A week or a rating whose total would
//     go below 0 stays pending (TestDrainNeverClamps); what a transaction's
//     80 weeks and notifications leave is drained by the same call
//     (TestDrainPastItsCap), since the record of a pending item a drain
//     emptied asks for nothing; weeks stuck below 0 take none of the 80
//     places (TestDrainCapSkipsStuckWeeks).
//   - The drain of the last change leaves nothing behind: it reads the
//     items after that change.
//   - Owed, never lost. A drain that meets its recipe's partition over its
//     throughput is owed: the projector nudges the pending items that
//     asked (Nudge) before the records are passed, until one of them still
//     holds deltas, and that one's record comes again; a drain reads all of
//     a recipe's items, so that record asks for every delta written before
//     it. An item nudged empty (a drain moved its deltas after its record)
//     gives a record that asks for nothing, and the next is nudged
//     (TestProjectorOwesAThrottledDrain, TestOwedDrainNudgesPastAnEmptiedItem).

// Pending items of a recipe's counts.
const (
	TypeCookingPending = "CookingPending"
	prefixPending      = "PENDING#"
	skPending          = "PENDING"
	// PendingShards is how many pending items a recipe's counts are
	// combined in: the partitions a hot recipe's per-call writes spread over,
	// and the bound on the drains of its totals per round of polls.
	PendingShards = 8
	// maxDrained bounds the weeks and notifications one drain moves (a
	// transaction holds 100 items: besides them, up to PendingShards
	// pending items and the recipe); the rest stay for the drain that its
	// write's own records ask for.
	maxDrained = 80
	// maxRemoved bounds the attributes at 0 one drain removes from a
	// pending item (an expression is at most 4 KB); the rest go with the
	// next ones.
	maxRemoved = 16
)

// Attribute names of a pending item: the rating's deltas, a week's
// (w#<yyyy-Www>), a folded notification's count (n#<id>) and its fields
// (nb#<id>, JSON, kept while it has a count), and the drains' sequence.
const (
	attrPendWeek  = "w#"
	attrPendNote  = "n#"
	attrPendBody  = "nb#"
	attrDrainSeq  = "drainSeq"
	attrPendCount = "ratingCount"
	attrPendSum   = "ratingSum"
)

// PendingPK is pending partition n of a recipe: its pending counts and the
// ledgers of the calls that added to them.
func PendingPK(recipeID string, n int) string {
	return prefixPending + recipeID + "#" + strconv.Itoa(n)
}

// pendingPKs are a recipe's pending partitions.
func pendingPKs(recipeID string) []string {
	out := make([]string, PendingShards)
	for n := range out {
		out[n] = PendingPK(recipeID, n)
	}
	return out
}

// PendingKey is a recipe's pending item n.
func PendingKey(recipeID string, n int) Key { return Key{PendingPK(recipeID, n), skPending} }

// IsPendingKey reports whether a key is a recipe's pending item's (not a
// ledger's beside it): what the projector drains, and its mapping keeps.
func IsPendingKey(pk, sk string) bool {
	_, _, ok := PendingOf(pk)
	return ok && sk == skPending
}

// PendingOf parses a pending item's partition key (false: it is none).
func PendingOf(pk string) (recipeID string, n int, ok bool) {
	rest, found := strings.CutPrefix(pk, prefixPending)
	i := strings.LastIndexByte(rest, '#')
	if !found || i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 || n >= PendingShards || strconv.Itoa(n) != rest[i+1:] {
		return "", 0, false
	}
	return rest[:i], n, true
}

// pendingShard is the pending item a call's deltas go to: picked by its
// first change, so a redelivered call picks the same one (it need not: a
// change is counted once wherever its delta went).
//
// It takes the hash's high bits (multiply and shift): FNV-1a's low bits
// depend only on the low bits of the bytes hashed, so ids that differ in a
// letter with the same low bits ("…a" and "…i") would share a shard.
func pendingShard(sourceID string) int {
	h := fnv.New32a()
	h.Write([]byte(sourceID))
	return int(uint64(h.Sum32()) * PendingShards >> 32)
}

// Pending is what a pending item holds: deltas counted and not yet in the
// recipe's totals.
type Pending struct {
	RatingCount, RatingSum int
	// Weeks are Trending counts' deltas by ISO week; Notes the folded
	// notifications' counts by id, with their fields in Bodies.
	Weeks  map[string]int
	Notes  map[string]int
	Bodies map[string]collab.Notification
	seq    int
}

// Empty reports whether the item holds no delta.
func (p Pending) Empty() bool {
	if p.RatingCount != 0 || p.RatingSum != 0 {
		return false
	}
	for _, v := range p.Weeks {
		if v != 0 {
			return false
		}
	}
	for _, v := range p.Notes {
		if v != 0 {
			return false
		}
	}
	return true
}

// RaisedWeeks are the weeks whose counts the item raises.
func (p Pending) RaisedWeeks() []string {
	var out []string
	for w, v := range p.Weeks {
		if v > 0 {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// PendingFrom reads a pending item (a stored one, or a stream record's
// image); an attribute it cannot read is an error.
func PendingFrom(it map[string]types.AttributeValue) (Pending, error) {
	p := Pending{Weeks: map[string]int{}, Notes: map[string]int{}, Bodies: map[string]collab.Notification{}}
	num := func(name string) (int, error) {
		v, ok := it[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0, fmt.Errorf("store: pending item: %s is not a number", name)
		}
		n, err := strconv.Atoi(v.Value)
		if err != nil {
			return 0, fmt.Errorf("store: pending item: %s: %w", name, err)
		}
		return n, nil
	}
	for name, v := range it {
		var err error
		switch {
		case name == attrPendCount:
			p.RatingCount, err = num(name)
		case name == attrPendSum:
			p.RatingSum, err = num(name)
		case name == attrDrainSeq:
			p.seq, err = num(name)
		case strings.HasPrefix(name, attrPendWeek):
			if _, werr := cooking.WeekStart(name[len(attrPendWeek):]); werr != nil {
				return p, fmt.Errorf("store: pending item: week %q: %w", name, werr)
			}
			p.Weeks[name[len(attrPendWeek):]], err = num(name)
		case strings.HasPrefix(name, attrPendNote):
			p.Notes[name[len(attrPendNote):]], err = num(name)
		case strings.HasPrefix(name, attrPendBody):
			s, ok := v.(*types.AttributeValueMemberS)
			var n collab.Notification
			if !ok || json.Unmarshal([]byte(s.Value), &n) != nil || n.NotificationID != name[len(attrPendBody):] {
				return p, fmt.Errorf("store: pending item: %s is not its notification", name)
			}
			p.Bodies[n.NotificationID] = n
		}
		if err != nil {
			return p, err
		}
	}
	for id, v := range p.Notes {
		if _, ok := p.Bodies[id]; !ok && v != 0 {
			return p, fmt.Errorf("store: pending item: notification %s has a count and no fields", id)
		}
	}
	return p, nil
}

// pendingAdd adds a call's deltas to a pending item: an ADD per delta (they
// commute with each other and with a drain's), the notifications' fields
// set where not there yet. Nil when there is nothing to add.
func (s Combiner) pendingAdd(recipeID, authorID string, n int, p Pending) (*types.Update, error) {
	names := map[string]string{"#au": AttrPendingAuthor}
	vals := map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: TypeCookingPending},
		":d": &types.AttributeValueMemberBOOL{Value: true}, ":r": &types.AttributeValueMemberS{Value: recipeID},
		":au": &types.AttributeValueMemberS{Value: authorID}}
	var adds []string
	set := []string{"itemType = :t", "derived = :d", "recipeId = :r", "#au = :au"}
	add := func(attr string, v int) {
		if v == 0 {
			return
		}
		ph := fmt.Sprintf("a%d", len(names))
		names["#"+ph], vals[":"+ph] = attr, num(v)
		adds = append(adds, fmt.Sprintf("#%s :%s", ph, ph))
	}
	add(attrPendCount, p.RatingCount)
	add(attrPendSum, p.RatingSum)
	for _, w := range slices.Sorted(maps.Keys(p.Weeks)) {
		add(attrPendWeek+w, p.Weeks[w])
	}
	for _, id := range slices.Sorted(maps.Keys(p.Notes)) {
		if p.Notes[id] == 0 {
			continue
		}
		add(attrPendNote+id, p.Notes[id])
		body, err := json.Marshal(p.Bodies[id])
		if err != nil {
			return nil, fmt.Errorf("store: pending notification %s: %w", id, err)
		}
		ph := fmt.Sprintf("b%d", len(names))
		names["#"+ph], vals[":"+ph] = attrPendBody+id, &types.AttributeValueMemberS{Value: string(body)}
		set = append(set, fmt.Sprintf("#%s = if_not_exists(#%s, :%s)", ph, ph, ph))
	}
	if len(adds) == 0 {
		return nil, nil
	}
	return &types.Update{TableName: &s.Table, Key: PendingKey(recipeID, n).AV(),
		UpdateExpression:         aws.String("SET " + strings.Join(set, ", ") + " ADD " + strings.Join(adds, ", ")),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals}, nil
}

// DrainPending moves what a recipe's pending items hold into its totals:
// it reads the recipe and all its pending items as one snapshot
// (TransactGetItems: a BatchGetItem reads each item on its own, and may
// leave some unprocessed to be read later, after changes the others did not
// see), then the weeks' Trending items, and in one transaction writes the
// rating aggregate and the weeks' counts, each conditioned on what it read,
// adds the author's folded notifications, and takes what it moved off each
// pending item (conditioned on that item's drain sequence, so two drains
// never move the same deltas). Changes added meanwhile stay for the next
// drain (their own record asks for it). Draining every pending item of one
// snapshot at once keeps the totals from going below 0: a history entry's
// insert is counted before its removal (one item's records come in order),
// so the totals and the pending items together never count less than
// nothing, though one pending item alone may. It never clamps: a week or a
// rating whose total would go below 0 is not moved, and stays pending until
// what it lacks is counted. What one transaction cannot hold (maxDrained
// weeks and notifications) is drained by the next rounds of the same call.
//
// A pending item that cannot be read is left and reported (the error), the
// rest drained. A recipe that is gone has its pending partitions' cascade
// (a call that added to them after the recipe's cascade ran); a recipe item
// that cannot be read is an error, and nothing is deleted. Raised are the
// weeks whose counts the drain raised; Applied is 1 when it moved anything.
func (s Combiner) DrainPending(ctx context.Context, recipeID string) (CookingApplied, error) {
	var out CookingApplied
	for {
		var more bool
		a, err := untilWon(ctx, "recipe "+recipeID+" kept changing under its drain", func() (CookingApplied, error) {
			a, m, err := s.tryDrain(ctx, recipeID)
			more = m
			return a, err
		})
		out.Gone, out.Recipe = a.Gone, a.Recipe
		out.Applied = max(out.Applied, a.Applied)
		for _, w := range a.Raised {
			if !slices.Contains(out.Raised, w) {
				out.Raised = append(out.Raised, w)
			}
		}
		// Past the cap, the rest is drained now: its pending items' own
		// records may have asked already (a drain that empties one item
		// writes a record that asks for nothing).
		if err != nil || !more || a.Applied == 0 {
			return out, err
		}
	}
}

// attrNudged counts the nudges of a pending item (Nudge).
const attrNudged = "nudged"

// AttrPendingAuthor is a pending item's recipe's author (a recipe's
// author never changes): a projector that owes a drain reads it from the
// record to check the top 10 without a read of the recipe's partition.
const AttrPendingAuthor = "authorId"

// Nudge asks again for a drain of recipe's pending item n that could not
// run now (its recipe's partition was over its throughput): it adds 1 to
// the item's nudge count, so the item's stream record comes again and the
// projector drains it then, as it would have. The drain is owed, not lost:
// the nudge is written before the record that asked is passed, and a
// crash between them delivers that record again. It reports whether the
// nudged item holds deltas: only then does its record ask for a drain (an
// item a drain emptied meanwhile gives a record that asks for nothing).
// An item that is gone (its recipe deleted meanwhile) is not nudged:
// false. The nudge count is not a delta: PendingFrom ignores it, and a
// drain leaves it.
func (s Combiner) Nudge(ctx context.Context, recipeID string, n int) (bool, error) {
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.Table, Key: PendingKey(recipeID, n).AV(),
		UpdateExpression:          aws.String("ADD #n :one"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#n": attrNudged},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
		ReturnValues:              types.ReturnValueAllNew})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: nudge %s: %w", PendingPK(recipeID, n), err)
	}
	p, err := PendingFrom(out.Attributes)
	if err != nil {
		return false, nil // unreadable: its record fails in the drain, loudly; nudge the next
	}
	return !p.Empty(), nil
}

// pendingRead is a pending item as a drain read it.
type pendingRead struct {
	n int
	p Pending
}

// tryDrain is one round of DrainPending; more says it left weeks or
// notifications past its cap.
func (s Combiner) tryDrain(ctx context.Context, recipeID string) (out CookingApplied, more bool, err error) {
	var recipe *cooking.Recipe
	recipeBad := false
	var pending []pendingRead
	var bad []error
	keys := []Key{RecipeKey(recipeID)}
	for _, pk := range pendingPKs(recipeID) {
		keys = append(keys, Key{pk, skPending})
	}
	err = s.snapshot(ctx, keys, func(it map[string]types.AttributeValue) error {
		k := itemKey(it)
		switch {
		case k == RecipeKey(recipeID):
			var r cooking.Recipe
			if itemTypeOf(it) == TypeRecipe && s.decode(it, &r) {
				recipe = &r
			} else {
				recipeBad = true
			}
		case k.SK == skPending:
			id, n, ok := PendingOf(k.PK)
			if !ok || id != recipeID {
				return nil
			}
			p, err := PendingFrom(it)
			if err != nil {
				bad = append(bad, fmt.Errorf("%s: %w", k.PK, err))
				return nil
			}
			pending = append(pending, pendingRead{n, p})
		}
		return nil
	})
	if errors.Is(err, errLostRace) {
		return out, false, err
	}
	if err != nil {
		return out, false, fmt.Errorf("store: read recipe %s's pending counts: %w", recipeID, err)
	}
	if recipeBad {
		return out, false, fmt.Errorf("store: recipe %s cannot be read: its pending counts wait", recipeID)
	}
	if recipe == nil {
		out.Gone = true
		_, err := s.Cooking.cascade(ctx, pendingPKs(recipeID)...)
		return out, false, err
	}
	out.Recipe = *recipe
	reportBad := func() error {
		if len(bad) == 0 {
			return nil
		}
		return fmt.Errorf("store: recipe %s has pending counts that cannot be read (left; fix or delete them): %w", recipeID, errors.Join(bad...))
	}
	// What this drain moves: the ratings, and up to maxDrained weeks and
	// notifications, summed over the pending items (the rest next time).
	var total Pending
	total.Weeks, total.Notes, total.Bodies = map[string]int{}, map[string]int{}, map[string]collab.Notification{}
	for _, r := range pending {
		total.RatingCount += r.p.RatingCount
		total.RatingSum += r.p.RatingSum
		for w, v := range r.p.Weeks {
			total.Weeks[w] += v
		}
		for id, v := range r.p.Notes {
			total.Notes[id] += v
			if b, ok := r.p.Bodies[id]; ok {
				total.Bodies[id] = b
			}
		}
	}
	holds := func(has func(Pending) bool) bool {
		return slices.ContainsFunc(pending, func(r pendingRead) bool { return has(r.p) })
	}
	var cand []string // the weeks some pending item holds a delta of
	for _, w := range slices.Sorted(maps.Keys(total.Weeks)) {
		if holds(func(p Pending) bool { return p.Weeks[w] != 0 }) {
			cand = append(cand, w)
		}
	}
	// The weeks it moves: up to maxDrained whose total does not go below
	// 0, read maxDrained at a time so that weeks stuck below 0 (they wait
	// for what they lack) never take the places of weeks that can move.
	counts := map[string]int{}
	var plan drainPlan
	for start := 0; start < len(cand) && !more; start += maxDrained {
		chunk := cand[start:min(start+maxDrained, len(cand))]
		trending := make([]Key, 0, len(chunk))
		for _, w := range chunk {
			trending = append(trending, TrendingKey(recipeID, w))
		}
		if err := s.batchGet(ctx, trending, true, func(it map[string]types.AttributeValue) error {
			var t Trending
			if itemTypeOf(it) == TypeTrending && s.decode(it, &t) {
				counts[t.Week] = t.Count
			}
			return nil
		}); err != nil {
			return out, false, fmt.Errorf("store: read recipe %s's weeks: %w", recipeID, err)
		}
		for _, w := range chunk {
			if counts[w]+total.Weeks[w] < 0 {
				continue
			}
			if len(plan.weeks) == maxDrained {
				more = true
				break
			}
			plan.weeks = append(plan.weeks, w)
		}
	}
	plan.rating = holds(func(p Pending) bool { return p.RatingCount != 0 || p.RatingSum != 0 })
	before := recipe.Rating
	after := before.Add(total.RatingCount, total.RatingSum)
	if after.RatingCount < 0 || after.RatingSum < 0 {
		plan.rating, after = false, before // stays pending: never clamped
	}
	for _, id := range slices.Sorted(maps.Keys(total.Notes)) {
		if !holds(func(p Pending) bool { return p.Notes[id] != 0 }) {
			continue
		}
		if len(plan.weeks)+len(plan.notes) >= maxDrained {
			more = true
			break
		}
		plan.notes = append(plan.notes, id)
	}
	var takes []types.TransactWriteItem
	for _, r := range pending {
		if r.p.moves(plan) {
			takes = append(takes, types.TransactWriteItem{Update: s.pendingTake(recipeID, r.n, r.p, plan)})
		}
	}
	if len(takes) == 0 {
		return out, false, reportBad() // drained before; the zeros go with the next drain
	}
	items := takes
	if after != before {
		items = append(items, types.TransactWriteItem{Update: s.Cooking.ratingUpdate(recipeID, recipe.CreatedAt, before, after, false)})
	} else {
		items = append(items, s.Cooking.recipeExists(recipeID))
	}
	for _, w := range plan.weeks {
		if total.Weeks[w] != 0 {
			items = append(items, s.Cooking.trendingWrite(recipeID, w, counts[w], counts[w]+total.Weeks[w]))
		}
		if total.Weeks[w] > 0 {
			out.Raised = append(out.Raised, w)
		}
	}
	for _, id := range plan.notes {
		note, ok := total.Bodies[id]
		if !ok || total.Notes[id] == 0 {
			continue
		}
		note.Count = total.Notes[id]
		note.UserID = recipe.AuthorID
		u, err := s.Cooking.foldedNote(note)
		if err != nil {
			return out, false, err
		}
		items = append(items, types.TransactWriteItem{Update: u})
	}
	if err := s.Cooking.transact(ctx, items, "drain recipe "+recipeID+"'s pending counts"); err != nil {
		return out, false, err
	}
	out.Recipe.Rating = after
	out.Applied = 1
	return out, more, reportBad()
}

// drainPlan is what one drain moves: the rating's deltas or not, and which
// weeks and notifications.
type drainPlan struct {
	rating       bool
	weeks, notes []string
}

// moves reports whether a drain of plan moves anything of p.
func (p Pending) moves(plan drainPlan) bool {
	if plan.rating && (p.RatingCount != 0 || p.RatingSum != 0) {
		return true
	}
	for _, w := range plan.weeks {
		if p.Weeks[w] != 0 {
			return true
		}
	}
	for _, id := range plan.notes {
		if p.Notes[id] != 0 {
			return true
		}
	}
	return false
}

// pendingTake takes what a drain read off a pending item: ADD the negated
// deltas it moves (changes added since then stay), the next drain sequence
// on the condition that the item still has the one read, and REMOVE what an
// earlier drain took to 0 and nothing has added to since (conditioned on
// that).
func (s Combiner) pendingTake(recipeID string, n int, p Pending, plan drainPlan) *types.Update {
	names := map[string]string{"#seq": attrDrainSeq}
	vals := map[string]types.AttributeValue{":next": num(p.seq + 1)}
	cond := []string{"attribute_not_exists(#seq)"}
	if p.seq != 0 {
		cond = []string{"#seq = :seq"}
		vals[":seq"] = num(p.seq)
	}
	var adds, removes []string
	name := func(attr string) string {
		ph := fmt.Sprintf("#a%d", len(names))
		names[ph] = attr
		return ph
	}
	neg := func(attr string, v int) {
		if v != 0 {
			ph := name(attr)
			vals[":"+ph[1:]] = num(-v)
			adds = append(adds, ph+" :"+ph[1:])
		}
	}
	if plan.rating {
		neg(attrPendCount, p.RatingCount)
		neg(attrPendSum, p.RatingSum)
	}
	for _, w := range plan.weeks {
		neg(attrPendWeek+w, p.Weeks[w])
	}
	for _, id := range plan.notes {
		neg(attrPendNote+id, p.Notes[id])
	}
	for _, w := range slices.Sorted(maps.Keys(p.Weeks)) {
		if p.Weeks[w] == 0 && len(removes) < maxRemoved {
			ph := name(attrPendWeek + w)
			removes = append(removes, ph)
			cond = append(cond, ph+" = :zero")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(p.Bodies)) {
		if p.Notes[id] == 0 && len(removes) < maxRemoved {
			c, b := name(attrPendNote+id), name(attrPendBody+id)
			removes = append(removes, c, b)
			cond = append(cond, "(attribute_not_exists("+c+") OR "+c+" = :zero)")
		}
	}
	if len(removes) > 0 {
		vals[":zero"] = num(0)
	}
	expr := "SET #seq = :next"
	if len(adds) > 0 {
		expr += " ADD " + strings.Join(adds, ", ")
	}
	if len(removes) > 0 {
		expr += " REMOVE " + strings.Join(removes, ", ")
	}
	return &types.Update{TableName: &s.Table, Key: PendingKey(recipeID, n).AV(), UpdateExpression: aws.String(expr),
		ConditionExpression: aws.String(strings.Join(cond, " AND ")), ExpressionAttributeNames: names, ExpressionAttributeValues: vals}
}
