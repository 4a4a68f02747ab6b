package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
)

// Recording a cooking touches its cook's partition only: the caller read
// the recipe, and a ConditionCheck of it in the transaction cost the
// recipe's partition two write units per cooking (a transaction's
// actions are transactional writes of their keys: "Capacity management
// for transactions", transaction-apis.html), most of a hot recipe's
// partition at scale. The Limiter counts every partition a request meets.
func TestRecordCookingLeavesTheRecipesPartitionAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := newStore(t)
	if err := direct.Cooking.CreateRecipe(ctx, cooking.Recipe{RecipeID: "pho", AuthorID: "chef", Title: "Pho", Method: "simmer", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}); err != nil {
		t.Fatal(err)
	}
	lim := ddblocal.Limit(t, ddblocal.Limits{})
	db, _ := ddblocal.Clients(lim.Endpoint)
	st := store.New(db, direct.Table)
	h := cooking.History{UserID: "ana", HistoryID: "h1", RecipeID: "pho", RecipeTitle: "Pho", CookDate: "2026-01-07",
		CreatedAt: "2026-01-07T12:00:00.000Z", UpdatedAt: "2026-01-07T12:00:00.000Z"}
	if err := st.Cooking.RecordCooking(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.Cooking.RecordCooking(ctx, h); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("the same history again: %v, want a conflict", err)
	}
	var touched []string
	for _, k := range lim.KeyCounts() {
		touched = append(touched, k.Key)
		if k.Key == store.RecipePK("pho") {
			t.Errorf("recording a cooking met the recipe's partition: %+v", k)
		}
	}
	if len(touched) == 0 {
		t.Fatal("the Limiter saw no partition")
	}
}
