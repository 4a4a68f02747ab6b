package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
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
	// Observe, when set, is told each request's route pattern ("unmatched"
	// when none matched), status and duration (the writer's metrics).
	Observe func(route string, status int, d time.Duration)
	// DevTokens, when set, serves POST /dev/tokens (local stack only).
	DevTokens *auth.DevTokens
	// Tokens verifies the token a WebSocket $connect carries in its query
	// string (Chat): Cognito's keys in AWS, the dev tokens locally.
	Tokens auth.Verifier
	// IdempotencyHold is how long a request with an Idempotency-Key holds
	// its key while it runs (default DefaultIdempotencyHold): longer than
	// any request takes; a repeat meanwhile is a 409 with Retry-After, and
	// after it a repeat runs the request again (its first run crashed).
	IdempotencyHold time.Duration
	// ChatConnectionsPerUser bounds a user's open chat connections
	// (default DefaultChatConnectionsPerUser); ChatFrames the frames one
	// connection sends (default DefaultChatFrames).
	ChatConnectionsPerUser int
	ChatFrames             store.FrameLimit
	// ChatConnectsPerMinute bounds the connects of one user in a clock
	// minute (default DefaultChatConnectsPerMinute), so closing and
	// opening connections does not buy a user fresh frame budgets without
	// end.
	ChatConnectsPerMinute int
	// ConnectionAlive asks the chat's gateway whether a connection is open
	// (API Gateway's GetConnection; locally gateway.Local.Alive): a user at
	// ChatConnectionsPerUser has the connections it does not know dropped
	// (store.ConnLimit.Alive: a $connect that committed but was refused).
	// nil: none is dropped so.
	ConnectionAlive func(ctx context.Context, connectionID string) (bool, error)
}

// The chat's default limits: a person with a few devices and tabs, typing
// fast; a client past them gets a 429 handshake or an error frame.
const DefaultChatConnectionsPerUser = 20

// DefaultChatConnectsPerMinute is 60 connects per user per clock minute.
const DefaultChatConnectsPerMinute = 60

// DefaultChatFrames is 50 frames per 10 seconds per connection.
var DefaultChatFrames = store.FrameLimit{Frames: 50, Per: 10 * time.Second}

type ctxKey struct{}

func identity(ctx context.Context) auth.Identity {
	id, _ := ctx.Value(ctxKey{}).(auth.Identity)
	return id
}

// access says who may call a route. The route wrapper enforces it before
// the request's input is validated or its handler runs (authorization
// before input: a room's existence never shows through a 400), and hands
// the handler what it found (callerMember); a handler checks only what
// depends on the request itself (the owner removes others, a member only
// themself).
type access int

const (
	public        access = iota // no token
	devOnly                     // no token; served only when Server.DevTokens is set
	user                        // any authenticated user
	member                      // a member of the room {roomId}
	owner                       // the owner of the room {roomId}
	admin                       // a user of the admins group
	resource                    // the owner or a collaborator of the resource {type}/{id}
	resourceOwner               // the owner of the resource {type}/{id}
	inviteParty                 // the inviter or the invitee of the invite {inviteId}
	invitee                     // the invitee of the invite {inviteId}
	commenter                   // who sees the comment {commentId}: its resource's owner and collaborators
	commentAuthor               // the author of the comment {commentId}
	recipeAuthor                // the author of the recipe {recipeId} (a change; a delete's own condition checks it)
)

type grantKey struct{}

// grant is what the route wrapper found when it checked the caller's
// access: the handler's starting point.
type grant struct {
	member   room.Member    // member, owner
	resource store.Access   // resource, resourceOwner
	invite   collab.Invite  // inviteParty, invitee
	comment  collab.Comment // commenter, commentAuthor
	// listing is the room's listing {listingId} when it was read with
	// the membership (oneWrite's listing routes): nil when not read.
	listing *listingRead
}

// listingRead is a listing as read with the caller's membership.
type listingRead struct {
	listing room.Listing
	found   bool
}

func callerGrant(r *http.Request) grant {
	g, _ := r.Context().Value(grantKey{}).(grant)
	return g
}

// callerMember is the caller's membership of the room {roomId}, as the
// route wrapper found it for a member or owner route.
func callerMember(r *http.Request) room.Member { return callerGrant(r).member }

