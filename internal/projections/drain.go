package projections

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Drain is what a recipe's pending item's record asks of the projector: to
// move the counts it and its siblings hold into the recipe's totals
// (store.DrainPending drains all of a recipe's pending items at once).
type Drain struct {
	RecipeID string
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
	recipeID, _, _ := store.PendingOf(pk.Value)
	d := Drain{RecipeID: recipeID}
	if c.Kind == stream.Remove || c.Kind == stream.TTLRemove {
		d.Empty = true
		return d, true, nil
	}
	if c.New == nil {
		return d, true, nil // keys only: the drain reads what there is
	}
	p, err := store.PendingFrom(c.New)
	if err != nil {
		return Drain{}, true, fmt.Errorf("pending counts of recipe %s: %w", recipeID, err)
	}
	d.Empty, d.Raised = p.Empty(), p.RaisedWeeks()
	return d, true, nil
}

// projectDrains drains a recipe's pending items once for a run of their
// records (the group is the recipe's), and has the weeks they raised
// checked for the top 10. rec is the run's first record in the group.
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
	a, err := (store.Combiner{Store: b.p.Store}).DrainPending(ctx, d.RecipeID)
	if err != nil {
		return fmt.Errorf("drain the pending counts of recipe %s: %w", d.RecipeID, err)
	}
	if a.Gone {
		return nil
	}
	raised = append(raised, a.Raised...)
	slices.Sort(raised)
	if raised = slices.Compact(raised); len(raised) > 0 {
		a.Raised = raised
		b.mu.Lock()
		b.raised = append(b.raised, raisedWeeks{a, group, rec})
		b.mu.Unlock()
	}
	return nil
}
