package api_test

// Tests of the collaboration seed (seeds/004_…): every access pattern
// through the writer's HTTP API — resources, invites (by user id, by e-mail
// only, both; accept, decline, expiry), collaborators, threaded comments,
// reactions, notification preferences, profiles and in-app notifications —
// the exact keys of every item, and bad input that writes nothing. All
// against DynamoDB Local.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/store"
)

// s4Clock is a fixed clock that moves on by a second each time the server
// reads it (tokens only peek); Advance jumps ahead.
type s4Clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *s4Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func (c *s4Clock) Peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *s4Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// s4IDs hands out the ids queued by the test, then id001, id002, …
type s4IDs struct {
	mu     sync.Mutex
	queued []string
	n      int
}

func (g *s4IDs) next() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queued) > 0 {
		id := g.queued[0]
		g.queued = g.queued[1:]
		return id
	}
	g.n++
	return fmt.Sprintf("id%03d", g.n)
}

func (g *s4IDs) queue(ids ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queued = append(g.queued, ids...)
}

// s4Env is the writer API on a fresh table, served over HTTP, plus the raw
// client to look underneath.
type s4Env struct {
	t     *testing.T
	url   string
	db    *dynamodb.Client
	table string
	clock *s4Clock
	ids   *s4IDs
}

func newS4Env(t *testing.T) *s4Env {
	t.Helper()
	c, table, _ := ddbtest.Table(t)
	clk := &s4Clock{t: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)}
	ids := &s4IDs{}
	dev := &auth.DevTokens{Secret: []byte("seed 004 test secret, 32 bytes.."), Issuer: "dynastream-test", Now: clk.Peek}
	srv := &api.Server{
		Store:     store.New(c.DB, table),
		Auth:      dev,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:       clk.Now,
		NewID:     ids.next,
		DevTokens: dev,
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &s4Env{t: t, url: ts.URL, db: c.DB, table: table, clock: clk, ids: ids}
}

type s4Resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; body is a string (sent as is), nil (no body) or a
// value (sent as JSON).
func (e *s4Env) do(method, path, token string, body any) s4Resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return s4Resp{status: res.StatusCode, header: res.Header, body: b}
}

// ok sends a request that must answer status (with JSON, decoded into out,
// unless 204) and returns the response.
func (e *s4Env) ok(status int, method, path, token string, body, out any) s4Resp {
	e.t.Helper()
	r := e.do(method, path, token, body)
	if r.status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if status == http.StatusNoContent {
		if len(r.body) != 0 {
			e.t.Errorf("%s %s: 204 with a body: %s", method, path, r.body)
		}
		return r
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero() // decode into a fresh value
		if err := json.Unmarshal(r.body, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, r.body, err)
		}
	}
	return r
}

// token mints a dev token for the user, with a verified e-mail address if
// email is not empty.
func (e *s4Env) token(userID, email string) string {
	e.t.Helper()
	body := map[string]string{"userId": userID}
	if email != "" {
		body["email"] = email
	}
	var tr struct {
		Token string `json:"token"`
	}
	e.ok(http.StatusCreated, "POST", "/dev/tokens", "", body, &tr)
	return tr.Token
}

