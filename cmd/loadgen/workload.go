package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// share is one write kind of the mix and its weight.
type share struct {
	name   string
	weight int
}

// The writes of the mixed workload, with their weights: what share of the
// writes each one is. Search rooms (seed 000) make most of them, then
// collaboration (004), then locations (001).
var mix = []share{
	{"criteria", 14},
	{"listing", 12},
	{"status", 14},
	{"join", 3},
	{"leave", 3},
	{"comment", 14},
	{"react", 14},
	{"unreact", 5},
	{"invite", 2},
	{"location", 4},
	{"relocate", 3},
	{"cook", 10},
	{"rate", 3},
	{"message", 8},
}

// roomsCommentsLeftOut are the write kinds -mix rooms-comments leaves out.
var roomsCommentsLeftOut = []string{"invite", "location", "relocate", "cook", "rate", "message"}

// op is one write and what the stream must derive from it.
type op struct {
	name  string
	route string // the route's pattern, for latency by route
	phase int
	sent  time.Time
	done  time.Time // when the 2xx came
	// The core item the write changed and how (INSERT, MODIFY, REMOVE): its
	// stream record links the write to what it derives.
	key    store.Key
	change string

	// Expectations.
	combined, compat string // observation keys, "" if none
	activity         bool
	counts           bool
	cookCounts       bool     // a cooking change's counts (its marker)
	hot              bool     // a change of the hot recipe's counts
	untracked        bool     // nothing to link on the stream (a chat message)
	notes            int      // in-app notifications, one per recipient
	mails            []string // idempotency key formats, %s = the source event id

	// Set once the core record is seen.
	linked bool
	link   link
	lag    map[string]time.Duration
}

// client calls the writer.
type client struct {
	base string
	http *http.Client
	// retries counts the tries sent again.
	retries atomic.Int64
}

type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

// retryFor bounds how long a call keeps retrying a writer that is down
// or busy (a restart, a request of the same key still held).
const retryFor = 45 * time.Second

// call sends a request with a bearer token and decodes a JSON answer into
// out. As a client should, it retries what may not have been done: a
// connection that failed (the writer restarting), a 5xx, and a 409 with
// Retry-After (the same request still running); a creating or changing
// call carries an Idempotency-Key, the same on every try, so a retry never
// does it twice.
func (c *client) call(ctx context.Context, method, path, token string, body, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var key string
	if method != http.MethodGet && token != "" {
		k := make([]byte, 16)
		_, _ = crand.Read(k)
		key = hex.EncodeToString(k)
	}
	deadline := time.Now().Add(retryFor)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		b, retryAfter, err := c.once(ctx, method, path, token, key, data)
		if err == nil {
			if out != nil && len(b) > 0 {
				return json.Unmarshal(b, out)
			}
			return nil
		}
		var ae *apiError
		retry := !errors.As(err, &ae) || ae.status >= 500 || (ae.status == http.StatusConflict && retryAfter > 0)
		if !retry || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		c.retries.Add(1)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(max(wait, retryAfter)):
		}
	}
}

// once sends a request once.
func (c *client) once(ctx context.Context, method, path, token, key string, data []byte) ([]byte, time.Duration, error) {
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode/100 != 2 {
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return nil, time.Duration(ra) * time.Second, &apiError{resp.StatusCode, string(b)}
	}
	return b, 0, nil
}

// world is what the workload knows of the table: it is the only writer, so
// it can say what each write must derive.
type world struct {
	c      *client
	tokens map[string]string // user → dev token
	admin  string

	rooms     []*roomState
	resources []*resourceState
	locations []*locationState
	cooking   cookState
	chat      *chatMix
	noChat    bool // the mix without chat messages (-skip message)

	mu       sync.Mutex
	nextUser int
	cooks    int // users who cook (0: cookUsers)
	nextLoc  int
}

// A room's core members put criteria during set-up and never leave, so every
// later criteria version and join derives a combined criteria and a
// compatibility snapshot; extras join and leave.
type roomState struct {
	mu       sync.Mutex
	id       string
	owner    string
	core     []string
	extras   []string
	listings []*listingState
	rng      *rand.Rand
}

type listingState struct {
	id     string
	status room.Status
}

type resourceState struct {
	mu      sync.Mutex
	id      string
	owner   string
	collabs []string
	// comments are the newest 20 (for reactions); made counts them all
	comments []*commentState
	made     int
	rng      *rand.Rand
}

type commentState struct {
	id, author string
	reactions  map[string]bool // user + " " + emoji
}