// authorize enforces a route's access for an authenticated caller, and
// returns the request with what it found.
//
// A path whose resource type is not one is a 400 naming type.
func (s *Server) authorize(r *http.Request, a access) (*http.Request, error) {
	var g grant
	var err error
	me := identity(r.Context()).UserID
	switch a {
	case public, devOnly, user:
		return r, nil
	case admin:
		return r, requireAdmin(r)
	case member, owner:
		g.member, err = s.member(r)
		if err == nil && a == owner && g.member.Role != room.RoleOwner {
			err = errs.New(errs.Forbidden, "only the room's owner may do this")
		}
	case resource, resourceOwner, inviteParty, invitee:
		if _, err := resourceType(r); err != nil {
			return r, err // a 400 naming type: no resource to speak of
		}
		switch a {
		case resource, resourceOwner:
			g.resource, err = s.access(r)
			if err == nil && a == resourceOwner && !g.resource.Owner {
				err = errs.New(errs.Forbidden, "only the %s's owner invites and sees its invites", g.resource.Resource.ResourceType)
			}
		default:
			var isInvitee bool
			g.invite, isInvitee, err = s.invite(r)
			if err == nil && a == invitee && !isInvitee {
				err = errs.New(errs.Forbidden, "only the invitee accepts or declines an invite")
			}
		}
	case commenter, commentAuthor:
		g.comment, _, err = s.comment(r)
		if err == nil && a == commentAuthor && g.comment.UserID != me {
			err = errs.New(errs.Forbidden, "only the comment's author edits or deletes it")
		}
	case recipeAuthor:
		err = s.recipeAuthor(r)
	}
	if err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), grantKey{}, g)), nil
}

// route is one entry of the route table.
type route struct {
	pattern string // a net/http pattern, "METHOD /path/{param}"
	access  access
	handle  func(*Server, http.ResponseWriter, *http.Request) error
	commit  commit // how its change commits (onewrite.go)
}

