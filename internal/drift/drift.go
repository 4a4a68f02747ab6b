package drift

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/room"
)

// Kinds of items Check compares (derived items, and access items, which
// follow the core items they are written with).
const (
	KindReactionCounts = "reaction counts"
	KindRecipeRating   = "recipe rating"
	KindTrending       = "trending"
	KindRecentCooking  = "recent cooking"
)

// Kinds lists them in report order.
var Kinds = []string{KindReactionCounts, KindRecipeRating, KindTrending, KindRecentCooking, KindRoomCombined, KindRoomCompatibility, KindRoomActivity, KindRoomCascade, KindAccess}

// Recipe is what a recipe item holds of its derived rating.
type Recipe struct {
	RecipeID  string
	CreatedAt string
	Rating    cooking.Rating
	// SortKey is its GSI2 sort key as stored.
	SortKey string
}

// Recent is a stored RecentCooking item.
type Recent struct {
	RecipeID, HistoryID, UserID, CookDate, Title string
}

// RecipeWeek is a Trending item's key.
type RecipeWeek struct{ RecipeID, Week string }

// Facts are what a scan of the table found: the core items that define the
// derived ones, and the derived items as stored.
type Facts struct {
	// Reactions counts the Reaction items by comment and emoji.
	Reactions map[string]map[string]int
	// Counts are the stored COUNTS items by comment (the entries as stored,
	// zeros included).
	Counts map[string]map[string]int
	// Recipes are the recipe items by id.
	Recipes map[string]Recipe
	// Histories are the cooking history entries.
	Histories []cooking.History
	// Recents are the stored RecentCooking items, Trending the stored
	// Trending counts.
	Recents  []Recent
	Trending map[RecipeWeek]int
	// Rooms are the search rooms by id (room.go).
	Rooms map[string]*Room
	// Snapshot is the rooms' derivation (projections.Snapshot); without it
	// rooms are not compared.
	Snapshot SnapshotFunc
	// ExpectActivities says the scan collected the feed entries the core
	// items call for (Room.Expected); ActivitiesSince is the oldest
	// CreatedAt still required (older ones have expired: room.ActivityTTL).
	ExpectActivities bool
	ActivitiesSince  string
	// Members are the access the core items give (a Resource item's
	// owner, each Collaborator item); Grants the stored access items, by
	// their keys; Unreadable the resources ("goal g1") whose Resource item
	// could not be decoded: their access is not compared.
	Members, Grants []Access
	Unreadable      map[string]bool
	// Scanned counts the items read.
	Scanned int64
}

// NewFacts returns empty Facts ready to be filled.
func NewFacts() *Facts {
	return &Facts{Reactions: map[string]map[string]int{}, Counts: map[string]map[string]int{},
		Recipes: map[string]Recipe{}, Trending: map[RecipeWeek]int{}, Rooms: map[string]*Room{}, Unreadable: map[string]bool{}}
}

// Merge adds o's facts to f (a scan's segments each fill their own).
func (f *Facts) Merge(o *Facts) {
	for c, m := range o.Reactions {
		if f.Reactions[c] == nil {
			f.Reactions[c] = map[string]int{}
		}
		for e, n := range m {
			f.Reactions[c][e] += n
		}
	}
	maps.Copy(f.Counts, o.Counts)
	maps.Copy(f.Recipes, o.Recipes)
	maps.Copy(f.Trending, o.Trending)
	f.Histories = append(f.Histories, o.Histories...)
	f.Recents = append(f.Recents, o.Recents...)
	f.Members = append(f.Members, o.Members...)
	f.Grants = append(f.Grants, o.Grants...)
	maps.Copy(f.Unreadable, o.Unreadable)
	f.mergeRooms(o)
	f.ExpectActivities = f.ExpectActivities || o.ExpectActivities
	f.Scanned += o.Scanned
}

