package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/internal/text"
)

type tokenRequest struct {
	UserID string   `json:"userId"`
	Groups []string `json:"groups"`
	Email  string   `json:"email"`
	Name   string   `json:"name"`
}

type tokenResponse struct {
	Token     string `json:"token"`
	UserID    string `json:"userId"`
	ExpiresAt string `json:"expiresAt"`
}

const devTokenTTL = 12 * time.Hour

func (s *Server) mintToken(w http.ResponseWriter, r *http.Request) error {
	var req tokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	now := s.Now()
	tok, err := s.DevTokens.MintIdentity(auth.Identity{UserID: req.UserID, Groups: req.Groups, Email: req.Email, Name: req.Name}, now, devTokenTTL)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, tokenResponse{Token: tok, UserID: req.UserID, ExpiresAt: store.Timestamp(now.Add(devTokenTTL))})
	return nil
}

type createRoomRequest struct {
	Name       string       `json:"name"`
	SearchType string       `json:"searchType"`
	Context    *roomContext `json:"context"`
}

type roomContext struct {
	Description string    `json:"description"`
	FamilySize  *int      `json:"familySize"`
	CombineMode room.Mode `json:"combineMode"`
}

// Limits on free text.
const (
	maxName        = 200
	maxDescription = 2000
	maxSetEntries  = 50
	maxSetEntry    = 100
)

func checkText(fs *[]errs.FieldError, field, v string, required bool, maxLen int) {
	switch {
	case required && text.Blank(v):
		*fs = append(*fs, errs.FieldError{Field: field, Reason: "is required"})
	case !utf8.ValidString(v):
		*fs = append(*fs, errs.FieldError{Field: field, Reason: "must be valid UTF-8"})
	case utf8.RuneCountInString(v) > maxLen:
		*fs = append(*fs, errs.FieldError{Field: field, Reason: fmt.Sprintf("must be at most %d characters", maxLen)})
	}
}

func (s *Server) createRoom(w http.ResponseWriter, r *http.Request) error {
	var req createRoomRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	checkText(&fs, "name", req.Name, true, maxName)
	if req.SearchType != room.SearchBuy && req.SearchType != room.SearchRent {
		fs = append(fs, errs.FieldError{Field: "searchType", Reason: `must be "buy" or "rent"`})
	}
	ctx := parseContext(&fs, req.Context)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	rm := room.Room{
		RoomID: s.NewID(), Name: strings.TrimSpace(req.Name), CreatedByUserID: identity(r.Context()).UserID,
		CreatedAt: store.Timestamp(s.Now()), SearchType: req.SearchType, Context: ctx,
	}
	if _, err := s.Store.Rooms.CreateRoom(r.Context(), rm); err != nil {
		return err
	}
	return created(w, "/rooms/"+rm.RoomID, rm)
}

// parseContext validates a room context; an absent one is the default.
func parseContext(fs *[]errs.FieldError, c *roomContext) room.Context {
	ctx := room.Context{CombineMode: room.DefaultMode}
	if c == nil {
		return ctx
	}
	checkText(fs, "context.description", c.Description, false, maxDescription)
	if c.FamilySize != nil && (*c.FamilySize < 1 || *c.FamilySize > 50) {
		*fs = append(*fs, errs.FieldError{Field: "context.familySize", Reason: "must be from 1 to 50"})
	}
	if c.CombineMode != "" && !c.CombineMode.Valid() {
		*fs = append(*fs, errs.FieldError{Field: "context.combineMode", Reason: `must be "strict", "all" or "mixed"`})
	}
	ctx.Description, ctx.FamilySize = c.Description, c.FamilySize
	if c.CombineMode != "" {
		ctx.CombineMode = c.CombineMode
	}
	return ctx
}

type updateRoomRequest struct {
	Context *roomContext `json:"context"`
}

// updateRoom replaces the room's context (owner only); a new combineMode
// makes the projector derive new snapshots.
func (s *Server) updateRoom(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	var req updateRoomRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Context == nil {
		return errs.Field("context", "is required")
	}
	var fs []errs.FieldError
	ctx := parseContext(&fs, req.Context)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	return reply(w, http.StatusOK)(s.Store.Rooms.UpdateRoomContext(r.Context(), me.RoomID, ctx, store.Timestamp(s.Now()), me.UserID))
}

// deleteRoom deletes the Room item, seals the room's chat, and answers 202:
// the projector deletes the rest of the room (its items, the members'
// UserRoom items, its chat's messages), the notifier closes its chat's
// connections.
func (s *Server) deleteRoom(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	if err := s.Store.Rooms.DeleteRoom(r.Context(), me.RoomID, store.Timestamp(s.Now())); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"roomId": me.RoomID, "status": "deleting"})
	return nil
}

// getMember checks one user's membership (members only).
func (s *Server) getMember(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	return reply(w, http.StatusOK)(s.Store.Rooms.GetMember(r.Context(), me.RoomID, r.PathValue("userId")))
}

// removeMember lets a member leave (their own id) or the owner remove a
// member. The owner cannot leave: they delete the room instead.
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	target := r.PathValue("userId")
	switch {
	case target == me.UserID && me.Role == room.RoleOwner:
		return errs.New(errs.Conflict, "the owner cannot leave the room; delete the room instead")
	case target != me.UserID && me.Role != room.RoleOwner:
		return errs.New(errs.Forbidden, "only the room's owner removes other members")
	}
	if err := s.Store.Rooms.RemoveMember(r.Context(), me.RoomID, target); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// member checks that the caller is a member of the room; a non-member gets
