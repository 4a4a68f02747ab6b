package api

import (
	"net/http"
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
	if len(fs) == 0 && normalized == "" {
		fs = append(fs, errs.FieldError{Field: "name", Reason: "must contain a letter or a digit"})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	in := cooking.Ingredient{
		IngredientID: s.NewID(), Name: strings.TrimSpace(req.Name), NormalizedName: normalized,
		Category: strings.TrimSpace(req.Category), CreatedAt: store.Timestamp(s.Now()), CreatedBy: identity(r.Context()).UserID,
	}
	if err := s.Store.CreateIngredient(r.Context(), in); err != nil {
		return err
	}
	w.Header().Set("Location", "/ingredients/"+in.IngredientID)
	writeJSON(w, http.StatusCreated, in)
	return nil
}

func (s *Server) getIngredient(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.GetIngredient(r.Context(), r.PathValue("ingredientId")))
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
		if n == "" {
			return errs.Field("name", "must contain a letter or a digit")
		}
		return replyPage(w)(s.Store.FindIngredients(r.Context(), n, true, p))
	}
	return replyPage(w)(s.Store.FindIngredients(r.Context(), cooking.Normalize(prefix), false, p))
}
