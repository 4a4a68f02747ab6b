package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
)

// Recipe, cooking history and session routes (seed 003). Ids in bodies
// and queries (recipeId, ingredientId, authorId) are checked against the
// spec's Id and UserId patterns before a handler runs. Any signed-in
// user reads recipes; only a recipe's author changes or deletes it. A
// user's history, favourites, sessions and suggestions are their own
// (/me/…): no route reaches another user's.

// Limits on recipes and histories.
const (
	maxRecipeIngredients = 50
	maxSteps             = 50
	maxStep              = 1000
	maxUnit              = 20
	maxQuantity          = 100000
	maxRecipeServings    = 100
	maxMinutes           = 2880
	maxNotes             = 1000
)

type recipeIngredientRequest struct {
	IngredientID string  `json:"ingredientId"`
	Quantity     float64 `json:"quantity"`
	Unit         string  `json:"unit"`
}

type recipeRequest struct {
	Title       string                    `json:"title"`
	Description string                    `json:"description"`
	Method      string                    `json:"method"`
	Ingredients []recipeIngredientRequest `json:"ingredients"`
	Steps       []string                  `json:"steps"`
	Servings    int                       `json:"servings"`
	PrepMinutes int                       `json:"prepMinutes"`
	CookMinutes int                       `json:"cookMinutes"`
	SuitableFor []string                  `json:"suitableFor"`
}

// recipe validates a request into a recipe's author fields: every field
// checked, every ingredient checked to exist with one read (each unknown
// one named).
func (s *Server) recipe(r *http.Request) (cooking.Recipe, error) {
	var req recipeRequest
	if err := decode(r, &req); err != nil {
		return cooking.Recipe{}, err
	}
	var fs []errs.FieldError
	checkText(&fs, "title", req.Title, true, maxName)
	checkText(&fs, "description", req.Description, false, maxDescription)
	if !slices.Contains(cooking.Methods, req.Method) {
		fs = append(fs, errs.FieldError{Field: "method", Reason: "must be one of " + strings.Join(cooking.Methods, ", ")})
	}
	switch n := len(req.Ingredients); {
	case n == 0:
		fs = append(fs, errs.FieldError{Field: "ingredients", Reason: "must name at least one ingredient"})
	case n > maxRecipeIngredients:
		fs = append(fs, errs.FieldError{Field: "ingredients", Reason: fmt.Sprintf("must have at most %d ingredients", maxRecipeIngredients)})
	}
	var ids []string
	ingredients := make([]cooking.RecipeIngredient, 0, len(req.Ingredients))
	for i, in := range req.Ingredients {
		f := fmt.Sprintf("ingredients[%d]", i)
		if slices.Contains(ids, in.IngredientID) {
			fs = append(fs, errs.FieldError{Field: f + ".ingredientId", Reason: "is named twice"})
		} else {
			ids = append(ids, in.IngredientID)
		}
		if !(in.Quantity > 0 && in.Quantity <= maxQuantity) {
			fs = append(fs, errs.FieldError{Field: f + ".quantity", Reason: fmt.Sprintf("must be above 0 and at most %d", maxQuantity)})
		}
		checkText(&fs, f+".unit", in.Unit, false, maxUnit)
		ingredients = append(ingredients, cooking.RecipeIngredient{IngredientID: in.IngredientID, Quantity: in.Quantity, Unit: strings.TrimSpace(in.Unit)})
	}
	switch n := len(req.Steps); {
	case n == 0:
		fs = append(fs, errs.FieldError{Field: "steps", Reason: "must have at least one step"})
	case n > maxSteps:
		fs = append(fs, errs.FieldError{Field: "steps", Reason: fmt.Sprintf("must have at most %d steps", maxSteps)})
	}
	steps := make([]string, 0, len(req.Steps))
	for i, st := range req.Steps {
		checkText(&fs, fmt.Sprintf("steps[%d]", i), st, true, maxStep)
		steps = append(steps, strings.TrimSpace(st))
	}
	if req.Servings < 1 || req.Servings > maxRecipeServings {
		fs = append(fs, errs.FieldError{Field: "servings", Reason: fmt.Sprintf("must be from 1 to %d", maxRecipeServings)})
	}
	for _, m := range []struct {
		field string
		v     int
	}{{"prepMinutes", req.PrepMinutes}, {"cookMinutes", req.CookMinutes}} {
		if m.v < 0 || m.v > maxMinutes {
			fs = append(fs, errs.FieldError{Field: m.field, Reason: fmt.Sprintf("must be from 0 to %d", maxMinutes)})
		}
	}
	suitable := []string{}
	for i, d := range req.SuitableFor {
		switch {
		case !slices.Contains(cooking.Restrictions, d):
			fs = append(fs, errs.FieldError{Field: fmt.Sprintf("suitableFor[%d]", i), Reason: "must be one of " + strings.Join(cooking.Restrictions, ", ")})
		case !slices.Contains(suitable, d):
			suitable = append(suitable, d)
		}
	}
	if err := errs.Fields(fs); err != nil {
		return cooking.Recipe{}, err
	}
	missing, err := s.Store.Cooking.MissingIngredients(r.Context(), ids)
	if err != nil {
		return cooking.Recipe{}, err
	}
	for _, id := range missing {
		fs = append(fs, errs.FieldError{Field: fmt.Sprintf("ingredients[%d].ingredientId", slices.Index(ids, id)), Reason: "unknown ingredient " + id})
	}
	if err := errs.Fields(fs); err != nil {
		return cooking.Recipe{}, err
	}
	return cooking.Recipe{
		Title: strings.TrimSpace(req.Title), Description: strings.TrimSpace(req.Description), Method: req.Method,
		Ingredients: ingredients, Steps: steps, Servings: req.Servings, PrepMinutes: req.PrepMinutes, CookMinutes: req.CookMinutes,
		SuitableFor: suitable,
	}, nil
}

