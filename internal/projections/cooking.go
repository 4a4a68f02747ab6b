package projections

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// CookingChange is what one change asks of the projector for cooking
// (seed 003): a history entry's delta to its recipe's derived state, a
// deleted recipe's cascade, a user's suggestions to refresh.
type CookingChange struct {
	RecipeID string
	// Delta, when set, moves the recipe's recent items, trending counts and
	// rating aggregate (exactly once, by its SourceID).
	Delta *store.CookingDelta
	// DeleteRecipe asks for the recipe partition's cascade.
	DeleteRecipe bool
	// SuggestFor, when set, asks for that user's suggestions again.
	SuggestFor string
}

// key groups a cooking change with its recipe's other changes, or (a
// preferences change) with the user's.
func (c CookingChange) key() string {
	if c.RecipeID != "" {
		return store.RecipePK(c.RecipeID)
	}
	return store.UserPK(c.SuggestFor)
}

// CookingOf maps a change to its cooking meaning (false: none). It is
// pure: the delta's marker is the record's eventID, its recent item's key
// comes from the history entry.
//
//   - A history entry inserted: its recent item (written while the entry
//     exists: Cooking.ApplyCooking reads it), +1 on the cook date's ISO
//     week, its rating (if any) added to the recipe's; suggestions again.
//   - Changed: the rating's difference (added, changed or removed); a
//     change of favourite also refreshes the suggestions; notes alone ask
//     for nothing.
//   - Removed: the recent item deleted, −1 on the week, its rating taken
//     out; suggestions again.
//   - A recipe removed: its partition's derived items deleted.
//   - Cooking preferences written: suggestions again.
func CookingOf(c stream.Change) (CookingChange, bool, error) {
	if c.Derived() {
		return CookingChange{}, false, nil
	}
	removed := c.Kind == stream.Remove || c.Kind == stream.TTLRemove
	switch c.ItemType() {
	case store.TypeRecipe:
		if !removed {
			return CookingChange{}, false, nil
		}
		var r cooking.Recipe
		if err := c.DecodeOld(&r); err != nil {
			return CookingChange{}, false, err
		}
		return CookingChange{RecipeID: r.RecipeID, DeleteRecipe: true}, true, nil
	case store.TypeCookingPreferences:
		if removed {
			return CookingChange{}, false, nil
		}
		var p cooking.Preferences
		if err := c.DecodeNew(&p); err != nil {
			return CookingChange{}, false, err
		}
		return CookingChange{SuggestFor: p.UserID}, true, nil
	case store.TypeCookingHistory:
		var h, old cooking.History
		d := &store.CookingDelta{SourceID: c.EventID, At: c.At}
		switch {
		case c.Kind == stream.Insert:
			if err := c.DecodeNew(&h); err != nil {
				return CookingChange{}, false, err
			}
			week, err := cooking.Week(h.CookDate)
			if err != nil {
				return CookingChange{}, false, err
			}
			d.Recent = &store.RecentCooking{RecipeID: h.RecipeID, HistoryID: h.HistoryID, UserID: h.UserID, CookDate: h.CookDate, Title: h.RecipeTitle}
			d.Week, d.WeekDelta = week, +1
			if h.Rating > 0 {
				d.RatingCount, d.RatingSum = 1, h.Rating
			}
			d.Notify = cookedNote(c.EventID, h)
		case removed:
			if err := c.DecodeOld(&h); err != nil {
				return CookingChange{}, false, err
			}
			week, err := cooking.Week(h.CookDate)
			if err != nil {
				return CookingChange{}, false, err
			}
			d.Recent = &store.RecentCooking{RecipeID: h.RecipeID, HistoryID: h.HistoryID, UserID: h.UserID, CookDate: h.CookDate, Title: h.RecipeTitle}
			d.Remove = true
			d.Week, d.WeekDelta = week, -1
			if h.Rating > 0 {
				d.RatingCount, d.RatingSum = -1, -h.Rating
			}
		default: // modified
			if err := c.DecodeNew(&h); err != nil {
				return CookingChange{}, false, err
			}
			if err := c.DecodeOld(&old); err != nil {
				return CookingChange{}, false, err
			}
			if old.Rating == h.Rating {
				if old.Favorite != h.Favorite {
					return CookingChange{SuggestFor: h.UserID}, true, nil
				}
				return CookingChange{}, false, nil
			}
			d.RatingCount = rated(h.Rating) - rated(old.Rating)
			d.RatingSum = h.Rating - old.Rating
			if h.Rating > 0 {
				d.Notify = foldedNote(c.EventID, collab.NotifyRecipeRated, "rated-", h, h.UpdatedAt)
			}
		}
		d.Cook = h.UserID // the marker's partition: the cook's, not the recipe's
		return CookingChange{RecipeID: h.RecipeID, Delta: d, SuggestFor: h.UserID}, true, nil
	}
	return CookingChange{}, false, nil
}

