package cooking

import (
	"testing"
)

func TestWeekAcrossYearBoundaries(t *testing.T) {
	for date, want := range map[string]string{
		"2025-12-28T23:59:59Z": "2025-W52",
		"2025-12-29T00:00:00Z": "2026-W01", // Monday of ISO week 1 of 2026
		"2026-01-04T23:59:59Z": "2026-W01",
		"2026-01-05T00:00:00Z": "2026-W02",
		"2021-01-03T12:00:00Z": "2020-W53", // a year with 53 weeks
		"2024-12-30T12:00:00Z": "2025-W01",
	} {
		if got, err := Week(date); err != nil || got != want {
			t.Errorf("Week(%s) = %s, %v; want %s", date, got, err, want)
		}
	}
	if _, err := Week("2026-01-05"); err == nil {
		t.Error("a date without time is not a stored cook date")
	}
}

func TestParseCookDate(t *testing.T) {
	for in, want := range map[string]string{
		"2025-12-29T19:30:00+07:00": "2025-12-29T12:30:00Z",
		"2025-12-29T19:30:00.123Z":  "2025-12-29T19:30:00Z",
		"2025-12-30":                "2025-12-30T12:00:00Z",
	} {
		if got, err := ParseCookDate(in); err != nil || got != want {
			t.Errorf("ParseCookDate(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "29/12/2025", "2025-13-01", "2025-12-29 19:30", "yesterday"} {
		if _, err := ParseCookDate(bad); err == nil {
			t.Errorf("ParseCookDate(%q) accepted", bad)
		}
	}
}

func TestRatingAddAndSortKey(t *testing.T) {
	var r Rating
	r = r.Add(1, 5).Add(1, 4).Add(1, 4) // 13/3
	if r.RatingCount != 3 || r.RatingSum != 13 || r.AvgRating != 4.33 {
		t.Errorf("%+v", r)
	}
	r = r.Add(0, 2) // a 4 became a 5: 15/3
	if r.AvgRating != 5 {
		t.Errorf("%+v", r)
	}
	r = r.Add(-3, -15)
	if r != (Rating{}) {
		t.Errorf("all ratings removed: %+v", r)
	}
	// Fixed width: string order is numeric order.
	keys := []string{RatingSortKey(0, "t", "r"), RatingSortKey(2.5, "t", "r"), RatingSortKey(4.33, "t", "r"), RatingSortKey(5, "t", "r")}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] || len(keys[i]) != len(keys[0]) {
			t.Errorf("sort keys out of order or of different widths: %v", keys)
		}
	}
}

func TestSuggestRule(t *testing.T) {
	rs := map[string]Recipe{
		"pho":   {RecipeID: "pho", AuthorID: "lan", Method: "boil", CreatedAt: "2026-01-01", Ingredients: []RecipeIngredient{{IngredientID: "beef"}}},
		"goi":   {RecipeID: "goi", AuthorID: "lan", Method: "raw", CreatedAt: "2026-01-02", SuitableFor: []string{"vegetarian"}},
		"chao":  {RecipeID: "chao", AuthorID: "lan", Method: "boil", CreatedAt: "2026-01-03", SuitableFor: []string{"vegetarian"}},
		"banh":  {RecipeID: "banh", AuthorID: "minh", Method: "bake", CreatedAt: "2026-01-04", SuitableFor: []string{"vegetarian"}},
		"mine":  {RecipeID: "mine", AuthorID: "an", Method: "boil", CreatedAt: "2026-01-05", SuitableFor: []string{"vegetarian"}},
		"fresh": {RecipeID: "fresh", AuthorID: "minh", Method: "boil", CreatedAt: "2026-01-06", SuitableFor: []string{"vegetarian"}},
	}
	hs := []History{
		{HistoryID: "1", RecipeID: "pho", CookDate: "2026-01-01T12:00:00Z", Rating: 5},
		{HistoryID: "2", RecipeID: "pho", CookDate: "2026-01-02T12:00:00Z", Rating: 3, Favorite: true},
		{HistoryID: "3", RecipeID: "mine", CookDate: "2026-01-03T12:00:00Z"},
		{HistoryID: "4", RecipeID: "fresh", CookDate: "2026-01-20T12:00:00Z", Rating: 5}, // recent: left out
	}
	in := SuggestInput{Preferences: Preferences{UserID: "an"}, History: hs, Recipes: rs}
	got := Suggest(in)
	want := []Suggestion{
		{RecipeID: "pho", Method: "boil", Score: 20*5 + 2*2 + 10, Reason: ReasonCookAgain},
		{RecipeID: "mine", Method: "boil", Score: 20*3 + 2, Reason: ReasonCookAgain},
		{RecipeID: "banh", Method: "bake", Score: 10*5 + 5, Reason: ReasonMoreByAuthor}, // minh: 5
		{RecipeID: "chao", Method: "boil", Score: 10*4 + 5, Reason: ReasonMoreByAuthor}, // lan: (5+3)/2
		{RecipeID: "goi", Method: "raw", Score: 10*4 + 5, Reason: ReasonMoreByAuthor},   // a tie: newer first
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Preferences filter: vegetarian, boil only, no beef.
	in.Preferences = Preferences{UserID: "an", FavoriteMethods: []string{"boil"}, DietaryRestrictions: []string{"vegetarian"}, DislikedIngredients: []string{"beef"}}
	for _, s := range Suggest(in) {
		if s.RecipeID != "mine" && s.RecipeID != "chao" {
			t.Errorf("suggested %s against the preferences", s.RecipeID)
		}
	}
	// The order of the inputs does not matter.
	in.History = []History{hs[3], hs[1], hs[2], hs[0]}
	in.Preferences = Preferences{UserID: "an"}
	again := Suggest(in)
	for i := range want {
		if again[i] != got[i] {
			t.Errorf("input order changed the list: %+v vs %+v", again, got)
			break
		}
	}
}

func TestValidMonthAndWeek(t *testing.T) {
	for s, want := range map[string]bool{"2025-12": true, "1900-01": true, "0000-01": false, "1899-12": false, "2025-13": false, "2025-1": false} {
		if got := ValidMonth(s); got != want {
			t.Errorf("ValidMonth(%q) = %v", s, got)
		}
	}
	for s, want := range map[string]bool{"2026-W01": true, "2026-W53": true, "2020-W53": true, "2025-W53": false, "2025-W52": true,
		"2025-W00": false, "2025-W54": false, "0000-W01": false, "2025-w01": false, "2025-W1": false} {
		if got := ValidWeek(s); got != want {
			t.Errorf("ValidWeek(%q) = %v", s, got)
		}
	}
	if _, err := ParseCookDate("0000-01-01"); err == nil {
		t.Error("a cook date in year 0 was accepted")
	}
}
