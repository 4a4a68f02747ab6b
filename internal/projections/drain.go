package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Drain is what a recipe's pending item's record asks of the projector: to
// move the counts it and its siblings hold into the recipe's totals
// (store.DrainPending drains all of a recipe's pending items at once).
type Drain struct {
	RecipeID string
	// N is the record's pending item (PENDING#<recipeId>#<n>).
	N int
	// AuthorID is the recipe's author, as the item says ("": an item
	// written before it said).
	AuthorID string
	// Empty: the record's item holds no delta (a drain's own write, or the
	// item's removal): there is nothing to move.
	Empty bool
	// Raised are the weeks whose counts the record's item raises: the
	// weeks whose top 10 to check, also when the drain that moved them
	// crashed before its check and its record comes again (the drain then
	// finds nothing left to move).
	Raised []string
}

// DrainOf maps a change to its drain (false: it is not a pending item's).
// It is pure: the drain reads the item itself, so a record delivered late,
// twice or out of order moves only what is there when it runs.
func DrainOf(c stream.Change) (Drain, bool, error) {
	pk, _ := c.Keys[store.AttrPK].(*types.AttributeValueMemberS)
	if pk == nil {
		return Drain{}, false, nil
	}
	sk, _ := c.Keys[store.AttrSK].(*types.AttributeValueMemberS)
	if sk == nil || !store.IsPendingKey(pk.Value, sk.Value) {
		return Drain{}, false, nil // not a pending item (a ledger beside one)
	}
	recipeID, n, _ := store.PendingOf(pk.Value)
	d := Drain{RecipeID: recipeID, N: n}
	if c.Kind == stream.Remove || c.Kind == stream.TTLRemove {
		d.Empty = true
		return d, true, nil
	}
	if c.New == nil {
		return d, true, nil // keys only: the drain reads what there is
	}
	if a, ok := c.New[store.AttrPendingAuthor].(*types.AttributeValueMemberS); ok {
		d.AuthorID = a.Value
	}
	p, err := store.PendingFrom(c.New)
	if err != nil {
		return Drain{}, true, fmt.Errorf("pending counts of recipe %s: %w", recipeID, err)
	}
	d.Empty, d.Raised = p.Empty(), p.RaisedWeeks()
	return d, true, nil
}

// DefaultDrainEvery is the projector program's DrainEvery
// (PROJECTOR_DRAIN_EVERY): a recipe's totals are written at most once a
// second per projector. A drain costs its recipe's partition about 8 read
// units (its snapshot read, 2; its transaction's write, 2 write units of 3
// read units each); at a drain per call, as Lambda's four polls a second
// and the calls of two lanes allow, the hot recipe's partition took 30
// read units a second of drains alone: all of a partition's at a hundredth
// of AWS's limits (make load -aws-limits 0.01).
const DefaultDrainEvery = time.Second

// drainAttempts is how often a drain's requests are made before a drain
// that meets throttling is owed rather than waited for.
const drainAttempts = 2

// projectDrains drains a recipe's pending items once for a run of their
// records (the group is the recipe's), and has the weeks they raised
// checked for the top 10. rec is the run's first record in the group.
//
// A drain that meets its recipe's partition over its throughput (after
// drainAttempts tries), or comes sooner than DrainEvery after the recipe's
// last, is owed, not failed: the run's pending items are nudged in turn
// until one still holds deltas (oweDrain, store.Combiner.Nudge), so its
// record comes again and the drain runs in a later call. A recipe whose
// drains come faster than its partition takes them (the hot recipe at a
// small share of AWS's limits: a drain per call is set by the poll rate,
// not by the writes) is then drained as often as it can be, each drain
// moving all that waits, and its throttling holds up no other record of
// the call, which a failed call and its retries would.
func (b *batch) projectDrains(ctx context.Context, ds []*Drain, group, rec int) error {
	var raised []string
	todo := false
	for _, d := range ds {
		todo = todo || !d.Empty
		raised = append(raised, d.Raised...)
	}
	if !todo {
		return nil
	}
	d := ds[0]
	if !b.p.drainDue(d.RecipeID) {
		return b.owe(ctx, ds, raised, errSpaced, group, rec)
	}
	_, drains := b.p.drainStores()
	a, err := (store.Combiner{Store: drains}).DrainPending(ctx, d.RecipeID)
	raised = append(raised, a.Raised...) // a round may have moved weeks before an error
	if err != nil && ddb.Transient(err) && ctx.Err() == nil {
		return b.owe(ctx, ds, raised, err, group, rec)
	}
	if err != nil {
		return fmt.Errorf("drain the pending counts of recipe %s: %w", d.RecipeID, err)
	}
	b.p.drained(d.RecipeID)
	if a.Gone {
		return nil
	}
	b.checkTopTen(a, raised, group, rec)
	return nil
}