// routes is the route table, in one place: Handler registers it, and
// openapi.yaml has exactly one operation per entry (openapi_test.go checks
// both ways). Its columns: the pattern, who may call it (access), the
// handler, and how its change commits (commit: ordinary, or one of the
// one-transaction ways of onewrite.go).
var routes = []route{
	{"GET /healthz", public, (*Server).health, ordinary},
	{"GET /openapi.yaml", public, (*Server).openapiYAML, ordinary},
	{"GET /openapi.json", public, (*Server).openapiJSON, ordinary},
	{"POST /dev/tokens", devOnly, (*Server).mintToken, ordinary},
	{"POST /rooms", user, (*Server).createRoom, ordinary},
	{"GET /rooms/{roomId}", member, (*Server).getRoom, ordinary},
	{"GET /me/rooms", user, (*Server).myRooms, ordinary},
	{"POST /rooms/{roomId}/members", owner, (*Server).addMember, foldMember},
	{"GET /rooms/{roomId}/members", member, (*Server).listMembers, ordinary},
	{"PUT /rooms/{roomId}/criteria", member, (*Server).putCriteria, foldMember},
	{"GET /rooms/{roomId}/criteria", member, (*Server).listCriteria, ordinary},
	{"GET /rooms/{roomId}/criteria/latest", member, (*Server).latestCriteria, ordinary},
	{"GET /rooms/{roomId}/combined-criteria", member, (*Server).combined, ordinary},
	{"GET /rooms/{roomId}/compatibility", member, (*Server).compatibility, ordinary},
	{"PATCH /rooms/{roomId}", owner, (*Server).updateRoom, ordinary},
	{"DELETE /rooms/{roomId}", owner, (*Server).deleteRoom, ordinary},
	{"GET /rooms/{roomId}/members/{userId}", member, (*Server).getMember, ordinary},
	{"DELETE /rooms/{roomId}/members/{userId}", member, (*Server).removeMember, oneTx},
	{"POST /rooms/{roomId}/listings", member, (*Server).addListing, foldMember},
	{"GET /rooms/{roomId}/listings", member, (*Server).listListings, ordinary},
	{"GET /rooms/{roomId}/listings/lookup", member, (*Server).findListing, ordinary},
	{"GET /rooms/{roomId}/listings/{listingId}", member, (*Server).getListing, ordinary},
	{"PUT /rooms/{roomId}/listings/{listingId}/status", member, (*Server).setStatus, readListing},
	{"POST /rooms/{roomId}/listings/{listingId}/seen", member, (*Server).markSeen, readListing},
	{"GET /rooms/{roomId}/compatibility/history", member, (*Server).compatibilityHistory, ordinary},
	{"GET /rooms/{roomId}/activities", member, (*Server).activities, ordinary},

	{"POST /resources", user, (*Server).createResource, oneTx},
	{"GET /resources/{type}/{id}", resource, (*Server).getResource, ordinary},
	{"POST /resources/{type}/{id}/invites", resourceOwner, (*Server).createInvite, foldResource},
	{"GET /resources/{type}/{id}/invites", resourceOwner, (*Server).listInvites, ordinary},
	{"GET /resources/{type}/{id}/invites/{inviteId}", inviteParty, (*Server).getInvite, ordinary},
	{"POST /resources/{type}/{id}/invites/{inviteId}/accept", invitee, respondInvite(true), ordinary},
	{"POST /resources/{type}/{id}/invites/{inviteId}/decline", invitee, respondInvite(false), ordinary},
	{"GET /resources/{type}/{id}/collaborators", resource, (*Server).listCollaborators, ordinary},
	{"GET /resources/{type}/{id}/collaborators/{userId}", resource, (*Server).getCollaborator, ordinary},
	{"POST /resources/{type}/{id}/comments", resource, (*Server).createComment, foldResource},
	{"GET /resources/{type}/{id}/comments", resource, (*Server).listComments, ordinary},
	{"GET /comments/{commentId}", commenter, (*Server).getComment, ordinary},
	{"PATCH /comments/{commentId}", commentAuthor, (*Server).editComment, ordinary},
	{"DELETE /comments/{commentId}", commentAuthor, (*Server).deleteComment, ordinary},
	{"GET /comments/{commentId}/replies", commenter, (*Server).listReplies, ordinary},
	{"GET /comments/{commentId}/reactions", commenter, (*Server).listReactions, ordinary},
	{"PUT /comments/{commentId}/reactions/{emoji}", commenter, (*Server).addReaction, foldComment},
	{"DELETE /comments/{commentId}/reactions/{emoji}", commenter, (*Server).removeReaction, foldComment},
	{"GET /comments/{commentId}/reactions/{emoji}/users/{userId}", commenter, (*Server).getReaction, ordinary},
	{"GET /me/invites", user, (*Server).myInvites, ordinary},
	{"GET /me/collaborations", user, (*Server).myCollaborations, ordinary},
	{"GET /me/notification-preferences", user, (*Server).getPreferences, ordinary},
	{"PUT /me/notification-preferences", user, (*Server).putPreferences, ordinary},
	{"GET /me/profile", user, (*Server).getProfile, ordinary},
	{"PUT /me/profile", user, (*Server).putProfile, ordinary},
	{"GET /me/notifications", user, (*Server).myNotifications, ordinary},

	{"GET /me/cooking-preferences", user, (*Server).getCookingPreferences, ordinary},
	{"PUT /me/cooking-preferences", user, (*Server).putCookingPreferences, ordinary},
	{"POST /ingredients", user, (*Server).createIngredient, ordinary},
	{"GET /ingredients", user, (*Server).listIngredients, ordinary},
	{"GET /ingredients/{ingredientId}", user, (*Server).getIngredient, ordinary},
	{"GET /users/{userId}/profile", user, (*Server).userProfile, ordinary},

	// Chat (seed 002): the WebSocket API is Chat; these are its history.
	{"GET /chat/rooms/{roomId}", user, (*Server).getChatRoom, ordinary},
	{"GET /chat/rooms/{roomId}/messages", user, (*Server).chatMessages, ordinary},
	{"POST /recipes", user, (*Server).createRecipe, ordinary},
	{"GET /recipes", user, (*Server).listRecipes, ordinary},
	{"GET /recipes/{recipeId}", user, (*Server).getRecipe, ordinary},
	{"PUT /recipes/{recipeId}", recipeAuthor, (*Server).putRecipe, ordinary},
	// the author's: the delete's own condition checks it, without a read
	{"DELETE /recipes/{recipeId}", user, (*Server).deleteRecipe, ordinary},
	{"GET /cooking/recent", user, (*Server).recentCookings, ordinary},
	{"GET /cooking/trending", user, (*Server).trendingRecipes, ordinary},
	{"POST /me/cooking-history", user, (*Server).recordCooking, oneTx},
	{"GET /me/cooking-history", user, (*Server).listHistory, ordinary},
	{"GET /me/cooking-history/{historyId}", user, (*Server).getHistory, ordinary},
	{"PATCH /me/cooking-history/{historyId}", user, (*Server).patchHistory, ordinary},
	{"DELETE /me/cooking-history/{historyId}", user, (*Server).deleteHistory, ordinary},
	{"GET /me/cooking-favorites", user, (*Server).listFavorites, ordinary},
	{"POST /me/cooking-sessions", user, (*Server).startSession, ordinary},
	{"GET /me/cooking-sessions/{sessionId}", user, (*Server).getSession, ordinary},
	{"PUT /me/cooking-sessions/{sessionId}/step", user, (*Server).setSessionStep, ordinary},
	{"POST /me/cooking-sessions/{sessionId}/complete", user, (*Server).completeSession, ordinary},
	{"POST /me/cooking-sessions/{sessionId}/abandon", user, (*Server).abandonSession, ordinary},
	{"GET /me/suggestions", user, (*Server).mySuggestions, ordinary},
	// Locations (seed 001): reads for any user, writes for admins.
	{"POST /locations", admin, (*Server).createLocation, oneTx},
	{"GET /locations", user, (*Server).listLocations, ordinary},
	{"GET /locations/by-code/{code}", user, (*Server).getLocationByCode, ordinary},
	{"GET /locations/{locationId}", user, (*Server).getLocation, ordinary},
	{"PATCH /locations/{locationId}", admin, (*Server).updateLocation, oneTx},
	{"DELETE /locations/{locationId}", admin, (*Server).deleteLocation, ordinary},
	{"PUT /locations/{locationId}/code", admin, (*Server).changeLocationCode, ordinary},
}