// prob checks a problem+json response with status and exactly the named
// invalid fields (in any order) and returns its detail.
func (e *s4Env) prob(r s4Resp, status int, fields ...string) string {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
		Errors []struct {
			Field  string `json:"field"`
			Reason string `json:"reason"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		e.t.Fatalf("problem %s: %v", r.body, err)
	}
	if p.Status != status || p.Title != http.StatusText(status) || p.Type != "about:blank" || p.Detail == "" {
		e.t.Errorf("problem %s: want status %d, title %q, type about:blank and a detail", r.body, status, http.StatusText(status))
	}
	got := []string{}
	for _, f := range p.Errors {
		got = append(got, f.Field)
		if f.Reason == "" {
			e.t.Errorf("field %s has no reason", f.Field)
		}
	}
	sort.Strings(got)
	want := append([]string{}, fields...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("problem fields (-want +got):\n%s\nbody: %s", diff, r.body)
	}
	return p.Detail
}

type s4List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// s4All reads a list page by page with the given limit and returns every
// item and the number of pages.
func s4All[T any](e *s4Env, path, token string, limit int) ([]T, int) {
	e.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []T
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 50 {
			e.t.Fatalf("%s: pagination does not end", path)
		}
		var pg s4List[T]
		e.ok(http.StatusOK, "GET", path+sep+"limit="+strconv.Itoa(limit)+"&cursor="+url.QueryEscape(cursor), token, nil, &pg)
		if pg.Items == nil {
			e.t.Errorf("%s: items is null, want a list", path)
		}
		if len(pg.Items) > limit {
			e.t.Fatalf("%s: page of %d items with limit=%d", path, len(pg.Items), limit)
		}
		out = append(out, pg.Items...)
		if pg.NextCursor == "" {
			return out, pages
		}
		cursor = pg.NextCursor
	}
}

type s4Item = map[string]types.AttributeValue

func s4S(it s4Item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// getRaw reads one item, strongly consistent (nil when there is none).
func (e *s4Env) getRaw(k store.Key) s4Item {
	e.t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: k.AV(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

// queryRaw reads every item of a partition of the table (index "") or of
// GSI1, optionally under a sort-key prefix, in key order.
func (e *s4Env) queryRaw(index, pk, skPrefix string) []s4Item {
	e.t.Helper()
	pkAttr, skAttr := "PK", "SK"
	if index == store.IndexGSI1 {
		pkAttr, skAttr = "GSI1PK", "GSI1SK"
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
	}
	if skPrefix != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :sk)")
		in.ExpressionAttributeNames["#sk"] = skAttr
		in.ExpressionAttributeValues[":sk"] = &types.AttributeValueMemberS{Value: skPrefix}
	}
	if index != "" {
		in.IndexName = aws.String(index)
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	var items []s4Item
	p := dynamodb.NewQueryPaginator(e.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		items = append(items, out.Items...)
	}
	return items
}

// scan reads every item of the table as plain values, sorted by key.
func (e *s4Env) scan() []map[string]any {
	e.t.Helper()
	var items []s4Item
	p := dynamodb.NewScanPaginator(e.db, &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		items = append(items, out.Items...)
	}
	var plain []map[string]any
	if err := attributevalue.UnmarshalListOfMaps(items, &plain); err != nil {
		e.t.Fatal(err)
	}
	sort.Slice(plain, func(i, j int) bool {
		return fmt.Sprint(plain[i]["PK"], " ", plain[i]["SK"]) < fmt.Sprint(plain[j]["PK"], " ", plain[j]["SK"])
	})
	return plain
}

// keys lists the items' "GSI1PK GSI1SK" (index GSI1) or "PK SK".
func s4Keys(items []s4Item, index string) []string {
	out := []string{}
	for _, it := range items {
		if index == store.IndexGSI1 {
			out = append(out, s4S(it, "GSI1PK")+" "+s4S(it, "GSI1SK"))
		} else {
			out = append(out, s4S(it, "PK")+" "+s4S(it, "SK"))
		}
	}
	return out
}

func s4Epoch(t *testing.T, ts string) int64 {
	t.Helper()
	tm, err := store.ParseTimestamp(ts)
	if err != nil {
		t.Fatalf("timestamp %q: %v", ts, err)
	}
	return tm.Unix()
}

type s4InviteResp struct {
	Invite       collab.Invite        `json:"invite"`
	Collaborator *collab.Collaborator `json:"collaborator"`
}

// createInvite has the owner invite, with the given invite id.
func (e *s4Env) createInvite(token, resource, id string, body any) collab.Invite {
	e.t.Helper()
	e.ids.queue(id)
	var inv collab.Invite
	e.ok(http.StatusCreated, "POST", resource+"/invites", token, body, &inv)
	if inv.InviteID != id {
		e.t.Fatalf("invite id %q, want %q", inv.InviteID, id)
	}
	return inv
}

func (e *s4Env) createComment(token, resource, id string, body any) collab.Comment {
	e.t.Helper()
	e.ids.queue(id)
	var c collab.Comment
	r := e.ok(http.StatusCreated, "POST", resource+"/comments", token, body, &c)
	if c.CommentID != id {
		e.t.Fatalf("comment id %q, want %q", c.CommentID, id)
	}
	if bytes.Contains(r.body, []byte("<script")) {
		e.t.Errorf("comment %s answered with markup: %s", id, r.body)
	}
	return c
}

func (e *s4Env) createResource(token, typ, id, title string) collab.Resource {
	e.t.Helper()
	e.ids.queue(id)
	var res collab.Resource
	r := e.ok(http.StatusCreated, "POST", "/resources", token, map[string]any{"resourceType": typ, "title": title}, &res)
	if loc := r.header.Get("Location"); loc != "/resources/"+typ+"/"+id {
		e.t.Errorf("Location %q", loc)
	}
	return res
}

func s4InviteIDs(invs []collab.Invite) []string {
	out := []string{}
	for _, i := range invs {
		out = append(out, i.InviteID+":"+i.Status)
	}
	return out
}

func s4CommentIDs(cs []collab.Comment) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.CommentID)
	}
	return out
}

// TestSeed004AccessPatterns drives every access pattern of the
// collaboration seed through HTTP.
func TestSeed004AccessPatterns(t *testing.T) {
	t.Parallel()
	e := newS4Env(t)
	alice, bob, dave, erin := e.token("alice", ""), e.token("bob", ""), e.token("dave", "dave@example.com"), e.token("erin", "")
	carol, carolNoMail := e.token("carol", "Carol@Example.com"), e.token("carol", "")
	mallory := e.token("mallory", "mallory@example.com")

	// Resources: create, read; anyone but the owner and collaborators gets
	// 404, as for a resource that does not exist.
	goal := e.createResource(alice, "goal", "goal-123", "  Run a marathon ")
	want := collab.Resource{ResourceType: collab.Goal, ResourceID: "goal-123", Title: "Run a marathon", OwnerID: "alice", CreatedAt: goal.CreatedAt}
	if diff := cmp.Diff(want, goal); diff != "" {
		t.Errorf("created goal (-want +got):\n%s", diff)
	}
	G := "/resources/goal/goal-123"
	var got collab.Resource
	e.ok(http.StatusOK, "GET", G, alice, nil, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET goal (-want +got):\n%s", diff)
	}
	e.createResource(alice, "quest", "quest-1", "Learn Go")
	e.createResource(alice, "task", "task-1", "Buy shoes")
	e.createResource(alice, "goal", "goal-2", "Swim")
	e.prob(e.do("GET", G, mallory, nil), 404)
	e.prob(e.do("GET", G, bob, nil), 404) // not yet a collaborator
	e.prob(e.do("GET", "/resources/quest/goal-123", alice, nil), 404)
	e.prob(e.do("GET", "/resources/goal/nope", alice, nil), 404)
	e.prob(e.do("GET", "/resources/habit/goal-123", alice, nil), 400, "type")

	// Invites: by user id, by e-mail only, by both.
	invBob := e.createInvite(alice, G, "inv-bob", map[string]any{"inviteeId": "bob", "message": "Would you like to collaborate on this goal? <3"})
	wantInv := collab.Invite{InviteID: "inv-bob", InviterID: "alice", InviteeID: "bob", ResourceType: collab.Goal, ResourceID: "goal-123",
		Status: collab.InvitePending, Message: "Would you like to collaborate on this goal? &lt;3", CreatedAt: invBob.CreatedAt, UpdatedAt: invBob.CreatedAt}
	created, _ := store.ParseTimestamp(invBob.CreatedAt)
	wantInv.ExpiresAt = store.Timestamp(created.Add(30 * 24 * time.Hour))
	if diff := cmp.Diff(wantInv, invBob); diff != "" {
		t.Errorf("invite by id (-want +got):\n%s", diff)
	}
	invCarol := e.createInvite(alice, G, "inv-carol", map[string]any{"inviteeEmail": "Carol@Example.com"})
	if invCarol.InviteeID != "" || invCarol.InviteeEmail != "carol@example.com" || invCarol.Status != collab.InvitePending {
		t.Errorf("invite by e-mail %+v", invCarol)
	}
	invDave := e.createInvite(alice, G, "inv-dave", map[string]any{"inviteeId": "dave", "inviteeEmail": "dave@example.com", "message": nil})
	if invDave.InviteeID != "dave" || invDave.InviteeEmail != "dave@example.com" || invDave.Message != "" {
		t.Errorf("invite by id and e-mail %+v", invDave)
	}
	e.createInvite(alice, G, "inv-erin", map[string]any{"inviteeId": "erin"})
	e.createInvite(alice, "/resources/quest/quest-1", "inv-bob-quest", map[string]any{"inviteeId": "bob"})
	e.createInvite(alice, "/resources/task/task-1", "inv-bob-task", map[string]any{"inviteeId": "bob"})
	e.createInvite(alice, "/resources/goal/goal-2", "inv-bob-goal2", map[string]any{"inviteeId": "bob"})
	e.prob(e.do("POST", G+"/invites", mallory, map[string]any{"inviteeId": "mallory"}), 404)

	// A resource's invites: the owner only, by invite id.
	all, pages := s4All[collab.Invite](e, G+"/invites", alice, 2)
	if diff := cmp.Diff([]string{"inv-bob:pending", "inv-carol:pending", "inv-dave:pending", "inv-erin:pending"}, s4InviteIDs(all)); diff != "" || pages < 2 {
		t.Errorf("the goal's invites in %d pages (-want +got):\n%s", pages, diff)
	}
	if diff := cmp.Diff(invBob, all[0]); diff != "" {
		t.Errorf("listed invite (-want +got):\n%s", diff)
	}
	e.prob(e.do("GET", G+"/invites", mallory, nil), 404)
	e.prob(e.do("GET", G+"/invites", bob, nil), 404)

	// A user's received invites (GSI1 USER#<inviteeId>), newest first; the
	// pending ones; those sent to the token's e-mail address only.
	var mine s4List[collab.Invite]
	e.ok(http.StatusOK, "GET", "/me/invites", bob, nil, &mine)
	if diff := cmp.Diff([]string{"inv-bob-goal2:pending", "inv-bob-task:pending", "inv-bob-quest:pending", "inv-bob:pending"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("bob's invites (-want +got):\n%s", diff)
	}
	pend, _ := s4All[collab.Invite](e, "/me/invites?status=pending", bob, 3)
	if diff := cmp.Diff(s4InviteIDs(mine.Items), s4InviteIDs(pend)); diff != "" {
		t.Errorf("bob's pending invites (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"USER#bob INVITE#pending#" + invBob.CreatedAt}, s4Keys(e.queryRaw(store.IndexGSI1, "USER#bob", "INVITE#pending#"+invBob.CreatedAt), store.IndexGSI1)); diff != "" {
		t.Errorf("GSI1 of bob's invite (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?via=email", carol, nil, &mine)
	if diff := cmp.Diff([]string{"inv-carol:pending"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("carol's invites by e-mail (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?via=email&status=pending", carol, nil, &mine)
	if len(mine.Items) != 1 {
		t.Errorf("carol's pending invites by e-mail: %v", s4InviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites", carol, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("carol's invites by user id: %v", s4InviteIDs(mine.Items))
	}
	e.prob(e.do("GET", "/me/invites?via=email", carolNoMail, nil), 400, "via")
	e.ok(http.StatusOK, "GET", "/me/invites?via=email", dave, nil, &mine) // dave's invite names his id
	if len(mine.Items) != 0 {
		t.Errorf("dave's invites by e-mail only: %v", s4InviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites", dave, nil, &mine)
	if diff := cmp.Diff([]string{"inv-dave:pending"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("dave's invites (-want +got):\n%s", diff)
	}

	// One invite: its inviter and its invitee; anyone else 404.
	var one collab.Invite
	for _, tok := range []string{alice, bob} {
		e.ok(http.StatusOK, "GET", G+"/invites/inv-bob", tok, nil, &one)
		if diff := cmp.Diff(invBob, one); diff != "" {
			t.Errorf("GET invite (-want +got):\n%s", diff)
		}
	}
	e.ok(http.StatusOK, "GET", G+"/invites/inv-carol", carol, nil, &one)
	e.prob(e.do("GET", G+"/invites/inv-carol", carolNoMail, nil), 404)
	e.prob(e.do("GET", G+"/invites/inv-carol", bob, nil), 404)
	e.prob(e.do("GET", G+"/invites/inv-bob", mallory, nil), 404)
	e.prob(e.do("GET", G+"/invites/nope", alice, nil), 404)
	e.prob(e.do("GET", "/resources/quest/goal-123/invites/inv-bob", bob, nil), 404)

	// Accept: the invite becomes accepted (GSI1SK INVITE#accepted#…, no
	// ttl) and a Collaborator is written.
	e.prob(e.do("POST", G+"/invites/inv-bob/accept", alice, nil), 403)
	e.prob(e.do("POST", G+"/invites/inv-bob/accept", mallory, nil), 404)
	var acc s4InviteResp
	e.ok(http.StatusOK, "POST", G+"/invites/inv-bob/accept", bob, nil, &acc)
	if acc.Invite.Status != collab.InviteAccepted || acc.Invite.UpdatedAt <= invBob.CreatedAt || acc.Collaborator == nil {
		t.Fatalf("accepted %+v", acc)
	}
	wantCol := collab.Collaborator{UserID: "bob", ResourceType: collab.Goal, ResourceID: "goal-123", Role: collab.RoleCollaborator, JoinedAt: acc.Invite.UpdatedAt, InviteID: "inv-bob"}
	if diff := cmp.Diff(wantCol, *acc.Collaborator); diff != "" {
		t.Errorf("new collaborator (-want +got):\n%s", diff)
	}
	raw := e.getRaw(store.InviteKey(collab.Goal, "goal-123", "inv-bob"))
	if s4S(raw, "status") != "accepted" || s4S(raw, "GSI1PK") != "USER#bob" || s4S(raw, "GSI1SK") != "INVITE#accepted#"+invBob.CreatedAt || raw["ttl"] != nil {
		t.Errorf("accepted invite item %v", raw)
	}
	raw = e.getRaw(store.CollaboratorKey(collab.Goal, "goal-123", "bob"))
	if s4S(raw, "itemType") != "Collaborator" || s4S(raw, "GSI1PK") != "USER#bob" || s4S(raw, "GSI1SK") != "COLLAB#goal#"+acc.Invite.UpdatedAt || s4S(raw, "role") != "collaborator" {
		t.Errorf("collaborator item %v", raw)
	}
	// Unfiltered, by status (pending before accepted), newest first within.
	e.ok(http.StatusOK, "GET", "/me/invites", bob, nil, &mine)
	if diff := cmp.Diff([]string{"inv-bob-goal2:pending", "inv-bob-task:pending", "inv-bob-quest:pending", "inv-bob:accepted"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("bob's invites after one acceptance (-want +got):\n%s", diff)
	}
	if d := e.prob(e.do("POST", G+"/invites/inv-bob/accept", bob, nil), 409); !strings.Contains(d, "already accepted") {
		t.Errorf("accepting twice: detail %q", d)
	}
	if d := e.prob(e.do("POST", G+"/invites/inv-bob/decline", bob, nil), 409); !strings.Contains(d, "already accepted") {
		t.Errorf("declining an accepted invite: detail %q", d)
	}
	e.prob(e.do("GET", G+"/invites", bob, nil), 403) // a collaborator, not the owner
	e.prob(e.do("POST", G+"/invites", bob, map[string]any{"inviteeId": "zed"}), 403)

	// By e-mail: the holder of the verified address accepts.
	e.prob(e.do("POST", G+"/invites/inv-carol/accept", carolNoMail, nil), 404)
	e.ok(http.StatusOK, "POST", G+"/invites/inv-carol/accept", carol, nil, &acc)
	if acc.Collaborator == nil || acc.Collaborator.UserID != "carol" || acc.Invite.Status != collab.InviteAccepted {
		t.Errorf("carol accepted %+v", acc)
	}
	if raw := e.getRaw(store.InviteKey(collab.Goal, "goal-123", "inv-carol")); s4S(raw, "GSI1SK") != "INVITE#accepted#"+invCarol.CreatedAt {
		t.Errorf("accepted e-mail invite item %v", raw)
	}
	e.ok(http.StatusOK, "POST", G+"/invites/inv-dave/accept", dave, nil, nil)

	// An invite to the owner's own address: the owner reads it as its
	// inviter but cannot accept it (no collaborator on one's own resource).
	e.createInvite(alice, G, "inv-self", map[string]any{"inviteeEmail": "alice@example.com"})
	aliceMail := e.token("alice", "alice@example.com")
	e.ok(http.StatusOK, "GET", G+"/invites/inv-self", aliceMail, nil, nil)
	e.prob(e.do("POST", G+"/invites/inv-self/accept", aliceMail, nil), 403)
	if raw := e.getRaw(store.CollaboratorKey(collab.Goal, "goal-123", "alice")); raw != nil {
		t.Errorf("the owner became a collaborator: %v", raw)
	}

	// Decline: no collaborator; declining or accepting again is a 409.
	r := e.ok(http.StatusOK, "POST", G+"/invites/inv-erin/decline", erin, nil, &acc)
	if acc.Invite.Status != collab.InviteDeclined || acc.Collaborator != nil || !bytes.Contains(r.body, []byte(`"collaborator":null`)) {
		t.Errorf("declined %s", r.body)
	}
	raw = e.getRaw(store.InviteKey(collab.Goal, "goal-123", "inv-erin"))
	if s4S(raw, "status") != "declined" || !strings.HasPrefix(s4S(raw, "GSI1SK"), "INVITE#declined#") {
		t.Errorf("declined invite item %v", raw)
	}
	if raw := e.getRaw(store.CollaboratorKey(collab.Goal, "goal-123", "erin")); raw != nil {
		t.Errorf("erin became a collaborator: %v", raw)
	}
	for _, action := range []string{"accept", "decline"} {
		if d := e.prob(e.do("POST", G+"/invites/inv-erin/"+action, erin, nil), 409); !strings.Contains(d, "already declined") {
			t.Errorf("%s a declined invite: detail %q", action, d)
		}
	}
	e.prob(e.do("GET", G, erin, nil), 404)

	e.ok(http.StatusOK, "POST", "/resources/quest/quest-1/invites/inv-bob-quest/accept", bob, nil, nil)
	e.ok(http.StatusOK, "POST", "/resources/task/task-1/invites/inv-bob-task/accept", bob, nil, nil)
	e.ok(http.StatusOK, "POST", "/resources/goal/goal-2/invites/inv-bob-goal2/accept", bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", bob, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("bob's pending invites after accepting all: %v", s4InviteIDs(mine.Items))
	}
	accepted, _ := s4All[collab.Invite](e, "/me/invites?status=accepted", bob, 2)
	if diff := cmp.Diff([]string{"inv-bob-goal2:accepted", "inv-bob-task:accepted", "inv-bob-quest:accepted", "inv-bob:accepted"}, s4InviteIDs(accepted)); diff != "" {
		t.Errorf("bob's accepted invites (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?status=declined", erin, nil, &mine)
	if diff := cmp.Diff([]string{"inv-erin:declined"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("erin's declined invites (-want +got):\n%s", diff)
	}

	// Collaborators: of a resource (by user id), one, a user's (newest
	// first within a type) and by type (GSI1 COLLAB#<type>#<joinedAt>).
	cols, pages := s4All[collab.Collaborator](e, G+"/collaborators", carol, 2)
	var colIDs []string
	for _, c := range cols {
		colIDs = append(colIDs, c.UserID)
	}
	if diff := cmp.Diff([]string{"bob", "carol", "dave"}, colIDs); diff != "" || pages < 2 {
		t.Errorf("the goal's collaborators in %d pages (-want +got):\n%s", pages, diff)
	}
	if diff := cmp.Diff(wantCol, cols[0]); diff != "" {
		t.Errorf("listed collaborator (-want +got):\n%s", diff)
	}
	var col collab.Collaborator
	e.ok(http.StatusOK, "GET", G+"/collaborators/bob", dave, nil, &col)
	if diff := cmp.Diff(wantCol, col); diff != "" {
		t.Errorf("GET collaborator (-want +got):\n%s", diff)
	}
	e.prob(e.do("GET", G+"/collaborators/erin", alice, nil), 404)
	e.prob(e.do("GET", G+"/collaborators/alice", alice, nil), 404) // the owner is no collaborator
	e.prob(e.do("GET", G+"/collaborators", mallory, nil), 404)
	e.prob(e.do("GET", G+"/collaborators/bob", mallory, nil), 404)
	e.ok(http.StatusOK, "GET", G, bob, nil, nil) // now a collaborator
	mineCols, _ := s4All[collab.Collaborator](e, "/me/collaborations", bob, 3)
	var got4 []string
	for _, c := range mineCols {
		got4 = append(got4, string(c.ResourceType)+"/"+c.ResourceID)
	}
	if diff := cmp.Diff([]string{"task/task-1", "quest/quest-1", "goal/goal-2", "goal/goal-123"}, got4); diff != "" {
		t.Errorf("bob's collaborations (-want +got):\n%s", diff)
	}
	for typ, want := range map[string][]string{"goal": {"goal/goal-2", "goal/goal-123"}, "quest": {"quest/quest-1"}, "task": {"task/task-1"}} {
		cs, _ := s4All[collab.Collaborator](e, "/me/collaborations?type="+typ, bob, 1)
		var got []string
		for _, c := range cs {
			got = append(got, string(c.ResourceType)+"/"+c.ResourceID)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("bob's %s collaborations (-want +got):\n%s", typ, diff)
		}
	}
	if n := len(e.queryRaw(store.IndexGSI1, "USER#bob", "COLLAB#goal#")); n != 2 {
		t.Errorf("GSI1 COLLAB#goal# of bob: %d items", n)
	}
	e.prob(e.do("GET", "/me/collaborations?type=habit", bob, nil), 400, "type")
	var none s4List[collab.Collaborator]
	e.ok(http.StatusOK, "GET", "/me/collaborations", mallory, nil, &none)
	if none.Items == nil || len(none.Items) != 0 {
		t.Errorf("mallory's collaborations %+v", none)
	}

	// Comments: the owner and collaborators only; mentions; HTML escaped.
	e.prob(e.do("POST", G+"/comments", mallory, map[string]any{"text": "hi"}), 404)
	e.prob(e.do("POST", G+"/comments", erin, map[string]any{"text": "hi"}), 404)
	c1 := e.createComment(alice, G, "cmt-1", map[string]any{"text": "Great progress on this goal! @bob what do you think? Mail alice@example.com, or @alice."})
	wantC1 := collab.Comment{CommentID: "cmt-1", ResourceType: collab.Goal, ResourceID: "goal-123", UserID: "alice",
		Text: "Great progress on this goal! @bob what do you think? Mail alice@example.com, or @alice.", Mentions: []string{"bob"}, CreatedAt: c1.CreatedAt}
	if diff := cmp.Diff(wantC1, c1); diff != "" {
		t.Errorf("created comment (-want +got):\n%s", diff)
	}
	c2 := e.createComment(bob, G, "cmt-2", map[string]any{"text": "<script>alert(1)</script> agreed, @carol and @dave.", "parentId": "cmt-1"})
	if c2.Text != "&lt;script&gt;alert(1)&lt;/script&gt; agreed, @carol and @dave." || !cmp.Equal([]string{"carol", "dave"}, c2.Mentions) || c2.ParentID != "cmt-1" {
		t.Errorf("reply %+v", c2)
	}
	raw = e.getRaw(store.CommentKey(collab.Goal, "goal-123", c2.CreatedAt, "cmt-2"))
	if txt := s4S(raw, "text"); strings.Contains(txt, "<script") || txt != c2.Text {
		t.Errorf("stored text %q", txt)
	}
	e.createComment(carol, G, "cmt-3", map[string]any{"text": "Me too 🎉", "parentId": ""})
	e.createComment(dave, G, "cmt-4", map[string]any{"text": "+1", "parentId": "cmt-1"})
	long := e.createComment(alice, G, "cmt-5", map[string]any{"text": strings.Repeat("é", collab.MaxCommentLength)})
	if len([]rune(long.Text)) != collab.MaxCommentLength {
		t.Errorf("a comment of %d characters", len([]rune(long.Text)))
	}
	e.createComment(dave, G, "cmt-6", map[string]any{"text": strings.Repeat("😀", collab.MaxCommentLength)})
	e.createComment(bob, G, "cmt-7", map[string]any{"text": "nested", "parentId": "cmt-2"})
	e.createComment(alice, "/resources/goal/goal-2", "cmt-other", map[string]any{"text": "elsewhere"})
	e.createResource(alice, "quest", "goal-123", "A quest with the goal's id")
	e.createComment(alice, "/resources/quest/goal-123", "cmt-quest", map[string]any{"text": "on the quest"})
	e.prob(e.do("POST", G+"/comments", alice, map[string]any{"text": "x", "parentId": "cmt-quest"}), 400, "parentId")
	e.prob(e.do("POST", G+"/comments", bob, map[string]any{"text": strings.Repeat("x", collab.MaxCommentLength+1)}), 400, "text")
	e.prob(e.do("POST", G+"/comments", bob, map[string]any{"text": strings.Repeat("😀", collab.MaxCommentLength+1)}), 400, "text")
	e.prob(e.do("POST", G+"/comments", bob, map[string]any{"text": " \n "}), 400, "text")
	e.prob(e.do("POST", G+"/comments", bob, map[string]any{"text": "x", "parentId": "nope"}), 400, "parentId")
	e.prob(e.do("POST", G+"/comments", bob, map[string]any{"text": "x", "parentId": "cmt-other"}), 400, "parentId")

	// Top-level comments (replies left out), oldest first, over pages.
	top, pages := s4All[collab.Comment](e, G+"/comments", bob, 2)
	if diff := cmp.Diff([]string{"cmt-1", "cmt-3", "cmt-5", "cmt-6"}, s4CommentIDs(top)); diff != "" || pages < 2 {
		t.Errorf("top-level comments in %d pages (-want +got):\n%s", pages, diff)
	}
	if diff := cmp.Diff(wantC1, top[0]); diff != "" {
		t.Errorf("listed comment (-want +got):\n%s", diff)
	}
	// Replies (GSI1 COMMENT#<parentId> / CREATED#<createdAt>), oldest first.
	replies, _ := s4All[collab.Comment](e, "/comments/cmt-1/replies", carol, 1)
	if diff := cmp.Diff([]string{"cmt-2", "cmt-4"}, s4CommentIDs(replies)); diff != "" {
		t.Errorf("replies to cmt-1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c2, replies[0]); diff != "" {
		t.Errorf("listed reply (-want +got):\n%s", diff)
	}
	gsi := e.queryRaw(store.IndexGSI1, "COMMENT#cmt-1", "")
	if diff := cmp.Diff([]string{"COMMENT#cmt-1 CREATED#" + c2.CreatedAt, "COMMENT#cmt-1 CREATED#" + replies[1].CreatedAt}, s4Keys(gsi, store.IndexGSI1)); diff != "" {
		t.Errorf("GSI1 of the replies (-want +got):\n%s", diff)
	}
	replies, _ = s4All[collab.Comment](e, "/comments/cmt-2/replies", carol, 5)
	if diff := cmp.Diff([]string{"cmt-7"}, s4CommentIDs(replies)); diff != "" {
		t.Errorf("replies to cmt-2 (-want +got):\n%s", diff)
	}
	var gc collab.Comment
	r = e.ok(http.StatusOK, "GET", "/comments/cmt-2", dave, nil, &gc)
	if diff := cmp.Diff(c2, gc); diff != "" || bytes.Contains(r.body, []byte("<script")) {
		t.Errorf("GET reply (-want +got):\n%s\n%s", diff, r.body)
	}
	e.prob(e.do("GET", "/comments/cmt-2", mallory, nil), 404)
	e.prob(e.do("GET", "/comments/cmt-2", erin, nil), 404)
	e.prob(e.do("GET", "/comments/cmt-1/replies", mallory, nil), 404)
	e.prob(e.do("GET", G+"/comments", mallory, nil), 404)
	e.prob(e.do("GET", "/comments/nope", alice, nil), 404)

	// Edits: the author only; the previous text goes to editHistory.
	var ed collab.Comment
	e.ok(http.StatusOK, "PATCH", "/comments/cmt-1", alice, map[string]any{"text": "Updated: @dave, look <here>"}, &ed)
	if ed.Text != "Updated: @dave, look &lt;here&gt;" || !cmp.Equal([]string{"dave"}, ed.Mentions) || ed.UpdatedAt == "" || ed.UpdatedAt <= c1.CreatedAt ||
		!cmp.Equal([]collab.Edit{{Text: c1.Text, EditedAt: ed.UpdatedAt}}, ed.EditHistory) || ed.CreatedAt != c1.CreatedAt {
		t.Errorf("edited %+v", ed)
	}
	e.ok(http.StatusOK, "PATCH", "/comments/cmt-1", alice, map[string]any{"text": "Third"}, &ed)
	if len(ed.EditHistory) != 2 || ed.EditHistory[1].Text != "Updated: @dave, look &lt;here&gt;" || len(ed.Mentions) != 0 || ed.Mentions == nil {
		t.Errorf("edited twice %+v", ed)
	}
	e.ok(http.StatusOK, "GET", "/comments/cmt-1", bob, nil, &gc)
	if diff := cmp.Diff(ed, gc); diff != "" {
		t.Errorf("GET edited (-want +got):\n%s", diff)
	}
	e.prob(e.do("PATCH", "/comments/cmt-1", bob, map[string]any{"text": "mine now"}), 403)
	e.prob(e.do("PATCH", "/comments/cmt-1", mallory, map[string]any{"text": "mine now"}), 404)

	// Soft delete: the author only; deletedAt set, the text gone.
	e.prob(e.do("DELETE", "/comments/cmt-2", alice, nil), 403)
	e.prob(e.do("DELETE", "/comments/cmt-2", mallory, nil), 404)
	e.ok(http.StatusNoContent, "DELETE", "/comments/cmt-2", bob, nil, nil)
	r = e.ok(http.StatusOK, "GET", "/comments/cmt-2", bob, nil, &gc)
	if gc.DeletedAt == "" || gc.Text != "" || len(gc.Mentions) != 0 || bytes.Contains(r.body, []byte("script")) || bytes.Contains(r.body, []byte("agreed")) {
		t.Errorf("deleted comment %s", r.body)
	}
	raw = e.getRaw(store.CommentKey(collab.Goal, "goal-123", c2.CreatedAt, "cmt-2"))
	if s4S(raw, "deletedAt") != gc.DeletedAt || s4S(raw, "text") != "" || raw["mentions"] != nil {
		t.Errorf("deleted comment item %v", raw)
	}
	if d := e.prob(e.do("PATCH", "/comments/cmt-2", bob, map[string]any{"text": "back"}), 409); !strings.Contains(d, "deleted") {
		t.Errorf("editing a deleted comment: detail %q", d)
	}
	e.prob(e.do("DELETE", "/comments/cmt-2", bob, nil), 409)
	replies, _ = s4All[collab.Comment](e, "/comments/cmt-1/replies", carol, 5)
	if diff := cmp.Diff([]string{"cmt-2", "cmt-4"}, s4CommentIDs(replies)); diff != "" || replies[0].DeletedAt == "" {
		t.Errorf("replies after the deletion (-want +got):\n%s", diff)
	}

	// Reactions: add (201), again (200, one item), list, one user's,
	// remove (204), again 404.
	thumbs, party, heart := url.PathEscape("👍"), url.PathEscape("🎉"), url.PathEscape("❤️")
	C := "/comments/cmt-1/reactions/"
	var re, re2 collab.Reaction
	e.ok(http.StatusCreated, "PUT", C+thumbs, bob, nil, &re)
	wantRe := collab.Reaction{CommentID: "cmt-1", ResourceType: collab.Goal, ResourceID: "goal-123", UserID: "bob", Emoji: "👍", CreatedAt: re.CreatedAt}
	if diff := cmp.Diff(wantRe, re); diff != "" {
		t.Errorf("reaction (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "PUT", C+thumbs, bob, nil, &re2)
	if diff := cmp.Diff(wantRe, re2); diff != "" {
		t.Errorf("the same reaction again (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"COMMENT#cmt-1 REACTION#bob#👍"}, s4Keys(e.queryRaw("", "COMMENT#cmt-1", "REACTION#bob#"), "")); diff != "" {
		t.Errorf("bob's reaction items (-want +got):\n%s", diff)
	}
	e.ok(http.StatusCreated, "PUT", C+party, carol, nil, nil)
	e.ok(http.StatusCreated, "PUT", C+heart, alice, nil, nil)
	e.ok(http.StatusCreated, "PUT", C+party, bob, nil, nil)
	e.ok(http.StatusCreated, "PUT", "/comments/cmt-4/reactions/"+thumbs, carol, nil, nil)
	rs, pages := s4All[collab.Reaction](e, "/comments/cmt-1/reactions", dave, 3)
	var gotRs []string
	for _, x := range rs {
		gotRs = append(gotRs, "REACTION#"+x.UserID+"#"+x.Emoji)
	}
	wantRs := []string{"REACTION#alice#❤️", "REACTION#bob#🎉", "REACTION#bob#👍", "REACTION#carol#🎉"}
	sort.Strings(wantRs)
	if diff := cmp.Diff(wantRs, gotRs); diff != "" || pages != 2 {
		t.Errorf("cmt-1's reactions in %d pages (-want +got):\n%s", pages, diff)
	}
	e.ok(http.StatusOK, "GET", C+thumbs+"/users/bob", alice, nil, &re2)
	if diff := cmp.Diff(wantRe, re2); diff != "" {
		t.Errorf("GET bob's reaction (-want +got):\n%s", diff)
	}
	e.prob(e.do("GET", C+thumbs+"/users/carol", alice, nil), 404)
	e.prob(e.do("GET", C+thumbs+"/users/bob", mallory, nil), 404)
	e.ok(http.StatusNoContent, "DELETE", C+thumbs, bob, nil, nil)
	e.prob(e.do("DELETE", C+thumbs, bob, nil), 404)
	e.prob(e.do("GET", C+thumbs+"/users/bob", alice, nil), 404)
	if n := len(e.queryRaw("", "COMMENT#cmt-1", "REACTION#")); n != 3 {
		t.Errorf("%d reaction items after the removal, want 3", n)
	}
	for _, bad := range []string{"abc", "%23", "1", url.PathEscape("👍 "), url.PathEscape(strings.Repeat("👍", 9))} {
		e.prob(e.do("PUT", C+bad, bob, nil), 400, "emoji")
		e.prob(e.do("GET", C+bad+"/users/bob", bob, nil), 400, "emoji")
	}
	e.prob(e.do("DELETE", C+"abc", bob, nil), 400, "emoji")
	e.prob(e.do("PUT", C+thumbs, mallory, nil), 404)
	e.prob(e.do("PUT", C+"abc", mallory, nil), 404)
	e.prob(e.do("GET", "/comments/cmt-1/reactions", mallory, nil), 404)
	e.prob(e.do("PUT", "/comments/nope/reactions/"+thumbs, bob, nil), 404)

	// Notification preferences: the defaults before any PUT.
	var prefs collab.Preferences
	e.ok(http.StatusOK, "GET", "/me/notification-preferences", bob, nil, &prefs)
	if diff := cmp.Diff(collab.Preferences{UserID: "bob", EmailOnInvite: true, EmailOnMention: true}, prefs); diff != "" {
		t.Errorf("default preferences (-want +got):\n%s", diff)
	}
	if raw := e.getRaw(store.PreferencesKey("bob")); raw != nil {
		t.Errorf("reading the defaults wrote %v", raw)
	}
	e.ok(http.StatusOK, "PUT", "/me/notification-preferences", bob, map[string]any{"emailOnInvite": false, "emailOnReaction": true, "emailOnComment": nil}, &prefs)
	wantPrefs := collab.Preferences{UserID: "bob", EmailOnMention: true, EmailOnReaction: true, UpdatedAt: prefs.UpdatedAt}
	if diff := cmp.Diff(wantPrefs, prefs); diff != "" || prefs.UpdatedAt == "" {
		t.Errorf("stored preferences (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/notification-preferences", bob, nil, &prefs)
	if diff := cmp.Diff(wantPrefs, prefs); diff != "" {
		t.Errorf("GET preferences (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/notification-preferences", carol, nil, &prefs)
	if !prefs.EmailOnInvite || prefs.EmailOnReaction || prefs.UserID != "carol" {
		t.Errorf("carol's preferences %+v", prefs)
	}

	// Profile.
	e.prob(e.do("GET", "/me/profile", bob, nil), 404)
	var prof collab.Profile
	e.ok(http.StatusOK, "PUT", "/me/profile", bob, map[string]any{"name": " Bob B. ", "email": "Bob@Example.com"}, &prof)
	wantProf := collab.Profile{UserID: "bob", Name: "Bob B.", Email: "bob@example.com", UpdatedAt: prof.UpdatedAt}
	if diff := cmp.Diff(wantProf, prof); diff != "" || prof.UpdatedAt == "" {
		t.Errorf("stored profile (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/profile", bob, nil, &prof)
	if diff := cmp.Diff(wantProf, prof); diff != "" {
		t.Errorf("GET profile (-want +got):\n%s", diff)
	}

	// In-app notifications are the notifier's: none here.
	var notes s4List[collab.Notification]
	r = e.ok(http.StatusOK, "GET", "/me/notifications", bob, nil, &notes)
	if notes.Items == nil || len(notes.Items) != 0 || notes.NextCursor != "" {
		t.Errorf("notifications %s", r.body)
	}

	// Expiry: a pending invite past expiresAt reads as expired, is never
	// listed as pending, and cannot be accepted or declined.
	invFrank := e.createInvite(alice, G, "inv-frank", map[string]any{"inviteeId": "frank"})
	e.createInvite(alice, G, "inv-zed", map[string]any{"inviteeEmail": "zed@example.com"})
	frank := e.token("frank", "")
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", frank, nil, &mine)
	if diff := cmp.Diff([]string{"inv-frank:pending"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("frank's pending invites (-want +got):\n%s", diff)
	}
	e.clock.Advance(30*24*time.Hour + time.Minute)
	frank, alice = e.token("frank", ""), e.token("alice", "")
	zed := e.token("zed", "zed@example.com")
	e.ok(http.StatusOK, "GET", G+"/invites/inv-frank", frank, nil, &one)
	if one.Status != collab.InviteExpired || one.ExpiresAt != invFrank.ExpiresAt {
		t.Errorf("expired invite reads %+v", one)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", frank, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("an expired invite is listed as pending: %v", s4InviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites?via=email&status=pending", zed, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("an expired e-mail invite is listed as pending: %v", s4InviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites", frank, nil, &mine)
	if diff := cmp.Diff([]string{"inv-frank:expired"}, s4InviteIDs(mine.Items)); diff != "" {
		t.Errorf("frank's invites (-want +got):\n%s", diff)
	}
	all, _ = s4All[collab.Invite](e, G+"/invites", alice, 10)
	if diff := cmp.Diff([]string{"inv-bob:accepted", "inv-carol:accepted", "inv-dave:accepted", "inv-erin:declined", "inv-frank:expired", "inv-self:expired", "inv-zed:expired"}, s4InviteIDs(all)); diff != "" {
		t.Errorf("the goal's invites after the expiry (-want +got):\n%s", diff)
	}
	for _, action := range []string{"accept", "decline"} {
		d := e.prob(e.do("POST", G+"/invites/inv-frank/"+action, frank, nil), 409)
		if !strings.Contains(d, "expired") || !strings.Contains(d, invFrank.ExpiresAt) {
			t.Errorf("%s an expired invite: detail %q", action, d)
		}
	}
	if d := e.prob(e.do("POST", G+"/invites/inv-zed/accept", zed, nil), 409); !strings.Contains(d, "expired") {
		t.Errorf("accept an expired e-mail invite: detail %q", d)
	}
	raw = e.getRaw(store.InviteKey(collab.Goal, "goal-123", "inv-frank"))
	if s4S(raw, "status") != "pending" || s4N(raw, "ttl") != s4Epoch(t, invFrank.ExpiresAt) {
		t.Errorf("expired invite item %v", raw)
	}
	if raw := e.getRaw(store.CollaboratorKey(collab.Goal, "goal-123", "frank")); raw != nil {
		t.Errorf("frank became a collaborator: %v", raw)
	}
}

func s4N(it s4Item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return -1
}

// TestSeed004RawKeys: every item a collaboration scenario writes has
// exactly the seed's keys, indexes, ttl and attributes.
func TestSeed004RawKeys(t *testing.T) {
	t.Parallel()
	e := newS4Env(t)
	alice, bob, dave := e.token("alice", ""), e.token("bob", ""), e.token("dave", "")
	carol := e.token("carol", "carol@example.com")

	g := e.createResource(alice, "goal", "goal-123", "Run")
	q := e.createResource(alice, "quest", "Quest_1", "Learn")
	G := "/resources/goal/goal-123"
	i1 := e.createInvite(alice, G, "inv-456", map[string]any{"inviteeId": "bob", "inviteeEmail": "collaborator@example.com", "message": "Would you like to collaborate on this goal?"})
	i2 := e.createInvite(alice, G, "inv-mail", map[string]any{"inviteeEmail": "zed@example.com"})
	i3 := e.createInvite(alice, G, "inv-carol", map[string]any{"inviteeEmail": "carol@example.com"})
	i4 := e.createInvite(alice, "/resources/quest/Quest_1", "inv-dave", map[string]any{"inviteeId": "dave"})
	var acc s4InviteResp
	e.ok(http.StatusOK, "POST", G+"/invites/inv-carol/accept", carol, nil, &acc)
	var dec s4InviteResp
	e.ok(http.StatusOK, "POST", "/resources/quest/Quest_1/invites/inv-dave/decline", dave, nil, &dec)
	c1 := e.createComment(carol, G, "cmt-456", map[string]any{"text": "Great progress on this goal! @user-123 what do you think?"})
	c2 := e.createComment(alice, G, "cmt-789", map[string]any{"text": "Thanks", "parentId": "cmt-456"})
	e.ok(http.StatusCreated, "PUT", "/comments/cmt-456/reactions/"+url.PathEscape("👍"), alice, nil, nil)
	var prefs collab.Preferences
	e.ok(http.StatusOK, "PUT", "/me/notification-preferences", carol, map[string]any{"emailOnComment": true}, &prefs)
	var prof collab.Profile
	e.ok(http.StatusOK, "PUT", "/me/profile", carol, map[string]any{"name": "Carol"}, &prof)
	_ = bob

	type key struct{ PK, SK, ItemType, GSI1PK, GSI1SK, TTL string }
	ttl := func(ts string) string { return strconv.FormatInt(s4Epoch(t, ts), 10) }
	want := []key{
		{"RESOURCE#GOAL#goal-123", "META", "Resource", "", "", ""},
		{"RESOURCE#QUEST#Quest_1", "META", "Resource", "", "", ""},
		{"RESOURCE#GOAL#goal-123", "INVITE#inv-456", "CollaborationInvite", "USER#bob", "INVITE#pending#" + i1.CreatedAt, ttl(i1.ExpiresAt)},
		{"RESOURCE#GOAL#goal-123", "INVITE#inv-mail", "CollaborationInvite", "EMAIL#zed@example.com", "INVITE#pending#" + i2.CreatedAt, ttl(i2.ExpiresAt)},
		{"RESOURCE#GOAL#goal-123", "INVITE#inv-carol", "CollaborationInvite", "EMAIL#carol@example.com", "INVITE#accepted#" + i3.CreatedAt, ""},
		{"RESOURCE#QUEST#Quest_1", "INVITE#inv-dave", "CollaborationInvite", "USER#dave", "INVITE#declined#" + i4.CreatedAt, ttl(i4.ExpiresAt)},
		{"RESOURCE#GOAL#goal-123", "COLLABORATOR#carol", "Collaborator", "USER#carol", "COLLAB#goal#" + acc.Collaborator.JoinedAt, ""},
		{"RESOURCE#GOAL#goal-123", "COMMENT#" + c1.CreatedAt + "#cmt-456", "Comment", "", "", ""},
		{"RESOURCE#GOAL#goal-123", "COMMENT#" + c2.CreatedAt + "#cmt-789", "Comment", "COMMENT#cmt-456", "CREATED#" + c2.CreatedAt, ""},
		{"COMMENT#cmt-456", "META", "CommentRef", "", "", ""},
		{"COMMENT#cmt-789", "META", "CommentRef", "", "", ""},
		{"COMMENT#cmt-456", "REACTION#alice#👍", "Reaction", "", "", ""},
		{"USER#carol", "COLLAB_PREFS", "NotificationPreference", "", "", ""},
		{"USER#carol", "PROFILE", "UserProfile", "USER#carol", "PROFILE", ""},
	}
	sortKeys := func(ks []key) {
		sort.Slice(ks, func(i, j int) bool { return ks[i].PK+" "+ks[i].SK < ks[j].PK+" "+ks[j].SK })
	}
	sortKeys(want)
	items := e.scan()
	var got []key
	byKey := map[string]map[string]any{}
	for _, it := range items {
		s := func(n string) string { v, _ := it[n].(string); return v }
		k := key{PK: s("PK"), SK: s("SK"), ItemType: s("itemType"), GSI1PK: s("GSI1PK"), GSI1SK: s("GSI1SK")}
		if n, ok := it["ttl"].(float64); ok {
			k.TTL = strconv.FormatInt(int64(n), 10)
		}
		for _, a := range []string{"GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK", "derived"} {
			if _, ok := it[a]; ok {
				t.Errorf("%s %s carries %s", k.PK, k.SK, a)
			}
		}
		got = append(got, k)
		byKey[k.PK+" "+k.SK] = it
	}
	sortKeys(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if g.ResourceType != collab.Goal || q.ResourceType != collab.Quest {
		t.Errorf("resources %+v %+v", g, q)
	}

	// The seed's attributes, item by item (keys and itemType aside).
	attrs := func(pk, sk string) map[string]any {
		it := s4Clone(byKey[pk+" "+sk])
		for _, a := range []string{"PK", "SK", "GSI1PK", "GSI1SK", "itemType"} {
			delete(it, a)
		}
		return it
	}
	for name, c := range map[string]struct {
		got, want map[string]any
	}{
		"resource": {attrs("RESOURCE#GOAL#goal-123", "META"), map[string]any{
			"resourceType": "goal", "resourceId": "goal-123", "title": "Run", "ownerId": "alice", "createdAt": g.CreatedAt}},
		"invite": {attrs("RESOURCE#GOAL#goal-123", "INVITE#inv-456"), map[string]any{
			"inviteId": "inv-456", "inviterId": "alice", "inviteeId": "bob", "inviteeEmail": "collaborator@example.com",
			"resourceType": "goal", "resourceId": "goal-123", "status": "pending", "message": "Would you like to collaborate on this goal?",
			"expiresAt": i1.ExpiresAt, "createdAt": i1.CreatedAt, "updatedAt": i1.CreatedAt, "ttl": float64(s4Epoch(t, i1.ExpiresAt))}},
		"collaborator": {attrs("RESOURCE#GOAL#goal-123", "COLLABORATOR#carol"), map[string]any{
			"userId": "carol", "resourceType": "goal", "resourceId": "goal-123", "role": "collaborator",
			"joinedAt": acc.Collaborator.JoinedAt, "inviteId": "inv-carol"}},
		"comment": {attrs("RESOURCE#GOAL#goal-123", "COMMENT#"+c1.CreatedAt+"#cmt-456"), map[string]any{
			"commentId": "cmt-456", "resourceType": "goal", "resourceId": "goal-123", "userId": "carol",
			"text": "Great progress on this goal! @user-123 what do you think?", "mentions": []any{"user-123"}, "createdAt": c1.CreatedAt}},
		"reply": {attrs("RESOURCE#GOAL#goal-123", "COMMENT#"+c2.CreatedAt+"#cmt-789"), map[string]any{
			"commentId": "cmt-789", "resourceType": "goal", "resourceId": "goal-123", "userId": "alice", "parentId": "cmt-456",
			"text": "Thanks", "createdAt": c2.CreatedAt}},
		"comment reference": {attrs("COMMENT#cmt-456", "META"), map[string]any{
			"commentId": "cmt-456", "resourceType": "goal", "resourceId": "goal-123", "createdAt": c1.CreatedAt, "userId": "carol"}},
		"reaction": {attrs("COMMENT#cmt-456", "REACTION#alice#👍"), map[string]any{
			"commentId": "cmt-456", "resourceType": "goal", "resourceId": "goal-123", "userId": "alice", "emoji": "👍",
			"createdAt": byKey["COMMENT#cmt-456 REACTION#alice#👍"]["createdAt"]}},
		"preferences": {attrs("USER#carol", "COLLAB_PREFS"), map[string]any{
			"userId": "carol", "emailOnInvite": true, "emailOnComment": true, "emailOnMention": true, "emailOnReaction": false, "updatedAt": prefs.UpdatedAt}},
		"profile": {attrs("USER#carol", "PROFILE"), map[string]any{"userId": "carol", "name": "Carol", "updatedAt": prof.UpdatedAt}},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s attributes (-want +got):\n%s", name, diff)
		}
	}
	accepted := attrs("RESOURCE#GOAL#goal-123", "INVITE#inv-carol")
	if accepted["status"] != "accepted" || accepted["respondedBy"] != "carol" || accepted["updatedAt"] != acc.Invite.UpdatedAt || accepted["ttl"] != nil {
		t.Errorf("accepted invite %v", accepted)
	}
	declined := attrs("RESOURCE#QUEST#Quest_1", "INVITE#inv-dave")
	if declined["status"] != "declined" || declined["respondedBy"] != "dave" || declined["resourceType"] != "quest" {
		t.Errorf("declined invite %v", declined)
	}
}

func s4Clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestSeed004BadInput: bad input is a 400 naming each bad field and writes
// nothing; a caller who may not act gets the 404 or 403 first.
func TestSeed004BadInput(t *testing.T) {
	t.Parallel()
	e := newS4Env(t)
	alice, bob, mallory := e.token("alice", ""), e.token("bob", ""), e.token("mallory", "")
	noMail := e.token("carol", "")
	e.createResource(alice, "goal", "g1", "Run")
	G := "/resources/goal/g1"
	e.createInvite(alice, G, "i1", map[string]any{"inviteeId": "bob"})
	e.ok(http.StatusOK, "POST", G+"/invites/i1/accept", bob, nil, nil)
	e.createComment(alice, G, "c1", map[string]any{"text": "hello"})
	before := e.scan()

	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
		fields                    []string
	}{
		{"resource unknown field", "POST", "/resources", alice, `{"resourceType":"goal","title":"t","colour":"red"}`, 400, []string{"colour"}},
		{"resource wrong types", "POST", "/resources", alice, `{"resourceType":1,"title":true}`, 400, []string{"resourceType", "title"}},
		{"resource bad type", "POST", "/resources", alice, `{"resourceType":"habit","title":"t"}`, 400, []string{"resourceType"}},
		{"resource type in upper case", "POST", "/resources", alice, `{"resourceType":"GOAL","title":"t"}`, 400, []string{"resourceType"}},
		{"resource missing", "POST", "/resources", alice, `{}`, 400, []string{"resourceType", "title"}},
		{"resource blank title", "POST", "/resources", alice, `{"resourceType":"goal","title":"  "}`, 400, []string{"title"}},
		{"resource long title", "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": long(201)}, 400, []string{"title"}},
		{"resource no body", "POST", "/resources", alice, ``, 400, []string{"body"}},
		{"resource trailing data", "POST", "/resources", alice, `{"resourceType":"goal","title":"t"} {}`, 400, []string{"body"}},
		{"bad type in path", "POST", "/resources/habit/g1/invites", alice, `{"inviteeId":"bob"}`, 400, []string{"type"}},
		{"bad type in path, comments", "POST", "/resources/Goal/g1/comments", alice, `{"text":"x"}`, 400, []string{"type"}},
		{"invite bad id", "POST", G + "/invites", alice, `{"inviteeId":"a#b"}`, 400, []string{"inviteeId"}},
		{"invite id with a space", "POST", G + "/invites", alice, `{"inviteeId":"a b"}`, 400, []string{"inviteeId"}},
		{"invite bad email", "POST", G + "/invites", alice, `{"inviteeEmail":"not-an-email"}`, 400, []string{"inviteeEmail"}},
		{"invite email with a name", "POST", G + "/invites", alice, `{"inviteeEmail":"Bob <bob@example.com>"}`, 400, []string{"inviteeEmail"}},
		{"invite nobody", "POST", G + "/invites", alice, `{"message":"hi"}`, 400, []string{"inviteeId"}},
		{"invite self", "POST", G + "/invites", alice, `{"inviteeId":"alice"}`, 400, []string{"inviteeId"}},
		{"invite long message", "POST", G + "/invites", alice, map[string]any{"inviteeId": "carol", "message": long(1001)}, 400, []string{"message"}},
		{"invite unknown field", "POST", G + "/invites", alice, `{"inviteeId":"carol","role":"admin"}`, 400, []string{"role"}},
		{"invite wrong types", "POST", G + "/invites", alice, `{"inviteeId":5,"inviteeEmail":true,"message":{}}`, 400, []string{"inviteeId", "inviteeEmail", "message"}},
		{"invite, all at once", "POST", G + "/invites", alice, map[string]any{"inviteeId": "a#b", "inviteeEmail": "x", "message": long(1001)}, 400, []string{"inviteeId", "inviteeEmail", "message"}},
		{"invite by a collaborator", "POST", G + "/invites", bob, `{"inviteeId":"a#b"}`, 403, nil},
		{"invite by a stranger", "POST", G + "/invites", mallory, `{"inviteeId":"a#b"}`, 404, nil},
		{"invite on no resource", "POST", "/resources/goal/nope/invites", alice, `{"inviteeId":"a#b"}`, 404, nil},
		{"comment too long", "POST", G + "/comments", bob, map[string]any{"text": long(2001)}, 400, []string{"text"}},
		{"comment empty", "POST", G + "/comments", bob, `{"text":""}`, 400, []string{"text"}},
		{"comment no text", "POST", G + "/comments", bob, `{"parentId":"c1"}`, 400, []string{"text"}},
		{"comment text a number", "POST", G + "/comments", bob, `{"text":1}`, 400, []string{"text"}},
		{"comment unknown field", "POST", G + "/comments", bob, `{"text":"x","mentions":["alice"]}`, 400, []string{"mentions"}},
		{"comment bad parent", "POST", G + "/comments", bob, `{"text":"x","parentId":"nope"}`, 400, []string{"parentId"}},
		{"comment parent a number", "POST", G + "/comments", bob, `{"text":"x","parentId":1}`, 400, []string{"parentId"}},
		{"comment by a stranger", "POST", G + "/comments", mallory, `{"text":""}`, 404, nil},
		{"edit empty", "PATCH", "/comments/c1", alice, `{"text":""}`, 400, []string{"text"}},
		{"edit too long", "PATCH", "/comments/c1", alice, map[string]any{"text": long(2001)}, 400, []string{"text"}},
		{"edit unknown field", "PATCH", "/comments/c1", alice, `{"text":"x","userId":"bob"}`, 400, []string{"userId"}},
		{"edit by another member", "PATCH", "/comments/c1", bob, `{"text":""}`, 403, nil},
		{"edit by a stranger", "PATCH", "/comments/c1", mallory, `{"text":""}`, 404, nil},
		{"bad emoji", "PUT", "/comments/c1/reactions/abc", bob, nil, 400, []string{"emoji"}},
		{"bad emoji by a stranger", "PUT", "/comments/c1/reactions/abc", mallory, nil, 404, nil},
		{"preferences wrong type", "PUT", "/me/notification-preferences", bob, `{"emailOnInvite":"yes"}`, 400, []string{"emailOnInvite"}},
		{"preferences unknown", "PUT", "/me/notification-preferences", bob, `{"emailOnSMS":true}`, 400, []string{"emailOnSMS"}},
		{"profile blank name", "PUT", "/me/profile", bob, `{"name":" "}`, 400, []string{"name"}},
		{"profile long name", "PUT", "/me/profile", bob, map[string]any{"name": long(201)}, 400, []string{"name"}},
		{"profile bad email", "PUT", "/me/profile", bob, `{"name":"Bob","email":"bob@"}`, 400, []string{"email"}},
		{"profile unknown", "PUT", "/me/profile", bob, `{"name":"Bob","userId":"alice"}`, 400, []string{"userId"}},
		{"my invites status", "GET", "/me/invites?status=expired", bob, nil, 400, []string{"status"}},
		{"my invites via", "GET", "/me/invites?via=sms", bob, nil, 400, []string{"via"}},
		{"my invites via email, no address", "GET", "/me/invites?via=email", noMail, nil, 400, []string{"via"}},
		{"my collaborations type", "GET", "/me/collaborations?type=habit", bob, nil, 400, []string{"type"}},
		{"limit 0", "GET", G + "/comments?limit=0", bob, nil, 400, []string{"limit"}},
		{"limit 101", "GET", "/comments/c1/reactions?limit=101", bob, nil, 400, []string{"limit"}},
		{"foreign cursor", "GET", G + "/collaborators?cursor=eyJQSyI6IlgiLCJTSyI6IlkifQ", bob, nil, 400, []string{"cursor"}},
		{"dev token bad email", "POST", "/dev/tokens", "", `{"userId":"bob","email":"bob"}`, 400, []string{"email"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := *e
			ec.t = t
			d := ec.prob(ec.do(tc.method, tc.path, tc.token, tc.body), tc.status, tc.fields...)
			if tc.status == 400 && d != "invalid request" {
				t.Errorf("detail %q", d)
			}
		})
	}
	if diff := cmp.Diff(before, e.scan()); diff != "" {
		t.Errorf("bad input changed the table (-before +after):\n%s", diff)
	}
	// The 403 is the handler's, whatever the body.
	d1 := e.prob(e.do("POST", G+"/invites", bob, `{"inviteeId":"a#b"}`), 403)
	d2 := e.prob(e.do("POST", G+"/invites", bob, `{"inviteeId":"carol"}`), 403)
	if d1 != d2 {
		t.Errorf("403 details differ: %q vs %q", d1, d2)
	}
	// The limits are inclusive.
	e.ok(http.StatusCreated, "POST", "/resources", alice, map[string]any{"resourceType": "task", "title": strings.Repeat("é", 200)}, nil)
	e.ok(http.StatusCreated, "POST", G+"/invites", alice, map[string]any{"inviteeId": "carol", "message": strings.Repeat("é", 1000)}, nil)
	e.ok(http.StatusCreated, "POST", G+"/comments", bob, map[string]any{"text": strings.Repeat("é", 2000)}, nil)
}