// Difference is one derived item that is not what the core items say.
// Want and Got say it for people ("absent" when there is no item); the
// other fields are what a repair writes.
type Difference struct {
	Kind string `json:"kind"`
	// Key names the derived item: comment, recipe, recipe and week, or
	// recipe and history entry.
	Key  string `json:"key"`
	Want string `json:"want"`
	Got  string `json:"got"`

	// CommentID, Counts: the comment's counts as they must be (nonzero
	// entries) and as stored (for the repair's condition).
	CommentID string         `json:"-"`
	Counts    map[string]int `json:"-"`
	OldCounts map[string]int `json:"-"`
	// Recipe: the recipe's rating and sort key as they must be, and the
	// rating as stored.
	Recipe    *Recipe         `json:"-"`
	OldRating *cooking.Rating `json:"-"`
	// Week: the count as it must be (0: no item) and as stored.
	Week            *RecipeWeek `json:"-"`
	Count, OldCount int         `json:"-"`
	// Recent: the item as it must be, or (Stray) one to delete.
	Recent *Recent `json:"-"`
	Stray  bool    `json:"-"`
	// Combined, Compatibility: the room's newest version as it must be
	// (written at its key); Delete: a deleted room's leftover items.
	Combined      *room.CombinedVersion      `json:"-"`
	Compatibility *room.CompatibilityVersion `json:"-"`
	Delete        []Key                      `json:"-"`
	// Activity is a missing feed entry, to be written.
	Activity *room.Activity `json:"-"`
	// Access: the access item as it must be, or (Stray) one to delete.
	Access *Access `json:"-"`
}

// ID identifies a difference across scans (Recheck).
func (d Difference) ID() string { return d.Kind + "|" + d.Key }

// Check compares the stored derived items with what the core items say.
// The differences come sorted by kind (in Kinds order), then key.
func Check(f *Facts) []Difference {
	var out []Difference
	out = append(out, reactionCounts(f)...)
	out = append(out, recipes(f)...)
	out = append(out, rooms(f)...)
	out = append(out, resourceAccess(f)...)
	rank := map[string]int{}
	for i, k := range Kinds {
		rank[k] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return rank[out[i].Kind] < rank[out[j].Kind]
		}
		return out[i].Key < out[j].Key
	})
	return out
}

func nonzero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range m {
		if n != 0 {
			out[k] = n
		}
	}
	return out
}

// countsText is a counts map in a stable form: "👍 2, 🎉 1" by emoji.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func reactionCounts(f *Facts) []Difference {
	var out []Difference
	comments := map[string]bool{}
	for c := range f.Reactions {
		comments[c] = true
	}
	for c := range f.Counts {
		comments[c] = true
	}
	for c := range comments {
		want, got := nonzero(f.Reactions[c]), nonzero(f.Counts[c])
		if maps.Equal(want, got) {
			continue
		}
		gotText := countsText(got)
		if _, ok := f.Counts[c]; !ok {
			gotText = "absent"
		}
		out = append(out, Difference{Kind: KindReactionCounts, Key: "comment " + c, Want: countsText(want), Got: gotText,
			CommentID: c, Counts: want, OldCounts: f.Counts[c]})
	}
	return out
}

func ratingText(r cooking.Rating, sortKey string) string {
	return fmt.Sprintf("%d ratings, sum %d, average %.2f, GSI2SK %s", r.RatingCount, r.RatingSum, r.AvgRating, sortKey)
}

