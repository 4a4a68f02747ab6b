package events

import "reflect"

// Cooking events (seed 003).

// SourceCooking is the cooking domain's source.
const SourceCooking = "dynastream.cooking"

// IngredientCreated: a user added a master ingredient.
type IngredientCreated struct {
	IngredientID   string `json:"ingredientId"`
	Name           string `json:"name"`
	NormalizedName string `json:"normalizedName"`
	CreatedAt      string `json:"createdAt"`
}

func (e IngredientCreated) occurred() string { return e.CreatedAt }

// RecipeCreated: a user wrote a recipe.
type RecipeCreated struct {
	RecipeID  string `json:"recipeId"`
	AuthorID  string `json:"authorId"`
	Title     string `json:"title"`
	Method    string `json:"method"`
	CreatedAt string `json:"createdAt"`
}

func (e RecipeCreated) occurred() string { return e.CreatedAt }

// RecipeUpdated: the author changed a recipe.
type RecipeUpdated struct {
	RecipeID  string `json:"recipeId"`
	AuthorID  string `json:"authorId"`
	Title     string `json:"title"`
	Method    string `json:"method"`
	UpdatedAt string `json:"updatedAt"`
}

func (e RecipeUpdated) occurred() string { return e.UpdatedAt }

// RecipeDeleted: the author deleted a recipe.
type RecipeDeleted struct {
	RecipeID string `json:"recipeId"`
	AuthorID string `json:"authorId"`
}

// RecipeRatingChanged: the projector moved a recipe's rating aggregate.
type RecipeRatingChanged struct {
	RecipeID    string  `json:"recipeId"`
	RatingCount int     `json:"ratingCount"`
	AvgRating   float64 `json:"avgRating"`
}

