package cooking

import (
	"slices"
	"sort"
	"time"
)

// SuggestionTTL is how long a user's suggestions live (the seed's "AI
// suggestions": 90 days).
const SuggestionTTL = 90 * 24 * time.Hour

// Suggestion limits.
const (
	// MaxSuggestions is the length of a user's list.
	MaxSuggestions = 10
	// SuggestHistory is how many of the user's newest history entries the
	// rule reads.
	SuggestHistory = 100
	// SuggestAuthors is how many authors the user liked the rule looks at,
	// and SuggestPerAuthor how many of each one's newest recipes.
	SuggestAuthors   = 3
	SuggestPerAuthor = 10
	// RecentlyCooked leaves out what the user cooked within this time
	// before their newest cooking.
	RecentlyCooked = 7 * 24 * time.Hour
)

// Reasons a recipe is suggested.
const (
	ReasonCookAgain    = "cook-again"
	ReasonMoreByAuthor = "more-by-author"
)

// Suggestion is one suggested recipe.
type Suggestion struct {
	RecipeID string `json:"recipeId" dynamodbav:"recipeId"`
	Title    string `json:"title" dynamodbav:"title"`
	Method   string `json:"method" dynamodbav:"method"`
	Score    int    `json:"score" dynamodbav:"score"`
	Reason   string `json:"reason" dynamodbav:"reason"`
}

// Suggestions is a user's ranked list.
type Suggestions struct {
	UserID string       `json:"userId" dynamodbav:"userId"`
	Items  []Suggestion `json:"items" dynamodbav:"items"`
	// GeneratedAt is the time of the newest input (the newest cooking or
	// preferences change), not the clock: the list is a function of its
	// inputs.
	GeneratedAt string `json:"generatedAt" dynamodbav:"generatedAt"`
	TTL         int64  `json:"expiresAt" dynamodbav:"ttl"`
}

// SuggestInput is everything the rule reads: the user's own core items
// and the recipes they name. None of it is derived from the stream, so the
// list does not depend on the order the stream is processed in (a replay
// or a redelivery computes the same list from the same table).
type SuggestInput struct {
	Preferences Preferences
	// History is the user's newest history entries (any order).
	History []History
	// Recipes are the recipes the history names and the newest recipes of
	// the liked authors (LikedAuthors), by id; a deleted recipe is absent.
	Recipes map[string]Recipe
}

// LikedAuthors are the authors whose recipes the user rated 4 or more or
// marked favourite, most recently cooked first, at most SuggestAuthors,
// the user excluded: their newest recipes are candidates too.
func LikedAuthors(userID string, history []History, recipes map[string]Recipe) []string {
	hs := slices.Clone(history)
	sort.Slice(hs, func(i, j int) bool {
		return hs[i].CookDate > hs[j].CookDate || hs[i].CookDate == hs[j].CookDate && hs[i].HistoryID > hs[j].HistoryID
	})
	var out []string
	for _, h := range hs {
		r, ok := recipes[h.RecipeID]
		if !ok || r.AuthorID == userID || slices.Contains(out, r.AuthorID) || !(h.Rating >= 4 || h.Favorite) {
			continue
		}
		out = append(out, r.AuthorID)
		if len(out) == SuggestAuthors {
			break
		}
	}
	return out
}

// Suggest is the rule, deterministic (no model, no randomness):
//
//   - Cook again: each recipe in the user's history scores 20 × the user's
//     best rating of it (3 when never rated) + 10 if any of its cookings is
//     a favourite + 2 × the times cooked (at most 5).
//   - More by an author you liked: each recipe of a liked author
//     (LikedAuthors) the user never cooked scores 10 × the user's mean
//     rating of that author's recipes (rounded; 3 when unrated) + 5.
//   - Left out: recipes cooked within RecentlyCooked before the user's
//     newest cooking; recipes whose method is not among the favourite
//     methods (when any are set); recipes not suitable for every one of the
//     user's dietary restrictions; recipes with a disliked ingredient.
//   - Ranked by score, then newest recipe, then id; the first
//     MaxSuggestions are kept.
func Suggest(in SuggestInput) []Suggestion {
	type stat struct {
		best, times int
		fav         bool
	}
	stats := map[string]*stat{}
	newest := ""
	for _, h := range in.History {
		st := stats[h.RecipeID]
		if st == nil {
			st = &stat{}
			stats[h.RecipeID] = st
		}
		st.best = max(st.best, h.Rating)
		st.times++
		st.fav = st.fav || h.Favorite
		newest = max(newest, h.CookDate)
	}
	recent := map[string]bool{}
	if t, err := time.Parse(CookDateLayout, newest); err == nil {
		since := t.Add(-RecentlyCooked).Format(CookDateLayout)
		for _, h := range in.History {
			if h.CookDate > since {
				recent[h.RecipeID] = true
			}
		}
	}
	// The user's mean rating per author.
	sum, n := map[string]int{}, map[string]int{}
	for _, h := range in.History {
		if r, ok := in.Recipes[h.RecipeID]; ok && h.Rating > 0 {
			sum[r.AuthorID] += h.Rating
			n[r.AuthorID]++
		}
	}
	liked := LikedAuthors(in.Preferences.UserID, in.History, in.Recipes)
	p := in.Preferences
	ok := func(r Recipe) bool {
		if recent[r.RecipeID] || len(p.FavoriteMethods) > 0 && !slices.Contains(p.FavoriteMethods, r.Method) {
			return false
		}
		for _, d := range p.DietaryRestrictions {
			if !slices.Contains(r.SuitableFor, d) {
				return false
			}
		}
		for _, ing := range r.Ingredients {
			if slices.Contains(p.DislikedIngredients, ing.IngredientID) {
				return false
			}
		}
		return true
	}
	type cand struct {
		Suggestion
		createdAt string
	}
	var cs []cand
	for id, r := range in.Recipes {
		if !ok(r) {
			continue
		}
		c := cand{Suggestion: Suggestion{RecipeID: id, Title: r.Title, Method: r.Method}, createdAt: r.CreatedAt}
		if st, cooked := stats[id]; cooked {
			best := st.best
			if best == 0 {
				best = 3
			}
			c.Score, c.Reason = 20*best+2*min(st.times, 5), ReasonCookAgain
			if st.fav {
				c.Score += 10
			}
		} else if slices.Contains(liked, r.AuthorID) {
			mean := 3
			if n[r.AuthorID] > 0 {
				mean = (2*sum[r.AuthorID] + n[r.AuthorID]) / (2 * n[r.AuthorID]) // rounded half up
			}
			c.Score, c.Reason = 10*mean+5, ReasonMoreByAuthor
		} else {
			continue
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.createdAt != b.createdAt {
			return a.createdAt > b.createdAt
		}
		return a.RecipeID < b.RecipeID
	})
	out := make([]Suggestion, 0, MaxSuggestions)
	for _, c := range cs[:min(len(cs), MaxSuggestions)] {
		out = append(out, c.Suggestion)
	}
	return out
}