// Handler returns the routes. Each request is answered in this order: an
// unknown route is a 404 or 405 (the catch-all), then the token is checked
// (401), then the request is validated against openapi.yaml (400), then the
// handler runs. It panics if the embedded openapi.yaml does not load (a
// build defect that openapi_test.go catches).
func (s *Server) Handler() http.Handler {
	spec, err := loadSpec()
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	for _, rt := range routes {
		if rt.access == devOnly && s.DevTokens == nil {
			continue
		}
		op, err := spec.route(rt.pattern)
		if err != nil {
			panic(err)
		}
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if p, ok := r.Context().Value(routeKey{}).(*string); ok {
				*p = rt.pattern
			}
			// The DynamoDB calls of the request count under its route.
			r = r.WithContext(ddb.WithLabel(r.Context(), rt.pattern))
			var err error
			if rt.access >= user {
				var id auth.Identity
				if id, err = s.Auth.Authenticate(r); err == nil {
					r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
				}
			}
			run := func(s *Server, w http.ResponseWriter, r *http.Request) error {
				r, err := s.validate(r, rt, op)
				if err != nil {
					return err
				}
				return rt.handle(s, w, r)
			}
			var key string
			if err == nil && rt.access >= user && mutating(r.Method) {
				key, err = idempotencyKey(r)
			}
			switch {
			case err != nil:
			case rt.commit != ordinary:
				err = s.oneWrite(w, r, rt, op, key, run)
			case key != "":
				err = s.idempotent(w, r, key, run)
			default:
				err = run(s, w, r)
			}
			if err != nil {
				writeError(w, s.log(), r, err)
			}
		})
	}
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
		rec := &recorder{ResponseWriter: w}
		if s.Observe != nil {
			start, route := time.Now(), "unmatched"
			r = r.WithContext(context.WithValue(r.Context(), routeKey{}, &route))
			defer func() { s.Observe(route, rec.status(), time.Since(start)) }()
		}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			// A bug in one request must not take the process (in Lambda,
			// the execution environment and its other requests) down.
			s.log().Error("request panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, s.log(), r, errs.New(errs.Internal, "handler panicked: %v", p))
			}
		}()
		mux.ServeHTTP(rec, r)
	})
}

// routeKey holds, in a request's context, where the route's pattern goes.
type routeKey struct{}

// recorder notes whether the response has begun, and its status.
type recorder struct {
	http.ResponseWriter
	wrote bool
	code  int
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.code = status
	}
	r.wrote = true
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
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

// reply writes a handler's result as JSON with status, or returns its
// error: return reply(w, http.StatusOK)(s.Store.GetRoom(ctx, id)).
func reply(w http.ResponseWriter, status int) func(any, error) error {
	return func(v any, err error) error {
		if err != nil {
			return err
		}
		writeJSON(w, status, v)
		return nil
	}
}

// created answers 201 with v and its Location.
func created(w http.ResponseWriter, location string, v any) error {
	w.Header().Set("Location", location)
	writeJSON(w, http.StatusCreated, v)
	return nil
}

// replyPage writes one page of a list ({items, nextCursor}; a nil slice
// as []), or returns the error: return replyPage(w)(s.Store.ListX(…)).
func replyPage(w http.ResponseWriter) func(any, string, error) error {
	return func(items any, next string, err error) error {
		if err != nil {
			return err
		}
		if v := reflect.ValueOf(items); v.Kind() == reflect.Slice && v.IsNil() {
			items = reflect.MakeSlice(v.Type(), 0, 0).Interface()
		}
		writeJSON(w, http.StatusOK, struct {
			Items      any    `json:"items"`
			NextCursor string `json:"nextCursor,omitempty"`
		}{items, next})
		return nil
	}
}