func recipes(f *Facts) []Difference {
	var out []Difference
	ratings := map[string]cooking.Rating{}
	weeks := map[RecipeWeek]int{}
	recents := map[string]Recent{}
	for _, h := range f.Histories {
		if _, ok := f.Recipes[h.RecipeID]; !ok {
			continue // deleted: its derived items went with it
		}
		if h.Rating > 0 {
			ratings[h.RecipeID] = ratings[h.RecipeID].Add(1, h.Rating)
		}
		if w, err := cooking.Week(h.CookDate); err == nil {
			weeks[RecipeWeek{h.RecipeID, w}]++
		}
		recents[h.RecipeID+"/"+h.HistoryID] = Recent{RecipeID: h.RecipeID, HistoryID: h.HistoryID, UserID: h.UserID, CookDate: h.CookDate, Title: h.RecipeTitle}
	}
	for id, r := range f.Recipes {
		want := ratings[id].Add(0, 0)
		wantKey := cooking.RatingSortKey(want.AvgRating, r.CreatedAt, id)
		if want == r.Rating && wantKey == r.SortKey {
			continue
		}
		fixed := r
		fixed.Rating, fixed.SortKey = want, wantKey
		old := r.Rating
		out = append(out, Difference{Kind: KindRecipeRating, Key: "recipe " + id, Want: ratingText(want, wantKey), Got: ratingText(r.Rating, r.SortKey),
			Recipe: &fixed, OldRating: &old})
	}
	all := map[RecipeWeek]bool{}
	for k := range weeks {
		all[k] = true
	}
	for k := range f.Trending {
		all[k] = true
	}
	for k := range all {
		want, got := weeks[k], f.Trending[k]
		if want == got {
			continue
		}
		gotText := fmt.Sprint(got)
		if _, ok := f.Trending[k]; !ok {
			gotText = "absent"
		}
		wantText := fmt.Sprint(want)
		if want == 0 {
			wantText = "absent"
		}
		wk := k
		out = append(out, Difference{Kind: KindTrending, Key: "recipe " + k.RecipeID + " week " + k.Week, Want: wantText, Got: gotText,
			Week: &wk, Count: want, OldCount: got})
	}
	stored := map[string]Recent{}
	for _, r := range f.Recents {
		stored[r.RecipeID+"/"+r.HistoryID] = r
	}
	for k, want := range recents {
		got, ok := stored[k]
		if ok && got == want {
			continue
		}
		gotText := "absent"
		if ok {
			gotText = recentText(got)
		}
		w := want
		out = append(out, Difference{Kind: KindRecentCooking, Key: "recipe " + want.RecipeID + " history " + want.HistoryID,
			Want: recentText(want), Got: gotText, Recent: &w})
	}
	for k, got := range stored {
		if _, ok := recents[k]; ok {
			continue
		}
		g := got
		out = append(out, Difference{Kind: KindRecentCooking, Key: "recipe " + got.RecipeID + " history " + got.HistoryID,
			Want: "absent", Got: recentText(got), Recent: &g, Stray: true})
	}
	return out
}

func recentText(r Recent) string {
	return fmt.Sprintf("user %s cooked %q at %s", r.UserID, r.Title, r.CookDate)
}

// Recheck keeps the differences of later that earlier found too: a
// difference seen once can be a change still in the stream, one seen in
// two scans some time apart is not (unless the projector is behind by that
// long). The differences are later's.
func Recheck(earlier, later []Difference) []Difference {
	seen := map[string]bool{}
	for _, d := range earlier {
		seen[d.ID()] = true
	}
	var out []Difference
	for _, d := range later {
		if seen[d.ID()] {
			out = append(out, d)
		}
	}
	return out
}

// Summary counts differences by kind, with up to examples of each.
type Summary struct {
	Kind     string       `json:"kind"`
	Count    int          `json:"count"`
	Examples []Difference `json:"examples"`
}

// Summarize groups diffs by kind (in Kinds order), keeping up to examples
// of each.
func Summarize(diffs []Difference, examples int) []Summary {
	by := map[string]*Summary{}
	for _, d := range diffs {
		s := by[d.Kind]
		if s == nil {
			s = &Summary{Kind: d.Kind}
			by[d.Kind] = s
		}
		s.Count++
		if len(s.Examples) < examples {
			s.Examples = append(s.Examples, d)
		}
	}
	var out []Summary
	for _, k := range Kinds {
		if s := by[k]; s != nil {
			out = append(out, *s)
		}
	}
	return out
}