// RecipeCooked: a user recorded cooking a recipe.
type RecipeCooked struct {
	UserID    string `json:"userId"`
	HistoryID string `json:"historyId"`
	RecipeID  string `json:"recipeId"`
	CookDate  string `json:"cookDate"`
	Rating    int    `json:"rating,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	CreatedAt string `json:"createdAt"`
}

func (e RecipeCooked) occurred() string { return e.CreatedAt }

// CookingRated: a user added, changed or removed (to 0) the rating of a
// cooking.
type CookingRated struct {
	UserID    string `json:"userId"`
	HistoryID string `json:"historyId"`
	RecipeID  string `json:"recipeId"`
	From      int    `json:"from"`
	To        int    `json:"to"`
	UpdatedAt string `json:"updatedAt"`
}

func (e CookingRated) occurred() string { return e.UpdatedAt }

// CookingFavoriteChanged: a user marked a cooking favourite, or unmarked it.
type CookingFavoriteChanged struct {
	UserID    string `json:"userId"`
	HistoryID string `json:"historyId"`
	RecipeID  string `json:"recipeId"`
	Favorite  bool   `json:"favorite"`
	UpdatedAt string `json:"updatedAt"`
}

func (e CookingFavoriteChanged) occurred() string { return e.UpdatedAt }

// CookingHistoryDeleted: a user deleted a cooking from their history.
type CookingHistoryDeleted struct {
	UserID    string `json:"userId"`
	HistoryID string `json:"historyId"`
	RecipeID  string `json:"recipeId"`
	CookDate  string `json:"cookDate"`
}

// CookingPreferencesUpdated: a user replaced their cooking preferences.
type CookingPreferencesUpdated struct {
	UserID              string   `json:"userId"`
	FavoriteMethods     []string `json:"favoriteMethods"`
	DietaryRestrictions []string `json:"dietaryRestrictions"`
	UpdatedAt           string   `json:"updatedAt"`
}

func (e CookingPreferencesUpdated) occurred() string { return e.UpdatedAt }

// recipeAuthorFields are the fields of a recipe its author writes; a
// change of only the others (the projector's rating fields) is no update.
var recipeAuthorFields = []string{"title", "description", "method", "ingredients", "steps", "servings", "prepMinutes", "cookMinutes", "suitableFor"}

func init() {
	const at = "2026-01-02T15:04:05.000Z"
	for _, d := range []Definition{
		{Name: "IngredientCreated", Source: SourceCooking, Doc: "A user added a master ingredient; its normalized name is unique.",
			Example: IngredientCreated{"01K…", "Thịt gà", "thit-ga", at}},
		{Name: "RecipeCreated", Source: SourceCooking, Doc: "A user wrote a recipe.",
			Example: RecipeCreated{"01K…", "lan", "Phở gà", "boil", at}},
		{Name: "RecipeUpdated", Source: SourceCooking, Doc: "The author changed a recipe (not sent for the projector's rating updates).",
			Example: RecipeUpdated{"01K…", "lan", "Phở gà", "simmer", at}},
		{Name: "RecipeDeleted", Source: SourceCooking, Doc: "The author deleted a recipe.",
			Example: RecipeDeleted{"01K…", "lan"}},
		{Name: "RecipeRatingChanged", Source: SourceCooking, Doc: "The projector moved a recipe's exact rating aggregate (a rating was added, changed or removed).",
			Example: RecipeRatingChanged{"01K…", 12, 4.25}},
		{Name: "RecipeCooked", Source: SourceCooking, Doc: "A user recorded cooking a recipe (directly or by completing a session).",
			Example: RecipeCooked{"an", "01K…", "01K…", "2026-01-02T18:00:00Z", 5, "", at}},
		{Name: "CookingRated", Source: SourceCooking, Doc: "A user added, changed or removed (to 0) the rating of one of their cookings.",
			Example: CookingRated{"an", "01K…", "01K…", 3, 5, at}},
		{Name: "CookingFavoriteChanged", Source: SourceCooking, Doc: "A user marked one of their cookings favourite, or unmarked it.",
			Example: CookingFavoriteChanged{"an", "01K…", "01K…", true, at}},
		{Name: "CookingHistoryDeleted", Source: SourceCooking, Doc: "A user deleted a cooking from their history.",
			Example: CookingHistoryDeleted{"an", "01K…", "01K…", "2026-01-02T18:00:00Z"}},
		{Name: "CookingPreferencesUpdated", Source: SourceCooking, Doc: "A user replaced their cooking preferences (disliked ingredients are not disclosed).",
			Example: CookingPreferencesUpdated{"an", []string{"steam"}, []string{"halal"}, at}},
	} {
		define(d)
	}
	register("Ingredient", func(c Change) ([]any, error) {
		if c.Kind != Insert {
			return nil, nil
		}
		return one[IngredientCreated](c.New)
	})
	register("IngredientNameLookup", nil) // internal to the uniqueness rule
	register("Recipe", recipeEvents)
	register("CookingHistory", historyEvents)
	register("CookingHistoryRef", nil) // internal: finds a history entry by id
	register("CookingSession", nil)    // temporary; its completion is a RecipeCooked
	register("CookingPreferences", func(c Change) ([]any, error) {
		if c.Kind == Remove || c.Kind == TTLRemove {
			return nil, nil
		}
		return one[CookingPreferencesUpdated](c.New)
	})
	register("RecentCooking", nil)      // derived from RecipeCooked
	register("Trending", nil)           // derived counts; queried, not announced
	register("CookingCountMarker", nil) // internal to exact counting
	register("CookLedger", nil)         // internal: a recipe's cascade finds its recent items by it
	register("CookingPending", nil)     // internal: a recipe's counts on their way to its totals
	register("Suggestion", nil)         // per user, derived
}

func recipeEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		return one[RecipeCreated](c.New)
	case Remove:
		return one[RecipeDeleted](c.Old)
	case Modify:
		var out []any
		for _, k := range recipeAuthorFields {
			if !reflect.DeepEqual(c.Old[k], c.New[k]) {
				ev, err := one[RecipeUpdated](c.New)
				if err != nil {
					return nil, err
				}
				out = append(out, ev...)
				break
			}
		}
		if !reflect.DeepEqual(c.Old["ratingCount"], c.New["ratingCount"]) || !reflect.DeepEqual(c.Old["ratingSum"], c.New["ratingSum"]) {
			ev, err := one[RecipeRatingChanged](c.New)
			if err != nil {
				return nil, err
			}
			out = append(out, ev...)
		}
		return out, nil
	}
	return nil, nil
}

func historyEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		return one[RecipeCooked](c.New)
	case Remove, TTLRemove:
		return one[CookingHistoryDeleted](c.Old)
	case Modify:
		var out []any
		num := func(m map[string]any, k string) int { f, _ := m[k].(float64); return int(f) }
		if o, n := num(c.Old, "rating"), num(c.New, "rating"); o != n {
			out = append(out, CookingRated{str(c.New, "userId"), str(c.New, "historyId"), str(c.New, "recipeId"), o, n, str(c.New, "updatedAt")})
		}
		if o, n := c.Old["favorite"] == true, c.New["favorite"] == true; o != n {
			out = append(out, CookingFavoriteChanged{str(c.New, "userId"), str(c.New, "historyId"), str(c.New, "recipeId"), n, str(c.New, "updatedAt")})
		}
		return out, nil
	}
	return nil, nil
}