// recipeNote is the author's notification of a history change (the
// author's id is filled in by the store, which reads the recipe); its id
// comes from the change, so a replay rewrites the same one.
func recipeNote(eventID, typ string, h cooking.History, at string) *collab.Notification {
	n := &collab.Notification{NotificationID: "cook-" + eventID, Type: typ, CreatedAt: at, ActorID: h.UserID,
		ResourceType: collab.ResourceRecipe, ResourceID: h.RecipeID, Rating: h.Rating}
	if t, err := store.ParseTimestamp(at); err == nil {
		n.TTL = t.Add(collab.NotificationTTL).Unix()
	}
	return n
}

// cookedNote is the author's notification of a cooking, folded: one per
// recipe and day (UTC), its id and date the day's, counting the cookings
// (the store adds each once, with its marker; it keeps no actor, as which
// cook is the latest depends on the order of delivery).
// A cooking notification per cooking would put every cooking of a popular
// recipe on its author's partition, and nobody reads 400 a second.
func cookedNote(eventID string, h cooking.History) *collab.Notification {
	return foldedNote(eventID, collab.NotifyRecipeCooked, "cooked-", h, h.CreatedAt)
}

// foldedNote is a notification of type typ folded per recipe and day of at
// (UTC): id <prefix><recipeId>-<yyyy-mm-dd>, dated the day, counting the
// changes (recipe-cooked: cookings; recipe-rated: ratings given or
// changed), with no actor and no rating.
func foldedNote(eventID, typ, prefix string, h cooking.History, at string) *collab.Notification {
	n := recipeNote(eventID, typ, h, at)
	t, err := store.ParseTimestamp(at)
	if err != nil {
		return n // a time the store could not read: one per change, as before
	}
	day := t.UTC().Truncate(24 * time.Hour)
	n.NotificationID = prefix + h.RecipeID + "-" + day.Format("2006-01-02")
	n.CreatedAt = day.Format(time.RFC3339)
	n.Count, n.Rating = 1, 0
	n.TTL = day.Add(collab.NotificationTTL).Unix()
	return n
}

func rated(r int) int {
	if r > 0 {
		return 1
	}
	return 0
}

// projectCooking handles a run of a group's cooking records (one
// recipe's, or one user's preferences): the deltas in one ApplyCooking, a
// deleted recipe's cascade. rec is the run's first record in the group, the
// one a failed top-10 check fails. (Suggestions are refreshed beside the
// groups: suggestAll.)
func (b *batch) projectCooking(ctx context.Context, recs []*CookingChange, group, rec int) error {
	var recipeID string
	var deltas []store.CookingDelta
	for _, c := range recs {
		switch {
		case c.DeleteRecipe:
			if len(deltas) > 0 {
				if _, err := b.p.Store.Cooking.ApplyCooking(ctx, recipeID, deltas, countMarkerTTL); err != nil {
					return fmt.Errorf("cooking counts of recipe %s: %w", recipeID, err)
				}
				deltas = nil
			}
			n, err := b.p.Store.Cooking.DeleteRecipeCascade(ctx, c.RecipeID)
			if err != nil {
				return fmt.Errorf("cascade of recipe %s: %w", c.RecipeID, err)
			}
			b.p.logger().Info("projector: recipe deleted", "recipe", c.RecipeID, "itemsDeleted", n)
		case c.Delta != nil:
			recipeID = c.RecipeID
			deltas = append(deltas, *c.Delta)
		}
	}
	if len(deltas) > 0 {
		// The totals move when the pending item's record is drained
		// (drain.go).
		if _, err := b.p.Store.Cooking.ApplyCooking(ctx, recipeID, deltas, countMarkerTTL); err != nil {
			return fmt.Errorf("cooking counts of recipe %s: %w", recipeID, err)
		}
	}
	return nil
}

