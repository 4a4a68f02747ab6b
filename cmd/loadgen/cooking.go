package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/store"
)

// The cooking workload (seed 003): cooks record cookings of a few recipes —
// one of them hot, cooked as often as all the others together — with a
// rating most of the time, and change ratings later. Each such write asks
// the projector for exact counts on its recipe (one marker per change), so
// the hot recipe's records all queue on one key.
const (
	cookRecipes = 8
	cookUsers   = 40
	// hotShare is the share of cookings that go to the hot recipe.
	hotShare = 0.5
)

type cookState struct {
	chefs   []string // the recipes' authors, one each
	recipes []string // recipes[0] is the hot one
	users   []*cookUser
}

type cookUser struct {
	mu        sync.Mutex
	id        string
	histories []*historyState
	rng       *rand.Rand
}

type historyState struct {
	id, cookDate string
	rating       int
	hot          bool // of the hot recipe
}

// setupCooking creates an ingredient and the recipes, each by an author
// of its own (a world at scale has many authors: one author of all the
// recipes would take every recipe's folded notifications on one
// partition, which no user's share of the writes does), and the cooks
// (w.cooks, default cookUsers).
func (w *world) setupCooking(ctx context.Context, seed uint64) error {
	tok, err := w.token(ctx, w.freshUser())
	if err != nil {
		return err
	}
	var in cooking.Ingredient
	if err := w.c.call(ctx, "POST", "/ingredients", tok, map[string]any{"name": fmt.Sprintf("Load rice %d", seed)}, &in); err != nil {
		return fmt.Errorf("create ingredient: %w", err)
	}
	for i := range cookRecipes {
		chef := w.freshUser()
		tok, err := w.token(ctx, chef)
		if err != nil {
			return err
		}
		w.cooking.chefs = append(w.cooking.chefs, chef)
		var r cooking.Recipe
		body := map[string]any{"title": fmt.Sprintf("Load dish %d", i), "method": cooking.Methods[i%len(cooking.Methods)], "servings": 2,
			"steps": []string{"Cook"}, "ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": 100, "unit": "g"}}}
		if err := w.c.call(ctx, "POST", "/recipes", tok, body, &r); err != nil {
			return fmt.Errorf("create recipe: %w", err)
		}
		w.cooking.recipes = append(w.cooking.recipes, r.RecipeID)
	}
	cooks := w.cooks
	if cooks == 0 {
		cooks = cookUsers
	}
	for i := range cooks {
		w.cooking.users = append(w.cooking.users, &cookUser{id: w.freshUser(), rng: rand.New(rand.NewPCG(seed, uint64(3_000_000+i)))})
	}
	return nil
}

// cookOp records a cooking ("cook") or changes a rating ("rate").
func (w *world) cookOp(ctx context.Context, name string, pickN uint64) (*op, error) {
	u := w.cooking.users[pickN%uint64(len(w.cooking.users))]
	u.mu.Lock()
	defer u.mu.Unlock()
	tok, err := w.token(ctx, u.id)
	if err != nil {
		return nil, err
	}
	if name == "rate" && len(u.histories) > 0 {
		h := pick(u.rng, u.histories)
		rating := 1 + (h.rating+u.rng.IntN(4))%5 // another rating than h's
		o := &op{name: name, route: "PATCH /me/cooking-history/{historyId}", change: "MODIFY", cookCounts: true,
			key: store.HistoryKey(u.id, h.cookDate, h.id), hot: h.hot}
		o.sent = time.Now()
		if err := w.c.call(ctx, "PATCH", "/me/cooking-history/"+h.id, tok, map[string]any{"rating": rating}, nil); err != nil {
			return o, err
		}
		o.done = time.Now()
		h.rating = rating
		return o, nil
	}
	recipe := w.cooking.recipes[0]
	if u.rng.Float64() >= hotShare {
		recipe = w.cooking.recipes[1+u.rng.IntN(len(w.cooking.recipes)-1)]
	}
	body := map[string]any{"recipeId": recipe}
	if r := u.rng.IntN(5); r > 0 {
		body["rating"] = r
	}
	o := &op{name: "cook", route: "POST /me/cooking-history", change: "INSERT", cookCounts: true, hot: recipe == w.cooking.recipes[0]}
	var h cooking.History
	o.sent = time.Now()
	if err := w.c.call(ctx, "POST", "/me/cooking-history", tok, body, &h); err != nil {
		return o, err
	}
	o.done = time.Now()
	o.key = store.HistoryKey(u.id, h.CookDate, h.HistoryID)
	u.histories = append(u.histories, &historyState{id: h.HistoryID, cookDate: h.CookDate, rating: h.Rating, hot: o.hot})
	return o, nil
}