func (s *Server) createRecipe(w http.ResponseWriter, r *http.Request) error {
	rc, err := s.recipe(r)
	if err != nil {
		return err
	}
	now := store.Timestamp(s.Now())
	rc.RecipeID, rc.AuthorID, rc.CreatedAt, rc.UpdatedAt = s.NewID(), identity(r.Context()).UserID, now, now
	if err := s.Store.Cooking.CreateRecipe(r.Context(), rc); err != nil {
		return err
	}
	return created(w, "/recipes/"+rc.RecipeID, rc)
}

func (s *Server) getRecipe(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.GetRecipe(r.Context(), r.PathValue("recipeId")))
}

// putRecipe replaces a recipe's author fields (its ratings stay): only
// its author may.
func (s *Server) putRecipe(w http.ResponseWriter, r *http.Request) error {
	id, me := r.PathValue("recipeId"), identity(r.Context()).UserID
	rc, err := s.recipe(r)
	if err != nil {
		return err
	}
	rc.RecipeID, rc.UpdatedAt = id, store.Timestamp(s.Now())
	return reply(w, http.StatusOK)(s.Store.Cooking.UpdateRecipe(r.Context(), rc, me))
}

// recipeAuthor is the access of a recipe's changes: someone else's recipe
// is a 403 whatever the body (a missing one 404).
func (s *Server) recipeAuthor(r *http.Request) error {
	cur, err := s.Store.Cooking.GetRecipe(r.Context(), r.PathValue("recipeId"))
	if err != nil {
		return err
	}
	if cur.AuthorID != identity(r.Context()).UserID {
		return errs.New(errs.Forbidden, "only the recipe's author may change it")
	}
	return nil
}

