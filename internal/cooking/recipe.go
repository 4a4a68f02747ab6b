package cooking

import (
	"fmt"
	"time"
)

// RecipeIngredient is one line of a recipe: an existing ingredient, how
// much of it and in what unit.
type RecipeIngredient struct {
	IngredientID string  `json:"ingredientId" dynamodbav:"ingredientId"`
	Quantity     float64 `json:"quantity" dynamodbav:"quantity"`
	Unit         string  `json:"unit" dynamodbav:"unit"`
}

// Recipe is a recipe. Its rating fields are derived: the projector keeps
// them current from the cooking histories' ratings (never the writer).
type Recipe struct {
	RecipeID    string             `json:"recipeId" dynamodbav:"recipeId"`
	AuthorID    string             `json:"authorId" dynamodbav:"authorId"`
	Title       string             `json:"title" dynamodbav:"title"`
	Description string             `json:"description,omitempty" dynamodbav:"description,omitempty"`
	Method      string             `json:"method" dynamodbav:"method"`
	Ingredients []RecipeIngredient `json:"ingredients" dynamodbav:"ingredients"`
	Steps       []string           `json:"steps" dynamodbav:"steps"`
	Servings    int                `json:"servings" dynamodbav:"servings"`
	PrepMinutes int                `json:"prepMinutes" dynamodbav:"prepMinutes"`
	CookMinutes int                `json:"cookMinutes" dynamodbav:"cookMinutes"`
	// SuitableFor lists the dietary restrictions the recipe keeps to.
	SuitableFor []string `json:"suitableFor" dynamodbav:"suitableFor"`
	CreatedAt   string   `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt   string   `json:"updatedAt" dynamodbav:"updatedAt"`

	Rating
}

// Rating is a recipe's rating aggregate over the ratings of the cooking
// histories that name it: exact, kept by the projector.
type Rating struct {
	RatingCount int     `json:"ratingCount" dynamodbav:"ratingCount"`
	RatingSum   int     `json:"ratingSum" dynamodbav:"ratingSum"`
	AvgRating   float64 `json:"avgRating" dynamodbav:"avgRating"`
}

// Add returns the aggregate with count and sum moved by the deltas and the
// average recomputed (0 with no ratings), rounded to 2 decimals.
func (r Rating) Add(dCount, dSum int) Rating {
	r.RatingCount += dCount
	r.RatingSum += dSum
	r.AvgRating = 0
	if r.RatingCount > 0 {
		r.AvgRating = float64(int64(float64(r.RatingSum)*100/float64(r.RatingCount)+0.5)) / 100
	}
	return r
}

// RatingSortKey is a recipe's GSI2 sort key: the average with a fixed
// width (0.00–5.00), so string order is numeric order, then the creation
// time (pattern 3: best rated first, then newest), then the recipe's id,
// so that no two recipes share one (a list read from several write shards
// resumes after exactly its last item).
func RatingSortKey(avg float64, createdAt, recipeID string) string {
	return fmt.Sprintf("RATING#%.2f#%s#%s", avg, createdAt, recipeID)
}

// Rating limits of a cooking history.
const (
	MinRating = 1
	MaxRating = 5
)

// History is one time a user cooked a recipe. Its key holds the cook date,
// which never changes; rating, notes and favourite can.
type History struct {
	UserID    string `json:"userId" dynamodbav:"userId"`
	HistoryID string `json:"historyId" dynamodbav:"historyId"`
	RecipeID  string `json:"recipeId" dynamodbav:"recipeId"`
	// RecipeTitle is the recipe's title when it was cooked.
	RecipeTitle string `json:"recipeTitle" dynamodbav:"recipeTitle"`
	CookDate    string `json:"cookDate" dynamodbav:"cookDate"`
	// Rating is 1–5; 0 (absent) when not rated.
	Rating    int    `json:"rating,omitempty" dynamodbav:"rating,omitempty"`
	Notes     string `json:"notes,omitempty" dynamodbav:"notes,omitempty"`
	Favorite  bool   `json:"favorite" dynamodbav:"favorite"`
	SessionID string `json:"sessionId,omitempty" dynamodbav:"sessionId,omitempty"`
	CreatedAt string `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt string `json:"updatedAt" dynamodbav:"updatedAt"`
}

// CookDateLayout is the stored form of a cook date: UTC, to the second.
const CookDateLayout = "2006-01-02T15:04:05Z"