// the same 404 as for a missing room.
func (s *Server) member(r *http.Request) (room.Member, error) {
	roomID := r.PathValue("roomId")
	m, err := s.Store.Rooms.GetMember(r.Context(), roomID, identity(r.Context()).UserID)
	if errs.Is(err, errs.NotFound) {
		return m, errs.New(errs.NotFound, "room %s not found", roomID)
	}
	return m, err
}

func (s *Server) getRoom(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Rooms.GetRoom(r.Context(), r.PathValue("roomId")))
}

func (s *Server) myRooms(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Rooms.ListUserRooms(r.Context(), identity(r.Context()).UserID, p))
}

type addMemberRequest struct {
	UserID string `json:"userId"`
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r) // the owner (the route's access)
	var req addMemberRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if !auth.ValidUserID(req.UserID) {
		return errs.Field("userId", auth.UserIDRule)
	}
	m := room.Member{RoomID: me.RoomID, UserID: req.UserID, Role: room.RoleMember, JoinedAt: store.Timestamp(s.Now())}
	err := s.Store.Rooms.AddMember(r.Context(), m)
	if errs.Is(err, errs.Conflict) {
		// A member already (the owner's retry, say): the same success,
		// with the membership as it is.
		if m, err = s.Store.Rooms.GetMember(r.Context(), me.RoomID, req.UserID); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, m)
	return nil
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Rooms.ListMembers(r.Context(), me.RoomID, p))
}

type putCriteriaRequest struct {
	Criteria *room.Criteria `json:"criteria"`
	Weights  *room.Weights  `json:"weights"`
	Source   string         `json:"source"`
}

func validateCriteria(req putCriteriaRequest) error {
	var fs []errs.FieldError
	add := func(f, reason string) { fs = append(fs, errs.FieldError{Field: f, Reason: reason}) }
	if req.Criteria == nil {
		return errs.Field("criteria", "is required")
	}
	c := *req.Criteria
	checkSet := func(name string, v []string) {
		if len(v) > maxSetEntries {
			add("criteria."+name, fmt.Sprintf("must have at most %d entries", maxSetEntries))
		}
		for i, e := range v {
			checkText(&fs, fmt.Sprintf("criteria.%s[%d]", name, i), e, true, maxSetEntry)
		}
	}
	checkSet("locations", c.Locations)
	checkSet("features", c.Features)
	nonNeg := func(name string, v *float64) {
		if v != nil && *v < 0 {
			add("criteria."+name, "must not be negative")
		}
	}
	nonNeg("priceMin", c.PriceMin)
	nonNeg("priceMax", c.PriceMax)
	nonNeg("roomsMin", c.RoomsMin)
	nonNeg("roomsMax", c.RoomsMax)
	nonNeg("areaMin", c.AreaMin)
	if c.PriceMin != nil && c.PriceMax != nil && *c.PriceMin > *c.PriceMax {
		add("criteria.priceMin", "must not exceed priceMax")
	}
	if c.RoomsMin != nil && c.RoomsMax != nil && *c.RoomsMin > *c.RoomsMax {
		add("criteria.roomsMin", "must not exceed roomsMax")
	}
	if w := req.Weights; w != nil {
		for _, name := range room.CriterionNames {
			if v := w.Of(name); v < 0 || v > room.MaxWeight {
				add("weights."+name, "must be from 0 to 5")
			}
		}
	}
	if req.Source != "" && req.Source != room.SourceManual && req.Source != room.SourceAIProposed {
		add("source", `must be "manual" or "ai_proposed"`)
	}
	return errs.Fields(fs)
}

func (s *Server) putCriteria(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	var req putCriteriaRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := validateCriteria(req); err != nil {
		return err
	}
	cv := room.CriteriaVersion{RoomID: me.RoomID, UserID: me.UserID, Timestamp: store.Timestamp(s.Now()), Criteria: *req.Criteria, Source: req.Source}
	if req.Weights != nil {
		cv.Weights = *req.Weights
	}
	if cv.Source == "" {
		cv.Source = room.SourceManual
	}
	return reply(w, http.StatusCreated)(s.Store.Rooms.PutCriteria(r.Context(), cv))
}

func (s *Server) listCriteria(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	p, err := page(r)
	if err != nil {
		return err
	}
	userID := r.URL.Query().Get("userId")
	if userID != "" && !auth.ValidUserID(userID) {
		return errs.Field("userId", auth.UserIDRule)
	}
	return replyPage(w)(s.Store.Rooms.ListCriteria(r.Context(), me.RoomID, userID, p))
}

// latestCriteria returns each member's latest criteria version (members
// without criteria are left out), or one user's with ?userId=.
func (s *Server) latestCriteria(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	if userID := r.URL.Query().Get("userId"); userID != "" {
		if !auth.ValidUserID(userID) {
			return errs.Field("userId", auth.UserIDRule)
		}
		cv, err := s.Store.Rooms.LatestCriteria(r.Context(), me.RoomID, userID)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, cv)
		return nil
	}
	var out []room.CriteriaVersion
	cursor := ""
	for {
		ms, next, err := s.Store.Rooms.ListMembers(r.Context(), me.RoomID, store.Page{Limit: store.MaxLimit, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, m := range ms {
			cv, err := s.Store.Rooms.LatestCriteria(r.Context(), me.RoomID, m.UserID)
			if errs.Is(err, errs.NotFound) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, cv)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	return replyPage(w)(out, "", nil)
}

func (s *Server) combined(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	return reply(w, http.StatusOK)(s.Store.Rooms.LatestCombined(r.Context(), me.RoomID))
}

func (s *Server) compatibility(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	return reply(w, http.StatusOK)(s.Store.Rooms.LatestCompatibility(r.Context(), me.RoomID))
}
