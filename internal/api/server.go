package api

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
)

// Server is the writer's API.
type Server struct {
	Store  *store.Store
	Auth   auth.Authenticator
	Logger *slog.Logger
	// Now and NewID are injected (tests fix them; cmd/writer passes the
	// clock and ULIDs).
	Now   func() time.Time
	NewID func() string
	// DevTokens, when set, serves POST /dev/tokens (local stack only).
	DevTokens *auth.DevTokens
}

type ctxKey struct{}

func identity(ctx context.Context) auth.Identity {
	id, _ := ctx.Value(ctxKey{}).(auth.Identity)
	return id
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	authed := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			id, err := s.Auth.Authenticate(r)
			if err == nil {
				r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
				err = h(w, r)
			}
			if err != nil {
				writeError(w, s.log(), r, err)
			}
		})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	if s.DevTokens != nil {
		mux.HandleFunc("POST /dev/tokens", func(w http.ResponseWriter, r *http.Request) {
			if err := s.mintToken(w, r); err != nil {
				writeError(w, s.log(), r, err)
			}
		})
	}
	authed("POST /rooms", s.createRoom)
	authed("GET /rooms/{roomId}", s.getRoom)
	authed("GET /me/rooms", s.myRooms)
	authed("POST /rooms/{roomId}/members", s.addMember)
	authed("GET /rooms/{roomId}/members", s.listMembers)
	authed("PUT /rooms/{roomId}/criteria", s.putCriteria)
	authed("GET /rooms/{roomId}/criteria", s.listCriteria)
	authed("GET /rooms/{roomId}/criteria/latest", s.latestCriteria)
	authed("GET /rooms/{roomId}/combined-criteria", s.combined)
	authed("GET /rooms/{roomId}/compatibility", s.compatibility)
	authed("PATCH /rooms/{roomId}", s.updateRoom)
	authed("DELETE /rooms/{roomId}", s.deleteRoom)
	authed("GET /rooms/{roomId}/members/{userId}", s.getMember)
	authed("DELETE /rooms/{roomId}/members/{userId}", s.removeMember)
	authed("POST /rooms/{roomId}/listings", s.addListing)
	authed("GET /rooms/{roomId}/listings", s.listListings)
	authed("GET /rooms/{roomId}/listings/lookup", s.findListing)
	authed("GET /rooms/{roomId}/listings/{listingId}", s.getListing)
	authed("PUT /rooms/{roomId}/listings/{listingId}/status", s.setStatus)
	authed("POST /rooms/{roomId}/listings/{listingId}/seen", s.markSeen)
	authed("GET /rooms/{roomId}/compatibility/history", s.compatibilityHistory)
	authed("GET /rooms/{roomId}/activities", s.activities)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, s.log(), r, errs.New(errs.MethodNotAllowed, "%s %s: allowed methods are %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		writeError(w, s.log(), r, errs.New(errs.NotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		mux.ServeHTTP(w, r)
	})
}

// allowed lists the methods that have a route for r's path.
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// page reads ?limit= and ?cursor=.
func page(r *http.Request) (store.Page, error) {
	p := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxLimit {
			return p, errs.Field("limit", "must be an integer from 1 to 100")
		}
		p.Limit = int32(n)
	}
	return p, nil
}

// List is a page of results.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

func list[T any](items []T, next string) List[T] {
	if items == nil {
		items = []T{}
	}
	return List[T]{Items: items, NextCursor: next}
}
