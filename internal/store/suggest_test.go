package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
)

// Users whose suggestion inputs are read together share the reads, not the
// inputs: each gets exactly what reading it alone gives (its history's
// recipes and its own liked authors' recipes), whatever the concurrency.
func TestSuggestInputsTogetherEqualAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := store.Timestamp(t0)
	// Three authors with three recipes each.
	for a := range 3 {
		for i := range 3 {
			r := cooking.Recipe{RecipeID: fmt.Sprintf("r-%d-%d", a, i), AuthorID: fmt.Sprintf("chef-%d", a), Title: "Dish", Method: "boil",
				Ingredients: []cooking.RecipeIngredient{}, Steps: []string{"cook"}, Servings: 2, SuitableFor: []string{},
				CreatedAt: store.Timestamp(t0.Add(-time.Duration(a*3+i) * time.Hour)), UpdatedAt: at}
			if err := f.st.Cooking.CreateRecipe(f.ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	// an liked chef-0 (rated 5) and cooked chef-1's recipe unrated; binh
	// favourited chef-1's; chi has preferences only; dao has nothing.
	cook := func(user, recipe string, n, rating int, fav bool) {
		t.Helper()
		h := cooking.History{UserID: user, HistoryID: fmt.Sprintf("h-%s-%d", user, n), RecipeID: recipe, RecipeTitle: "Dish",
			CookDate: t0.Add(time.Duration(n) * time.Hour).Format(cooking.CookDateLayout), Rating: rating, Favorite: fav, CreatedAt: at, UpdatedAt: at}
		if err := f.st.Cooking.RecordCooking(f.ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	cook("an", "r-0-0", 1, 5, false)
	cook("an", "r-1-0", 2, 0, false)
	cook("binh", "r-1-1", 1, 0, true)
	cook("binh", "r-0-0", 2, 2, false)
	if err := f.st.Cooking.PutCookingPreferences(f.ctx, cooking.Preferences{UserID: "chi", FavoriteMethods: []string{"boil"}, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	// A preferences item written by someone else under dao's key that says
	// it is an's: it is dao's (by its key), never an's.
	_, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "USER#dao"}, "SK": &types.AttributeValueMemberS{Value: "PREFERENCES"},
		"itemType": &types.AttributeValueMemberS{Value: store.TypeCookingPreferences}, "userId": &types.AttributeValueMemberS{Value: "an"},
		"favoriteMethods": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "fry"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	users := []string{"an", "binh", "chi", "dao"}
	together := f.st.Cooking.SuggestInputs(f.ctx, users, 3)
	for _, u := range users {
		alone := f.st.Cooking.SuggestInputs(f.ctx, []string{u}, 1)[u]
		got := together[u]
		if got.Err != nil || alone.Err != nil {
			t.Fatalf("%s: %v / %v", u, got.Err, alone.Err)
		}
		if diff := cmp.Diff(alone, got); diff != "" {
			t.Errorf("%s read with the others differs from alone (-alone +together):\n%s", u, diff)
		}
	}
	// And what each got is right: an's candidates are its two recipes and
	// chef-0's three; binh's, its two and chef-1's three.
	ids := func(u string) []string {
		var out []string
		for id := range together[u].In.Recipes {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	for u, want := range map[string][]string{
		"an":   {"r-0-0", "r-0-1", "r-0-2", "r-1-0"},
		"binh": {"r-0-0", "r-1-0", "r-1-1", "r-1-2"},
		"chi":  nil,
		"dao":  nil,
	} {
		if got := ids(u); !slices.Equal(got, want) {
			t.Errorf("%s's recipes %v, want %v", u, got, want)
		}
	}
	if an, dao := together["an"].In.Preferences, together["dao"].In.Preferences; len(an.FavoriteMethods) != 0 || dao.UserID != "dao" || len(dao.FavoriteMethods) != 1 {
		t.Errorf("a stored item's userId moved preferences: an %+v, dao %+v", an, dao)
	}
	if together["chi"].Newest != at || together["dao"].Newest != "" || len(together["chi"].In.Preferences.FavoriteMethods) != 1 {
		t.Errorf("chi %+v, dao %+v", together["chi"], together["dao"])
	}
}