// The years a cook date, a month or a week may have.
const (
	MinYear = 1900
	MaxYear = 9999
)

// ParseCookDate reads a cook date: an RFC 3339 date-time (any offset) or a
// plain date (noon UTC), in the years MinYear to MaxYear (UTC). It
// returns the stored form.
func ParseCookDate(s string) (string, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d, derr := time.Parse(time.DateOnly, s)
		if derr != nil {
			return "", fmt.Errorf("must be an RFC 3339 date-time (2026-01-20T15:30:00Z) or a date (2026-01-20)")
		}
		t = d.Add(12 * time.Hour)
	}
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return "", fmt.Errorf("must be a date in the years %d to %d", MinYear, MaxYear)
	}
	return t.UTC().Format(CookDateLayout), nil
}

// ValidMonth reports whether s is a month, yyyy-mm, in the years MinYear
// to MaxYear.
func ValidMonth(s string) bool {
	t, err := time.Parse("2006-01", s)
	return err == nil && len(s) == 7 && t.Year() >= MinYear && t.Year() <= MaxYear
}

// ValidWeek reports whether s is an ISO 8601 week that exists, yyyy-Www,
// in the years MinYear to MaxYear: W53 only in the years that have one
// (2026 does, 2025 does not).
func ValidWeek(s string) bool {
	var y, w int
	if len(s) != 8 || s[4:6] != "-W" {
		return false
	}
	if _, err := fmt.Sscanf(s, "%4d-W%2d", &y, &w); err != nil || y < MinYear || y > MaxYear || w < 1 {
		return false
	}
	_, weeks := time.Date(y, 12, 28, 0, 0, 0, 0, time.UTC).ISOWeek() // 28 December is in the year's last week
	return w <= weeks
}

// Month is a cook date's month, yyyy-mm (its RECENT# partition).
func Month(cookDate string) string {
	if len(cookDate) < 7 {
		return ""
	}
	return cookDate[:7]
}

// Week is a cook date's ISO 8601 week, yyyy-Www: the year is the ISO
// year, so 2025-12-29 is in 2026-W01.
func Week(cookDate string) (string, error) {
	t, err := time.Parse(CookDateLayout, cookDate)
	if err != nil {
		return "", fmt.Errorf("cooking: cook date %q: %w", cookDate, err)
	}
	y, w := t.ISOWeek()
	return fmt.Sprintf("%04d-W%02d", y, w), nil
}

// SessionTTL is how long a cooking session lives (the seed's temporary
// sessions).
const SessionTTL = 24 * time.Hour

// Session states.
const (
	SessionActive    = "active"
	SessionCompleted = "completed"
	SessionAbandoned = "abandoned"
)

// Session is a user cooking a recipe step by step. Completing it records
// one cooking history entry (HistoryID), however often it is completed.
type Session struct {
	UserID      string `json:"userId" dynamodbav:"userId"`
	SessionID   string `json:"sessionId" dynamodbav:"sessionId"`
	RecipeID    string `json:"recipeId" dynamodbav:"recipeId"`
	RecipeTitle string `json:"recipeTitle" dynamodbav:"recipeTitle"`
	StepCount   int    `json:"stepCount" dynamodbav:"stepCount"`
	// CurrentStep is 0-based.
	CurrentStep int    `json:"currentStep" dynamodbav:"currentStep"`
	Status      string `json:"status" dynamodbav:"status"`
	StartedAt   string `json:"startedAt" dynamodbav:"startedAt"`
	UpdatedAt   string `json:"updatedAt" dynamodbav:"updatedAt"`
	HistoryID   string `json:"historyId,omitempty" dynamodbav:"historyId,omitempty"`
	CookDate    string `json:"cookDate,omitempty" dynamodbav:"cookDate,omitempty"`
	TTL         int64  `json:"expiresAt" dynamodbav:"ttl"`
}

// WeekStart is the Monday 00:00 UTC that starts an ISO week (yyyy-Www).
func WeekStart(week string) (time.Time, error) {
	var y, w int
	if _, err := fmt.Sscanf(week, "%04d-W%02d", &y, &w); err != nil || w < 1 || w > 53 {
		return time.Time{}, fmt.Errorf("cooking: %q is not an ISO week", week)
	}
	// 4 January is always in week 1.
	jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	return monday.AddDate(0, 0, 7*(w-1)), nil
}

// TopTen is how many of a week's recipes make its top list.
const TopTen = 10
