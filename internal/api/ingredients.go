package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
)

// Ingredient routes (seed 003, pattern 4): any signed-in user creates and
// reads master ingredients; names are unique by cooking.Normalize, which
// serves the writes and the searches alike.

// maxCategory bounds an ingredient's category.
const maxCategory = 60

type createIngredientRequest struct {
	Name     string `json:"name"`
	Category string `json:"category"`
}

// createIngredient creates an ingredient; a name whose normalized form is
// taken is a 409 naming the ingredient that has it.
func (s *Server) createIngredient(w http.ResponseWriter, r *http.Request) error {
	var req createIngredientRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	checkText(&fs, "name", req.Name, true, maxName)
	checkText(&fs, "category", req.Category, false, maxCategory)
	normalized := cooking.Normalize(req.Name)
	switch {
	case len(fs) > 0:
	case normalized == "":
		fs = append(fs, errs.FieldError{Field: "name", Reason: "must contain a letter or a digit"})
	case len(normalized) > cooking.MaxNormalized:
		fs = append(fs, errs.FieldError{Field: "name", Reason: cooking.NormalizedTooLong})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	in := cooking.Ingredient{
		IngredientID: s.NewID(), Name: strings.TrimSpace(req.Name), NormalizedName: normalized,
		Category: strings.TrimSpace(req.Category), CreatedAt: store.Timestamp(s.Now()), CreatedBy: identity(r.Context()).UserID,
	}
	if err := s.Store.Cooking.CreateIngredient(r.Context(), in); err != nil {
		return err
	}
	return created(w, "/ingredients/"+in.IngredientID, in)
}

func (s *Server) getIngredient(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.GetIngredient(r.Context(), r.PathValue("ingredientId")))
}

// listIngredients finds ingredients by exact name (?name=) or by the start
// of their name (?prefix=, type-ahead), both normalized as names are, or
// lists them all by name; paginated.
func (s *Server) listIngredients(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	name, prefix := q.Get("name"), q.Get("prefix")
	if name != "" && prefix != "" {
		return errs.Field("prefix", "give name or prefix, not both")
	}
	if name != "" {
		n := cooking.Normalize(name)
		switch {
		case n == "":
			return errs.Field("name", "must contain a letter or a digit")
		case len(n) > cooking.MaxNormalized:
			return errs.Field("name", cooking.NormalizedTooLong)
		}
		return replyPage(w)(s.Store.Cooking.FindIngredients(r.Context(), n, true, p))
	}
	n := cooking.Normalize(prefix)
	if len(n) > cooking.MaxNormalized {
		return errs.Field("prefix", cooking.NormalizedTooLong)
	}
	return replyPage(w)(s.Store.Cooking.FindIngredients(r.Context(), n, false, p))
}

// Limits on cooking preferences.
const (
	maxDisliked = 50
	maxServings = 20
)

type cookingPreferencesRequest struct {
	FavoriteMethods     []string `json:"favoriteMethods"`
	DietaryRestrictions []string `json:"dietaryRestrictions"`
	DislikedIngredients []string `json:"dislikedIngredients"`
	SkillLevel          string   `json:"skillLevel"`
	Servings            int      `json:"servings"`
}

func (s *Server) getCookingPreferences(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.GetCookingPreferences(r.Context(), identity(r.Context()).UserID))
}

// putCookingPreferences replaces the caller's cooking preferences: methods,
// restrictions and skill from their closed sets, disliked ingredients that
// exist (one read for all of them), each list without repeats.
func (s *Server) putCookingPreferences(w http.ResponseWriter, r *http.Request) error {
	var req cookingPreferencesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	closedSet := func(field string, vs []string, set []string) []string {
		out := []string{}
		for i, v := range vs {
			switch {
			case !slices.Contains(set, v):
				fs = append(fs, errs.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Reason: "must be one of " + strings.Join(set, ", ")})
			case !slices.Contains(out, v):
				out = append(out, v)
			}
		}
		return out
	}
	methods := closedSet("favoriteMethods", req.FavoriteMethods, cooking.Methods)
	restrictions := closedSet("dietaryRestrictions", req.DietaryRestrictions, cooking.Restrictions)
	if req.SkillLevel != "" && !slices.Contains(cooking.SkillLevels, req.SkillLevel) {
		fs = append(fs, errs.FieldError{Field: "skillLevel", Reason: "must be one of " + strings.Join(cooking.SkillLevels, ", ")})
	}
	if req.Servings < 0 || req.Servings > maxServings {
		fs = append(fs, errs.FieldError{Field: "servings", Reason: fmt.Sprintf("must be from 1 to %d (0 or absent: not set)", maxServings)})
	}
	disliked := []string{}
	for _, id := range req.DislikedIngredients {
		if !slices.Contains(disliked, id) {
			disliked = append(disliked, id)
		}
	}
	if len(disliked) > maxDisliked {
		fs = append(fs, errs.FieldError{Field: "dislikedIngredients", Reason: fmt.Sprintf("must have at most %d ingredients", maxDisliked)})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	missing, err := s.Store.Cooking.MissingIngredients(r.Context(), disliked)
	if err != nil {
		return err
	}
	for _, id := range missing {
		fs = append(fs, errs.FieldError{Field: fmt.Sprintf("dislikedIngredients[%d]", slices.Index(req.DislikedIngredients, id)), Reason: "unknown ingredient " + id})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	p := cooking.Preferences{
		UserID: identity(r.Context()).UserID, FavoriteMethods: methods, DietaryRestrictions: restrictions,
		DislikedIngredients: disliked, SkillLevel: req.SkillLevel, Servings: req.Servings, UpdatedAt: store.Timestamp(s.Now()),
	}
	return reply(w, http.StatusOK)(p, s.Store.Cooking.PutCookingPreferences(r.Context(), p))
}
