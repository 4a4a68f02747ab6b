package api

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

var (
	brandPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	externalIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$`)
)

const (
	brandRule      = "1-40 characters: lower-case letters, digits and - (e.g. homegate)"
	externalIDRule = "1-100 characters: letters, digits and . _ : -"
	maxTitle       = 300
	maxLocation    = 200
	maxURL         = 2000
)

type addListingRequest struct {
	SourceBrand string   `json:"sourceBrand"`
	ExternalID  string   `json:"externalId"`
	Title       string   `json:"title"`
	Location    string   `json:"location"`
	URL         string   `json:"url"`
	Price       *float64 `json:"price"`
	Rooms       *float64 `json:"rooms"`
	Area        *float64 `json:"area"`
}

func (req addListingRequest) validate() error {
	var fs []errs.FieldError
	add := func(f, reason string) { fs = append(fs, errs.FieldError{Field: f, Reason: reason}) }
	if !brandPattern.MatchString(req.SourceBrand) {
		add("sourceBrand", brandRule)
	}
	if req.ExternalID != "" && !externalIDPattern.MatchString(req.ExternalID) {
		add("externalId", externalIDRule)
	}
	checkText(&fs, "title", req.Title, true, maxTitle)
	checkText(&fs, "location", req.Location, true, maxLocation)
	if req.URL != "" {
		u, err := url.Parse(req.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(req.URL) > maxURL {
			add("url", "must be an absolute http(s) URL of at most 2000 characters")
		}
	}
	for _, n := range []struct {
		name string
		v    *float64
	}{{"price", req.Price}, {"rooms", req.Rooms}, {"area", req.Area}} {
		if n.v != nil && *n.v < 0 {
			add(n.name, "must not be negative")
		}
	}
	return errs.Fields(fs)
}

// addListing pins a listing (any member). The same sourceBrand+externalId
// twice in one room is a 409 naming the existing listing.
func (s *Server) addListing(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	var req addListingRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	now := store.Timestamp(s.Now())
	l := room.Listing{
		ListingID: s.NewID(), RoomID: me.RoomID, SourceBrand: req.SourceBrand, ExternalID: req.ExternalID,
		Title: strings.TrimSpace(req.Title), Location: strings.TrimSpace(req.Location), URL: req.URL,
		Price: req.Price, Rooms: req.Rooms, Area: req.Area, Status: room.StatusUnseen, SeenBy: []string{},
		AddedAt: now, AddedByUserID: me.UserID, UpdatedAt: now, UpdatedByUserID: me.UserID,
	}
	if err := s.Store.Rooms.AddListing(r.Context(), l); err != nil {
		return err
	}
	return created(w, "/rooms/"+me.RoomID+"/listings/"+l.ListingID, l)
}

func (s *Server) getListing(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	return reply(w, http.StatusOK)(s.Store.Rooms.GetListing(r.Context(), me.RoomID, r.PathValue("listingId")))
}

// listListings lists a room's listings, all or ?status= (GSI2).
func (s *Server) listListings(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	p, err := page(r)
	if err != nil {
		return err
	}
	if st := room.Status(r.URL.Query().Get("status")); st != "" {
		if !st.Valid() {
			return errs.Field("status", statusRule)
		}
		return replyPage(w)(s.Store.Rooms.ListListingsByStatus(r.Context(), me.RoomID, st, p))
	}
	return replyPage(w)(s.Store.Rooms.ListListings(r.Context(), me.RoomID, p))
}

// findListing finds a listing by ?sourceBrand=&externalId= (GSI1).
func (s *Server) findListing(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	q := r.URL.Query()
	var fs []errs.FieldError
	if !brandPattern.MatchString(q.Get("sourceBrand")) {
		fs = append(fs, errs.FieldError{Field: "sourceBrand", Reason: brandRule})
	}
	if !externalIDPattern.MatchString(q.Get("externalId")) {
		fs = append(fs, errs.FieldError{Field: "externalId", Reason: externalIDRule})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	return reply(w, http.StatusOK)(s.Store.Rooms.FindListingByExternalID(r.Context(), me.RoomID, q.Get("sourceBrand"), q.Get("externalId")))
}

var statusRule = func() string {
	names := make([]string, len(room.Statuses))
	for i, st := range room.Statuses {
		names[i] = string(st)
	}
	return "must be one of " + strings.Join(names, ", ")
}()

type setStatusRequest struct {
	Status room.Status `json:"status"`
}

// setStatus moves a listing along its lifecycle (room.CanMove); an illegal
// move is a 409 with the reason.
func (s *Server) setStatus(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	var req setStatusRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if !req.Status.Valid() {
		return errs.Field("status", statusRule)
	}
	l, err := s.listing(r, me.RoomID)
	if err != nil {
		return err
	}
	if l.Status == req.Status {
		// Already so (a client's retry, say): the same success, nothing
		// written.
		return reply(w, http.StatusOK)(l, nil)
	}
	if err := room.CanMove(l.Status, req.Status); err != nil {
		return errs.New(errs.Conflict, "%s", err.Error())
	}
	return reply(w, http.StatusOK)(s.Store.Rooms.SetListingStatus(r.Context(), l, req.Status, me.UserID, store.Timestamp(s.Now()), ""))
}

// listing is the room's listing {listingId}: as read with the caller's
// membership when it was (oneWrite), else read now.
func (s *Server) listing(r *http.Request, roomID string) (room.Listing, error) {
	id := r.PathValue("listingId")
	if lr := callerGrant(r).listing; lr != nil {
		if !lr.found {
			return room.Listing{}, errs.New(errs.NotFound, "listing %s not found", id)
		}
		return lr.listing, nil
	}
	return s.Store.Rooms.GetListing(r.Context(), roomID, id)
}

// markSeen records that the caller saw the listing (UNSEEN becomes SEEN).
func (s *Server) markSeen(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	l, err := s.listing(r, me.RoomID)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK)(s.Store.Rooms.MarkSeen(r.Context(), l, me.UserID, store.Timestamp(s.Now())))
}

func (s *Server) compatibilityHistory(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Rooms.ListCompatibility(r.Context(), me.RoomID, p))
}

// activities lists the room's feed newest first, or with ?after=<timestamp>
// the entries created after it, oldest first (for polling). Expired entries
// are never returned.
func (s *Server) activities(w http.ResponseWriter, r *http.Request) error {
	me := callerMember(r)
	p, err := page(r)
	if err != nil {
		return err
	}
	now := s.Now()
	var as []room.Activity
	var next string
	if after := r.URL.Query().Get("after"); after != "" {
		t, perr := store.ParseTimestamp(after)
		if perr != nil {
			return errs.Field("after", "must be a timestamp like 2026-01-02T15:04:05.000Z (an activity's createdAt)")
		}
		as, next, err = s.Store.Rooms.ActivitiesAfter(r.Context(), me.RoomID, store.Timestamp(t), now, p)
	} else {
		as, next, err = s.Store.Rooms.ListActivities(r.Context(), me.RoomID, now, p)
	}
	if err != nil {
		return err
	}
	return replyPage(w)(as, next, nil)
}