type locationState struct {
	mu  sync.Mutex
	id  string
	rng *rand.Rand
	n   int
}

var (
	cities   = []string{"Zurich", "Basel", "Bern", "Geneva", "Lausanne", "Lugano", "Lucerne", "Winterthur"}
	features = []string{"balcony", "lift", "garden", "parking", "quiet", "view"}
	emojis   = []string{"👍", "🎉", "❤️", "🚀", "👀"}
)

func (w *world) token(ctx context.Context, user string) (string, error) {
	w.mu.Lock()
	t, ok := w.tokens[user]
	w.mu.Unlock()
	if ok {
		return t, nil
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := w.c.call(ctx, "POST", "/dev/tokens", "", map[string]any{"userId": user}, &out); err != nil {
		return "", fmt.Errorf("dev token for %s: %w", user, err)
	}
	w.mu.Lock()
	w.tokens[user] = out.Token
	w.mu.Unlock()
	return out.Token, nil
}

func (w *world) freshUser() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextUser++
	return fmt.Sprintf("user-%05d", w.nextUser)
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func criteriaBody(rng *rand.Rand) map[string]any {
	lo := 1000 + 100*rng.IntN(20)
	locs := map[string]bool{}
	for range 1 + rng.IntN(3) {
		locs[pick(rng, cities)] = true
	}
	var ls []string
	for l := range locs {
		ls = append(ls, l)
	}
	c := map[string]any{"locations": ls, "priceMin": lo, "priceMax": lo + 500 + 100*rng.IntN(20), "roomsMin": 1 + rng.IntN(3)}
	if rng.IntN(2) == 0 {
		c["areaMin"] = 40 + 10*rng.IntN(8)
	}
	if rng.IntN(2) == 0 {
		c["features"] = []string{pick(rng, features)}
	}
	return map[string]any{"criteria": c, "weights": map[string]any{"price": rng.IntN(6), "locations": rng.IntN(6)}}
}

// setup creates the rooms, resources and locations the workload writes to.
// Its own writes are not measured.
func (w *world) setup(ctx context.Context, rooms, resources, locations int, seed uint64) error {
	var err error
	if w.admin, err = w.adminToken(ctx); err != nil {
		return err
	}
	for i := range rooms {
		r := &roomState{rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		r.owner = w.freshUser()
		r.core = []string{r.owner}
		for range 1 + r.rng.IntN(2) {
			r.core = append(r.core, w.freshUser())
		}
		tok, err := w.token(ctx, r.owner)
		if err != nil {
			return err
		}
		var created room.Room
		mode := pick(r.rng, []string{"strict", "all", "mixed"})
		if err := w.c.call(ctx, "POST", "/rooms", tok, map[string]any{"name": fmt.Sprintf("load room %d", i), "searchType": "rent", "context": map[string]any{"combineMode": mode}}, &created); err != nil {
			return fmt.Errorf("create room: %w", err)
		}
		r.id = created.RoomID
		for _, u := range r.core[1:] {
			if err := w.c.call(ctx, "POST", "/rooms/"+r.id+"/members", tok, map[string]any{"userId": u}, nil); err != nil {
				return fmt.Errorf("add member: %w", err)
			}
		}
		for _, u := range r.core {
			ut, err := w.token(ctx, u)
			if err != nil {
				return err
			}
			if err := w.c.call(ctx, "PUT", "/rooms/"+r.id+"/criteria", ut, criteriaBody(r.rng), nil); err != nil {
				return fmt.Errorf("put criteria: %w", err)
			}
		}
		w.rooms = append(w.rooms, r)
	}
	for i := range resources {
		res := &resourceState{rng: rand.New(rand.NewPCG(seed, uint64(1_000_000+i)))}
		res.owner = w.freshUser()
		people := []string{res.owner}
		for range 2 + res.rng.IntN(2) {
			people = append(people, w.freshUser())
		}
		for _, u := range people {
			tok, err := w.token(ctx, u)
			if err != nil {
				return err
			}
			if err := w.c.call(ctx, "PUT", "/me/profile", tok, map[string]any{"name": "User " + u, "email": u + "@example.com"}, nil); err != nil {
				return fmt.Errorf("profile: %w", err)
			}
		}
		otok, _ := w.token(ctx, res.owner)
		var created collab.Resource
		if err := w.c.call(ctx, "POST", "/resources", otok, map[string]any{"resourceType": "goal", "title": fmt.Sprintf("load goal %d", i)}, &created); err != nil {
			return fmt.Errorf("create resource: %w", err)
		}
		res.id = created.ResourceID
		for _, u := range people[1:] {
			var inv collab.Invite
			if err := w.c.call(ctx, "POST", "/resources/goal/"+res.id+"/invites", otok, map[string]any{"inviteeId": u}, &inv); err != nil {
				return fmt.Errorf("invite: %w", err)
			}
			utok, _ := w.token(ctx, u)
			if err := w.c.call(ctx, "POST", "/resources/goal/"+res.id+"/invites/"+inv.InviteID+"/accept", utok, nil, nil); err != nil {
				return fmt.Errorf("accept: %w", err)
			}
			res.collabs = append(res.collabs, u)
		}
		w.resources = append(w.resources, res)
	}
	for i := range locations {
		l := &locationState{rng: rand.New(rand.NewPCG(seed, uint64(2_000_000+i)))}
		o, err := w.createLocation(ctx)
		if err != nil {
			return err
		}
		l.id = o.key.PK[len("LOCATION#"):]
		w.locations = append(w.locations, l)
	}
	if err := w.setupCooking(ctx, seed); err != nil {
		return err
	}
	if w.noChat {
		return nil
	}
	return w.setupChat(ctx)
}

func (w *world) adminToken(ctx context.Context) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	if err := w.c.call(ctx, "POST", "/dev/tokens", "", map[string]any{"userId": "load-admin", "groups": []string{"admins"}}, &out); err != nil {
		return "", fmt.Errorf("admin dev token (loadgen needs the local stack's /dev/tokens): %w", err)
	}
	return out.Token, nil
}

// run performs one write of the named kind, on an entity chosen by pick
// (a number the schedule drew), and returns what it must derive.
func (w *world) run(ctx context.Context, name string, pickN uint64) (*op, error) {
	switch name {
	case "criteria", "listing", "status", "join", "leave":
		r := w.rooms[pickN%uint64(len(w.rooms))]
		r.mu.Lock()
		defer r.mu.Unlock()
		return w.roomOp(ctx, r, name)
	case "cook", "rate":
		return w.cookOp(ctx, name, pickN)
	case "message":
		return w.message(ctx, pickN)
	case "comment", "react", "unreact", "invite":
		res := w.resources[pickN%uint64(len(w.resources))]
		res.mu.Lock()
		defer res.mu.Unlock()
		return w.resourceOp(ctx, res, name)
	default:
		if name == "location" {
			return w.createLocation(ctx)
		}
		l := w.locations[pickN%uint64(len(w.locations))]
		l.mu.Lock()
		defer l.mu.Unlock()
		return w.updateLocation(ctx, l)
	}
}

func (w *world) roomOp(ctx context.Context, r *roomState, name string) (*op, error) {
	members := append(append([]string(nil), r.core...), r.extras...)
	switch {
	case name == "status" && len(r.listings) == 0, name == "leave" && len(r.extras) == 0:
		name = "listing"
	case name == "join" && len(r.extras) >= 3:
		name = "leave"
	}
	switch name {
	case "criteria":
		u := pick(r.rng, r.core)
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		o := &op{name: name, route: "PUT /rooms/{roomId}/criteria", change: "INSERT", activity: true}
		var v room.CriteriaVersion
		o.sent = time.Now()
		if err := w.c.call(ctx, "PUT", "/rooms/"+r.id+"/criteria", tok, criteriaBody(r.rng), &v); err != nil {
			return o, err
		}
		o.done = time.Now()
		o.key = store.CriteriaKey(r.id, u, v.Timestamp)
		o.combined, o.compat = "comb:"+store.RoomPK(r.id)+":"+v.Timestamp, "comp:"+store.RoomPK(r.id)+":"+v.Timestamp
		return o, nil
	case "listing":
		u := pick(r.rng, members)
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		body := map[string]any{"sourceBrand": "homegate", "title": "Flat in " + pick(r.rng, cities), "location": pick(r.rng, cities), "price": 1500 + 50*r.rng.IntN(40)}
		if r.rng.IntN(2) == 0 {
			body["externalId"] = fmt.Sprintf("HG-%d", r.rng.Uint64())
		}
		o := &op{name: name, route: "POST /rooms/{roomId}/listings", change: "INSERT", activity: true}
		var l room.Listing
		o.sent = time.Now()
		if err := w.c.call(ctx, "POST", "/rooms/"+r.id+"/listings", tok, body, &l); err != nil {
			return o, err
		}
		o.done = time.Now()
		o.key = store.ListingKey(r.id, l.ListingID)
		r.listings = append(r.listings, &listingState{id: l.ListingID, status: l.Status})
		return o, nil
	case "status":
		l := pick(r.rng, r.listings)
		u := pick(r.rng, members)
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		o := &op{name: name, change: "MODIFY", activity: true, key: store.ListingKey(r.id, l.id)}
		var nl room.Listing
		o.sent = time.Now()
		if l.status == room.StatusUnseen && r.rng.IntN(2) == 0 {
			o.route = "POST /rooms/{roomId}/listings/{listingId}/seen"
			err = w.c.call(ctx, "POST", "/rooms/"+r.id+"/listings/"+l.id+"/seen", tok, nil, &nl)
		} else {
			o.route = "PUT /rooms/{roomId}/listings/{listingId}/status"
			err = w.c.call(ctx, "PUT", "/rooms/"+r.id+"/listings/"+l.id+"/status", tok, map[string]any{"status": pick(r.rng, l.status.Next())}, &nl)
		}
		if err != nil {
			return o, err
		}
		o.done = time.Now()
		l.status = nl.Status
		return o, nil
	case "join":
		u := w.freshUser()
		tok, err := w.token(ctx, r.owner)
		if err != nil {
			return nil, err
		}
		o := &op{name: name, route: "POST /rooms/{roomId}/members", change: "INSERT", activity: true, key: store.MemberKey(r.id, u)}
		var m room.Member
		o.sent = time.Now()
		if err := w.c.call(ctx, "POST", "/rooms/"+r.id+"/members", tok, map[string]any{"userId": u}, &m); err != nil {
			return o, err
		}
		o.done = time.Now()
		o.combined, o.compat = "comb:"+store.RoomPK(r.id)+":"+m.JoinedAt, "comp:"+store.RoomPK(r.id)+":"+m.JoinedAt
		r.extras = append(r.extras, u)
		return o, nil
	default: // leave
		i := r.rng.IntN(len(r.extras))
		u := r.extras[i]
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		o := &op{name: "leave", route: "DELETE /rooms/{roomId}/members/{userId}", change: "REMOVE", activity: true, key: store.MemberKey(r.id, u)}
		o.sent = time.Now()
		if err := w.c.call(ctx, "DELETE", "/rooms/"+r.id+"/members/"+u, tok, nil, nil); err != nil {
			return o, err
		}
		o.done = time.Now()
		r.extras = append(r.extras[:i], r.extras[i+1:]...)
		return o, nil
	}
}

func (w *world) resourceOp(ctx context.Context, res *resourceState, name string) (*op, error) {
	people := append([]string{res.owner}, res.collabs...)
	if (name == "react" || name == "unreact") && len(res.comments) == 0 {
		name = "comment"
	}
	var unreact []string // user + " " + emoji of a comment's reactions
	var uc *commentState
	if name == "unreact" {
		uc = pick(res.rng, res.comments)
		for k, on := range uc.reactions {
			if on {
				unreact = append(unreact, k)
			}
		}
		if len(unreact) == 0 {
			name = "react"
		}
	}
	switch name {
	case "comment":
		u := pick(res.rng, people)
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		text := "Progress update " + fmt.Sprint(res.rng.IntN(1000))
		var mention string
		if res.rng.IntN(3) == 0 {
			for mention == "" || mention == u {
				mention = pick(res.rng, people)
			}
			text += " @" + mention
		}
		o := &op{name: name, route: "POST /resources/{type}/{id}/comments", change: "INSERT", notes: len(people) - 1}
		if mention != "" {
			o.mails = []string{"mention#%s#" + mention}
		}
		var c collab.Comment
		o.sent = time.Now()
		if err := w.c.call(ctx, "POST", "/resources/goal/"+res.id+"/comments", tok, map[string]any{"text": text}, &c); err != nil {
			return o, err
		}
		o.done = time.Now()
		o.key = store.CommentKey(c.ResourceType, c.ResourceID, c.CreatedAt, c.CommentID)
		res.comments = append(res.comments, &commentState{id: c.CommentID, author: u, reactions: map[string]bool{}})
		res.made++
		if len(res.comments) > 20 {
			res.comments = res.comments[1:]
		}
		return o, nil
	case "react":
		c := pick(res.rng, res.comments)
		var u, e string
		for range 20 {
			u, e = pick(res.rng, people), pick(res.rng, emojis)
			if !c.reactions[u+" "+e] {
				break
			}
		}
		if c.reactions[u+" "+e] { // all taken: write a comment instead
			return w.resourceOp(ctx, res, "comment")
		}
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		o := &op{name: name, route: "PUT /comments/{commentId}/reactions/{emoji}", change: "INSERT", counts: true, key: store.ReactionKey(c.id, u, e)}
		if u != c.author {
			o.notes = 1
		}
		o.sent = time.Now()
		if err := w.c.call(ctx, "PUT", "/comments/"+c.id+"/reactions/"+url.PathEscape(e), tok, nil, nil); err != nil {
			return o, err
		}
		o.done = time.Now()
		c.reactions[u+" "+e] = true
		return o, nil
	case "unreact":
		k := pick(res.rng, unreact)
		var u, e string
		fmt.Sscanf(k, "%s %s", &u, &e)
		tok, err := w.token(ctx, u)
		if err != nil {
			return nil, err
		}
		o := &op{name: name, route: "DELETE /comments/{commentId}/reactions/{emoji}", change: "REMOVE", counts: true, key: store.ReactionKey(uc.id, u, e)}
		o.sent = time.Now()
		if err := w.c.call(ctx, "DELETE", "/comments/"+uc.id+"/reactions/"+url.PathEscape(e), tok, nil, nil); err != nil {
			return o, err
		}
		o.done = time.Now()
		uc.reactions[k] = false
		return o, nil
	default: // invite someone new, by id and address: in-app and an e-mail
		u := w.freshUser()
		tok, err := w.token(ctx, res.owner)
		if err != nil {
			return nil, err
		}
		o := &op{name: "invite", route: "POST /resources/{type}/{id}/invites", change: "INSERT", notes: 1, mails: []string{"invite#%s#" + u}}
		var inv collab.Invite
		o.sent = time.Now()
		if err := w.c.call(ctx, "POST", "/resources/goal/"+res.id+"/invites", tok, map[string]any{"inviteeId": u, "inviteeEmail": u + "@example.com"}, &inv); err != nil {
			return o, err
		}
		o.done = time.Now()
		o.key = store.InviteKey(inv.ResourceType, inv.ResourceID, inv.InviteID)
		return o, nil
	}
}

func (w *world) createLocation(ctx context.Context) (*op, error) {
	w.mu.Lock()
	w.nextLoc++
	n := w.nextLoc
	w.mu.Unlock()
	code := fmt.Sprintf("load-%06d-%d", n, time.Now().UnixNano()%1e6)
	o := &op{name: "location", route: "POST /locations", change: "INSERT"}
	var out struct {
		LocationID string `json:"locationId"`
	}
	o.sent = time.Now()
	err := w.c.call(ctx, "POST", "/locations", w.admin, map[string]any{
		"locationCode": code, "name": "Office " + code, "placeId": "place-" + code, "formattedAddress": "Street " + fmt.Sprint(n) + ", Zurich",
		"lat": 47.37, "lng": 8.54,
	}, &out)
	if err != nil {
		return o, err
	}
	o.done = time.Now()
	o.key = store.LocationKey(out.LocationID)
	return o, nil
}

func (w *world) updateLocation(ctx context.Context, l *locationState) (*op, error) {
	l.n++
	o := &op{name: "relocate", route: "PATCH /locations/{locationId}", change: "MODIFY", key: store.LocationKey(l.id)}
	o.sent = time.Now()
	if err := w.c.call(ctx, "PATCH", "/locations/"+l.id, w.admin, map[string]any{"name": fmt.Sprintf("Office renamed %d", l.n)}, nil); err != nil {
		return o, err
	}
	o.done = time.Now()
	return o, nil
}

// hotRecipeKey is the hot recipe's partition key ("" without cooking).
func (w *world) hotRecipeKey() string {
	if len(w.cooking.recipes) == 0 {
		return ""
	}
	return store.RecipePK(w.cooking.recipes[0])
}

// pinned are the partition keys whose share of the writes the workload
// keeps at any scale, with why: a projection grows their load with the
// rate, as it does a key per week (scale.go).
func (w *world) pinned() map[string]string {
	out := map[string]string{}
	if len(w.cooking.recipes) > 0 {
		out[store.RecipePK(w.cooking.recipes[0])] = fmt.Sprintf("the hot recipe: %.0f%% of cookings", 100*hotShare)
		// notified of every cooking of it by someone else
		out[store.UserPK(w.cooking.chefs[0])] = "the hot recipe's author"
	}
	chatPins(out)
	return out
}