// raisedWeeks is a recipe's weeks whose counts a group raised, and the
// group's record to fail if the top-10 check cannot be made.
type raisedWeeks struct {
	a          store.CookingApplied
	group, rec int
}

// topTens checks, once the whole batch's counts are written, whether the
// recipes whose weekly counts it raised are in those weeks' top 10 (so a
// batch's order among recipes does not matter). A recipe in it gets its
// author's notification, dated the week's Monday with an id from the
// recipe and the week, so it is one per recipe and week however often the
// recipe climbs. The notifications already stored are read first
// (Collab.NotificationsMissing: half a read unit each, on the authors'
// partitions); only a week with a raised recipe whose notification is not
// stored is queried (one Query of its top, GSI3, descending, however many
// of its recipes the batch raised), and only those are written, in shared
// batch writes. Before, every drain that raised a recipe queried the week's
// key and wrote the notification again: the week's key and the hot
// recipe's author took one each per drain. Whether a recipe is in the top
// 10 depends on the other recipes' counts when it is read: unlike every
// other derived item, this one depends on how far the stream had been
// processed. A failed read or write fails the record that raised the
// count.
func (b *batch) topTens(ctx context.Context) []failure {
	var fails []failure
	failAll := func(rs []raisedWeeks, err error) {
		for _, r := range rs {
			fails = append(fails, failure{r.group, r.rec, fmt.Errorf("top-10 notification: %w", err)})
		}
	}
	// Each raised recipe's notification for each raised week, if it is in
	// the week's top 10; those already stored need no query of the top 10
	// (the week's GSI3 key, which every recipe's raise would read).
	var cands []collab.Notification
	var asked []raisedWeeks
	for _, r := range b.raised {
		for _, w := range r.a.Raised {
			n, err := topTenNote(r.a.Recipe, w)
			if err != nil {
				failAll([]raisedWeeks{r}, err)
				continue
			}
			cands, asked = append(cands, n), append(asked, r)
		}
	}
	if len(cands) == 0 {
		return fails
	}
	cadence, _ := b.p.drainStores() // a check per call that raised a week
	missing, err := cadence.Collab.NotificationsMissing(ctx, cands)
	if err != nil {
		failAll(asked, err)
		return fails
	}
	unstored := map[[2]string]bool{}
	for _, n := range missing {
		unstored[[2]string{n.UserID, n.NotificationID}] = true
	}
	tops := map[string][]store.Trending{}
	topErr := map[string]error{}
	var notes []collab.Notification
	var of []raisedWeeks
	for i, n := range cands {
		if !unstored[[2]string{n.UserID, n.NotificationID}] {
			continue
		}
		top, read := tops[n.Week]
		if !read && topErr[n.Week] == nil {
			top, _, err = cadence.Cooking.TrendingRecipes(ctx, n.Week, store.Page{Limit: cooking.TopTen})
			if err != nil {
				topErr[n.Week] = fmt.Errorf("top of %s: %w", n.Week, err)
			}
			tops[n.Week] = top
		}
		if err := topErr[n.Week]; err != nil {
			failAll([]raisedWeeks{asked[i]}, err)
			continue
		}
		if slices.ContainsFunc(top, func(t store.Trending) bool { return t.RecipeID == n.ResourceID }) {
			notes, of = append(notes, n), append(of, asked[i])
		}
	}
	items, err := store.NotificationItems(notes)
	if err != nil {
		failAll(of, err)
		return fails
	}
	for i, err := range cadence.PutEach(ctx, items) {
		if err != nil {
			fails = append(fails, failure{of[i].group, of[i].rec, fmt.Errorf("top-10 notification: %w", err)})
		}
	}
	return fails
}