func (s *Server) deleteRecipe(w http.ResponseWriter, r *http.Request) error {
	if err := s.Store.Cooking.DeleteRecipe(r.Context(), r.PathValue("recipeId"), identity(r.Context()).UserID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listRecipes lists the recipes of a method, best rated first then newest
// (pattern 3), or an author's, newest first; paginated.
func (s *Server) listRecipes(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	method, author := q.Get("method"), q.Get("authorId")
	switch {
	case method != "" && author != "":
		return errs.Field("authorId", "give method or authorId, not both")
	case method != "":
		if !slices.Contains(cooking.Methods, method) {
			return errs.Field("method", "must be one of "+strings.Join(cooking.Methods, ", "))
		}
		return replyPage(w)(s.Store.Cooking.RecipesByMethod(r.Context(), method, p))
	case author != "":
		return replyPage(w)(s.Store.Cooking.RecipesByAuthor(r.Context(), author, p))
	}
	return errs.Field("method", "give method or authorId")
}

var (
	monthPattern = regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])$`)
	weekPattern  = regexp.MustCompile(`^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$`)
)

// recentCooking is what anyone signed in sees of one cooking in the
// month's feed: which recipe, and on which day (UTC). Who cooked it, their
// history entry and the time of day are theirs: only the cook sees their
// own entry's historyId, marked mine.
type recentCooking struct {
	RecipeID    string `json:"recipeId"`
	RecipeTitle string `json:"recipeTitle"`
	CookedOn    string `json:"cookedOn"`
	Mine        bool   `json:"mine,omitempty"`
	HistoryID   string `json:"historyId,omitempty"`
}

// recentCookings lists a month's cookings of every recipe, newest first
// (pattern 6); the current month by default. It is a community feed: see
// recentCooking for what it shows of other people's cooking.
func (s *Server) recentCookings(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	month := r.URL.Query().Get("month")
	if month == "" {
		month = s.Now().UTC().Format("2006-01")
	} else if !monthPattern.MatchString(month) || !cooking.ValidMonth(month) {
		return errs.Field("month", fmt.Sprintf("must be a month, yyyy-mm, of the years %d to %d", cooking.MinYear, cooking.MaxYear))
	}
	items, next, err := s.Store.Cooking.RecentCookings(r.Context(), month, p)
	if err != nil {
		return err
	}
	me := identity(r.Context()).UserID
	out := make([]recentCooking, len(items))
	for i, it := range items {
		out[i] = recentCooking{RecipeID: it.RecipeID, RecipeTitle: it.Title, CookedOn: it.CookDate[:min(len(it.CookDate), len("2006-01-02"))]}
		if it.UserID == me {
			out[i].Mine, out[i].HistoryID = true, it.HistoryID
		}
	}
	return replyPage(w)(out, next, nil)
}

// trendingRecipes lists an ISO week's most cooked recipes, most first; the
// current week by default.
func (s *Server) trendingRecipes(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	week := r.URL.Query().Get("week")
	if week == "" {
		y, wk := s.Now().UTC().ISOWeek()
		week = fmt.Sprintf("%04d-W%02d", y, wk)
	} else if !weekPattern.MatchString(week) || !cooking.ValidWeek(week) {
		return errs.Field("week", "must be an ISO week that exists, yyyy-Www (W53 only in the years that have one)")
	}
	return replyPage(w)(s.Store.Cooking.TrendingRecipes(r.Context(), week, p))
}

type historyRequest struct {
	RecipeID string `json:"recipeId"`
	CookDate string `json:"cookDate"`
	Rating   int    `json:"rating"`
	Notes    string `json:"notes"`
	Favorite bool   `json:"favorite"`
}

// checkRating names a rating outside 1–5 (0: none).
func checkRating(fs *[]errs.FieldError, r int) {
	if r != 0 && (r < cooking.MinRating || r > cooking.MaxRating) {
		*fs = append(*fs, errs.FieldError{Field: "rating", Reason: "must be from 1 to 5"})
	}
}

// recordCooking records that the caller cooked a recipe (now, or on
// cookDate).
func (s *Server) recordCooking(w http.ResponseWriter, r *http.Request) error {
	var req historyRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	now := s.Now()
	cookDate := now.UTC().Format(cooking.CookDateLayout)
	if req.CookDate != "" {
		d, err := cooking.ParseCookDate(req.CookDate)
		switch {
		case err != nil:
			fs = append(fs, errs.FieldError{Field: "cookDate", Reason: err.Error()})
		case d > now.UTC().Add(24*time.Hour).Format(cooking.CookDateLayout):
			fs = append(fs, errs.FieldError{Field: "cookDate", Reason: "must not be more than a day ahead"})
		case d < "2000-01-01":
			fs = append(fs, errs.FieldError{Field: "cookDate", Reason: "must be in 2000 or later"})
		default:
			cookDate = d
		}
	}
	checkRating(&fs, req.Rating)
	checkText(&fs, "notes", req.Notes, false, maxNotes)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	rc, err := s.Store.Cooking.GetRecipe(r.Context(), req.RecipeID)
	if errs.Is(err, errs.NotFound) {
		return errs.Field("recipeId", "unknown recipe "+req.RecipeID)
	} else if err != nil {
		return err
	}
	at := store.Timestamp(now)
	h := cooking.History{
		UserID: identity(r.Context()).UserID, HistoryID: s.NewID(), RecipeID: rc.RecipeID, RecipeTitle: rc.Title, CookDate: cookDate,
		Rating: req.Rating, Notes: strings.TrimSpace(req.Notes), Favorite: req.Favorite, CreatedAt: at, UpdatedAt: at,
	}
	if err := s.Store.Cooking.RecordCooking(r.Context(), h); err != nil {
		return err
	}
	return created(w, "/me/cooking-history/"+h.HistoryID, h)
}

func (s *Server) listHistory(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Cooking.ListHistory(r.Context(), identity(r.Context()).UserID, p))
}

func (s *Server) listFavorites(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Cooking.ListFavorites(r.Context(), identity(r.Context()).UserID, p))
}

func (s *Server) getHistory(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.GetHistory(r.Context(), identity(r.Context()).UserID, r.PathValue("historyId")))
}

// historyPatch is a history change; a field absent is kept, a rating or
// notes of null removed.
type historyPatch struct {
	Rating   json.RawMessage `json:"rating"`
	Notes    json.RawMessage `json:"notes"`
	Favorite *bool           `json:"favorite"`
}

func (s *Server) patchHistory(w http.ResponseWriter, r *http.Request) error {
	var req historyPatch
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	p := store.HistoryPatch{Favorite: req.Favorite, UpdatedAt: store.Timestamp(s.Now())}
	if len(req.Rating) > 0 {
		var v *int
		if err := json.Unmarshal(req.Rating, &v); err != nil {
			fs = append(fs, errs.FieldError{Field: "rating", Reason: "must be an integer from 1 to 5, or null"})
		} else {
			n := 0
			if v != nil {
				n = *v
				if n == 0 {
					n = -1 // 0 is no rating: refused like any other
				}
			}
			checkRating(&fs, n)
			p.Rating = &n
		}
	}
	if len(req.Notes) > 0 {
		var v *string
		if err := json.Unmarshal(req.Notes, &v); err != nil {
			fs = append(fs, errs.FieldError{Field: "notes", Reason: "must be a string, or null"})
		} else {
			n := ""
			if v != nil {
				checkText(&fs, "notes", *v, false, maxNotes)
				n = strings.TrimSpace(*v)
			}
			p.Notes = &n
		}
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	return reply(w, http.StatusOK)(s.Store.Cooking.UpdateHistory(r.Context(), identity(r.Context()).UserID, r.PathValue("historyId"), p))
}

func (s *Server) deleteHistory(w http.ResponseWriter, r *http.Request) error {
	if err := s.Store.Cooking.DeleteHistory(r.Context(), identity(r.Context()).UserID, r.PathValue("historyId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type startSessionRequest struct {
	RecipeID string `json:"recipeId"`
}

// startSession starts cooking a recipe (a session lives 24 hours).
func (s *Server) startSession(w http.ResponseWriter, r *http.Request) error {
	var req startSessionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	rc, err := s.Store.Cooking.GetRecipe(r.Context(), req.RecipeID)
	if errs.Is(err, errs.NotFound) {
		return errs.Field("recipeId", "unknown recipe "+req.RecipeID)
	} else if err != nil {
		return err
	}
	now := s.Now()
	ss := cooking.Session{
		UserID: identity(r.Context()).UserID, SessionID: s.NewID(), RecipeID: rc.RecipeID, RecipeTitle: rc.Title, StepCount: len(rc.Steps),
		Status: cooking.SessionActive, StartedAt: store.Timestamp(now), UpdatedAt: store.Timestamp(now), TTL: now.Add(cooking.SessionTTL).Unix(),
	}
	if err := s.Store.Cooking.StartSession(r.Context(), ss); err != nil {
		return err
	}
	return created(w, "/me/cooking-sessions/"+ss.SessionID, ss)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.GetSession(r.Context(), identity(r.Context()).UserID, r.PathValue("sessionId"), s.Now()))
}

type sessionStepRequest struct {
	Step int `json:"step"`
}

func (s *Server) setSessionStep(w http.ResponseWriter, r *http.Request) error {
	var req sessionStepRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Step < 0 {
		return errs.Field("step", "must be 0 or more")
	}
	return reply(w, http.StatusOK)(s.Store.Cooking.SetSessionStep(r.Context(), identity(r.Context()).UserID, r.PathValue("sessionId"), req.Step, s.Now()))
}

func (s *Server) abandonSession(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.AbandonSession(r.Context(), identity(r.Context()).UserID, r.PathValue("sessionId"), s.Now()))
}

type completeSessionRequest struct {
	Rating   int    `json:"rating"`
	Notes    string `json:"notes"`
	Favorite bool   `json:"favorite"`
}

// completeSession completes a session and records its cooking history
// entry (201); completing it again answers the same entry (200) and
// records nothing.
func (s *Server) completeSession(w http.ResponseWriter, r *http.Request) error {
	var req completeSessionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	checkRating(&fs, req.Rating)
	checkText(&fs, "notes", req.Notes, false, maxNotes)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	userID, now := identity(r.Context()).UserID, s.Now()
	ss, err := s.Store.Cooking.GetSession(r.Context(), userID, r.PathValue("sessionId"), now)
	if err != nil {
		return err
	}
	at := store.Timestamp(now)
	h := cooking.History{
		UserID: userID, HistoryID: s.NewID(), RecipeID: ss.RecipeID, RecipeTitle: ss.RecipeTitle, CookDate: now.UTC().Format(cooking.CookDateLayout),
		Rating: req.Rating, Notes: strings.TrimSpace(req.Notes), Favorite: req.Favorite, SessionID: ss.SessionID, CreatedAt: at, UpdatedAt: at,
	}
	got, isNew, err := s.Store.Cooking.CompleteSession(r.Context(), h, now)
	if err != nil {
		return err
	}
	if isNew {
		return created(w, "/me/cooking-history/"+got.HistoryID, got)
	}
	writeJSON(w, http.StatusOK, got)
	return nil
}

func (s *Server) mySuggestions(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Cooking.GetSuggestions(r.Context(), identity(r.Context()).UserID, s.Now()))
}

// publicProfile is what anyone signed in sees of a user (pattern 1): no
// e-mail address, unless it is the caller's own.
type publicProfile struct {
	UserID    string `json:"userId"`
	Name      string `json:"name"`
	Locale    string `json:"locale,omitempty"`
	Email     string `json:"email,omitempty"`
	UpdatedAt string `json:"updatedAt"`
}

func (s *Server) userProfile(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("userId")
	p, err := s.Store.Collab.GetProfile(r.Context(), id)
	if err != nil {
		return err
	}
	out := publicProfile{UserID: p.UserID, Name: p.Name, Locale: p.Locale, UpdatedAt: p.UpdatedAt}
	if id == identity(r.Context()).UserID {
		out.Email = p.Email
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