// checkTopTen has the weeks raised checked for a's recipe's top-10
// notification once the batch's counts are written (topTens).
func (b *batch) checkTopTen(a store.CookingApplied, raised []string, group, rec int) {
	slices.Sort(raised)
	if raised = slices.Compact(raised); len(raised) > 0 {
		a.Raised = raised
		b.mu.Lock()
		b.raised = append(b.raised, raisedWeeks{a, group, rec})
		b.mu.Unlock()
	}
}

// owe owes the drain of ds (oweDrain) and still has the weeks its records
// raised checked for the top 10: a record that comes again after its drain
// moved the counts (its top-10 check failed) finds the drain owed, and
// the nudge's record of an item that drain emptied raises nothing, so the
// check would be lost. The recipe's author is the records' (their items
// say it); only items written before they did make it read the recipe.
func (b *batch) owe(ctx context.Context, ds []*Drain, raised []string, cause error, group, rec int) error {
	if err := b.oweDrain(ctx, ds, cause); err != nil {
		return err
	}
	if len(raised) == 0 {
		return nil
	}
	for _, d := range ds {
		if d.AuthorID != "" {
			b.checkTopTen(store.CookingApplied{Recipe: cooking.Recipe{RecipeID: d.RecipeID, AuthorID: d.AuthorID}}, raised, group, rec)
			return nil
		}
	}
	cadence, _ := b.p.drainStores()
	r, err := cadence.Cooking.GetRecipe(ctx, ds[0].RecipeID)
	if errs.Is(err, errs.NotFound) {
		return nil // deleted: its cascade has its counts
	}
	if err != nil {
		return fmt.Errorf("top-10 check of recipe %s: %w", ds[0].RecipeID, err)
	}
	b.checkTopTen(store.CookingApplied{Recipe: r}, raised, group, rec)
	return nil
}

// errSpaced is why a drain is owed that came sooner than DrainEvery after
// the recipe's last.
var errSpaced = errors.New("drained less than DrainEvery ago")

// drainDue reports whether a drain of recipeID may run now: DrainEvery
// has passed since this projector's last drain of it that succeeded (one
// that failed spaces nothing, so a drain that keeps failing is retried,
// and dead-lettered in the end, as any failing record).
func (p *Projector) drainDue(recipeID string) bool {
	if p.DrainEvery <= 0 {
		return true
	}
	p.lastMu.Lock()
	defer p.lastMu.Unlock()
	last, ok := p.lastDrain[recipeID]
	return !ok || p.now().Sub(last) >= p.DrainEvery
}

// drained notes a drain of recipeID that succeeded.
func (p *Projector) drained(recipeID string) {
	if p.DrainEvery <= 0 {
		return
	}
	p.lastMu.Lock()
	defer p.lastMu.Unlock()
	if p.lastDrain == nil || len(p.lastDrain) >= seenSetMax {
		p.lastDrain = map[string]time.Time{} // a hint: forgetting drains one sooner
	}
	p.lastDrain[recipeID] = p.now()
}

func (p *Projector) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// oweDrain nudges the pending items of ds that held deltas, in turn, until
// one still holds deltas after its nudge, so that the recipe's drain runs
// in a later call (see projectDrains); the weeks they raised are checked
// then, with the drain. One such item is enough: a drain reads all of the
// recipe's pending items, so its nudge's record asks for every delta
// written before it. Nudging each item that asked would write up to
// store.PendingShards items a call while the drain is owed (a hot recipe's
// items ask in every call), each record of which comes again to be owed
// again until DrainEvery has passed. An item nudged empty (a drain moved
// its deltas since its record: that drain took them) or gone (its recipe
// deleted: the cascade takes its counts) asks for nothing, and the next is
// nudged. A nudge that fails fails the records, as the drain's error.
func (b *batch) oweDrain(ctx context.Context, ds []*Drain, cause error) error {
	cadence, _ := b.p.drainStores()
	tried := map[int]bool{}
	for _, d := range ds {
		if d.Empty || tried[d.N] {
			continue
		}
		tried[d.N] = true
		asks, err := (store.Combiner{Store: cadence}).Nudge(ctx, d.RecipeID, d.N)
		if err != nil {
			return fmt.Errorf("drain the pending counts of recipe %s: %w (and owing it: %w)", d.RecipeID, cause, err)
		}
		if asks {
			break
		}
	}
	b.p.owed.Add(1)
	b.p.logger().Debug("projector: drain owed", "recipe", ds[0].RecipeID, "err", cause)
	return nil
}