// topTenNote is the notification of recipe rc's being in week's top 10:
// dated the week's Monday, with an id from the recipe and the week.
func topTenNote(rc cooking.Recipe, week string) (collab.Notification, error) {
	start, err := cooking.WeekStart(week)
	if err != nil {
		return collab.Notification{}, err
	}
	return collab.Notification{UserID: rc.AuthorID, NotificationID: "top10-" + week + "-" + rc.RecipeID, Type: collab.NotifyRecipeTop10,
		CreatedAt: store.Timestamp(start), ResourceType: collab.ResourceRecipe, ResourceID: rc.RecipeID, Week: week,
		TTL: start.Add(7*24*time.Hour + collab.NotificationTTL).Unix()}, nil
}

// suggestions are the users whose suggestions the batch's changes ask
// for, each with the first record that asked (by group and position, as
// stream.Keyed.Run groups them).
func (b *batch) suggestions(groups []stream.Group) map[string][2]int {
	users := map[string][2]int{}
	for _, g := range groups {
		for i, r := range g.Records {
			m := b.meaning[r.Change.SequenceNumber]
			if m.cooking == nil || m.cooking.SuggestFor == "" {
				continue
			}
			if _, ok := users[m.cooking.SuggestFor]; !ok {
				users[m.cooking.SuggestFor] = [2]int{g.Index, i}
			}
		}
	}
	return users
}

// suggestAll refreshes the suggestions of the users the batch's changes
// asked for — each once, their inputs read together (Store.SuggestInputs:
// the reads several users need are made once), and the new lists in shared
// batch writes. The list is computed from core items only
// (Store.SuggestInputs), which the change is already in when its record
// arrives, so it is the same whichever order the stream is processed in and
// needs nothing the batch's groups write: it runs beside them. A failed
// refresh fails the first record that asked for it (a refresh for a record
// that its group then fails is done again with it: harmless).
func (b *batch) suggestAll(ctx context.Context, users map[string][2]int) []failure {
	var ids []string
	for u := range users {
		ids = append(ids, u)
	}
	slices.Sort(ids)
	read := b.p.Store.Cooking.SuggestInputs(ctx, ids, suggestConcurrency)
	var puts []map[string]types.AttributeValue
	var of []string
	for _, u := range ids {
		r := read[u]
		if r.Err != nil {
			continue
		}
		var item map[string]types.AttributeValue
		if item, r.Err = suggestionsOf(u, r.In, r.Newest); r.Err == nil && item == nil {
			r.Err = b.p.Store.Cooking.DeleteSuggestions(ctx, u)
		}
		if item != nil {
			puts, of = append(puts, item), append(of, u)
		}
	}
	for i, err := range b.p.Store.PutEach(ctx, puts) {
		read[of[i]].Err = err
	}
	var fails []failure
	for _, u := range ids {
		if err := read[u].Err; err != nil {
			at := users[u]
			fails = append(fails, failure{at[0], at[1], fmt.Errorf("suggestions of %s: %w", u, err)})
		}
	}
	return fails
}

// suggestConcurrency bounds the histories (and the authors' recipes) a
// batch's suggestion refresh reads at once.
const suggestConcurrency = 8

// suggestionsOf computes a user's suggestions item from its inputs; nil
// when there are none (no history, no preferences).
func suggestionsOf(userID string, in cooking.SuggestInput, newest string) (map[string]types.AttributeValue, error) {
	if newest == "" {
		return nil, nil
	}
	sg := cooking.Suggestions{UserID: userID, Items: cooking.Suggest(in), GeneratedAt: newest}
	if t, err := time.Parse(store.TimeLayout, newest); err == nil {
		sg.TTL = t.Add(cooking.SuggestionTTL).Unix()
	}
	return store.SuggestionsItem(sg)
}
