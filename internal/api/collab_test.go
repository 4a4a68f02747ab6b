package api_test

// Tests of the collaboration seed (seed 004, docs/design.md): every access pattern
// through the writer's HTTP API — resources, invites (by user id, by e-mail
// only, both; accept, decline, expiry), collaborators, threaded comments,
// reactions, notification preferences, profiles and in-app notifications —
// the exact keys of every item, and bad input that writes nothing. All
// against DynamoDB Local.

import (
	"bytes"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/store"
)

// epoch is a timestamp's Unix time.
func epoch(t *testing.T, ts string) int64 {
	t.Helper()
	tm, err := store.ParseTimestamp(ts)
	if err != nil {
		t.Fatalf("timestamp %q: %v", ts, err)
	}
	return tm.Unix()
}

type inviteResp struct {
	Invite       collab.Invite        `json:"invite"`
	Collaborator *collab.Collaborator `json:"collaborator"`
}

// createInvite has the owner invite, with the given invite id.
func (e *env) createInvite(token, resource, id string, body any) collab.Invite {
	e.t.Helper()
	e.ids.queue(id)
	var inv collab.Invite
	e.ok(http.StatusCreated, "POST", resource+"/invites", token, body, &inv)
	if inv.InviteID != id {
		e.t.Fatalf("invite id %q, want %q", inv.InviteID, id)
	}
	return inv
}

func (e *env) createComment(token, resource, id string, body any) collab.Comment {
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

func (e *env) createResource(token, typ, id, title string) collab.Resource {
	e.t.Helper()
	e.ids.queue(id)
	var res collab.Resource
	r := e.ok(http.StatusCreated, "POST", "/resources", token, map[string]any{"resourceType": typ, "title": title}, &res)
	if loc := r.header.Get("Location"); loc != "/resources/"+typ+"/"+id {
		e.t.Errorf("Location %q", loc)
	}
	return res
}

func inviteIDs(invs []collab.Invite) []string {
	out := []string{}
	for _, i := range invs {
		out = append(out, i.InviteID+":"+i.Status)
	}
	return out
}

func commentIDs(cs []collab.Comment) []string {
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
	e := newEnv(t, sequence("id%03d"))
	alice, bob, dave, erin := e.token("alice"), e.token("bob"), e.emailToken("dave", "dave@example.com"), e.token("erin")
	carol, carolNoMail := e.emailToken("carol", "Carol@Example.com"), e.token("carol")
	mallory := e.emailToken("mallory", "mallory@example.com")

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
	e.problem(e.do("GET", G, mallory, nil), 404)
	e.problem(e.do("GET", G, bob, nil), 404) // not yet a collaborator
	e.problem(e.do("GET", "/resources/quest/goal-123", alice, nil), 404)
	e.problem(e.do("GET", "/resources/goal/nope", alice, nil), 404)
	e.problem(e.do("GET", "/resources/habit/goal-123", alice, nil), 400, "type")

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
	e.problem(e.do("POST", G+"/invites", mallory, map[string]any{"inviteeId": "mallory"}), 404)

	// A resource's invites: the owner only, by invite id.
	all, pages := listAll[collab.Invite](e, G+"/invites", alice, 2)
	if diff := cmp.Diff([]string{"inv-bob:pending", "inv-carol:pending", "inv-dave:pending", "inv-erin:pending"}, inviteIDs(all)); diff != "" || pages < 2 {
		t.Errorf("the goal's invites in %d pages (-want +got):\n%s", pages, diff)
	}
	if diff := cmp.Diff(invBob, all[0]); diff != "" {
		t.Errorf("listed invite (-want +got):\n%s", diff)
	}
	e.problem(e.do("GET", G+"/invites", mallory, nil), 404)
	e.problem(e.do("GET", G+"/invites", bob, nil), 404)

	// A user's received invites (GSI1 USER#<inviteeId>), newest first; the
	// pending ones; those sent to the token's e-mail address only.
	var mine list[collab.Invite]
	e.ok(http.StatusOK, "GET", "/me/invites", bob, nil, &mine)
	if diff := cmp.Diff([]string{"inv-bob-goal2:pending", "inv-bob-task:pending", "inv-bob-quest:pending", "inv-bob:pending"}, inviteIDs(mine.Items)); diff != "" {
		t.Errorf("bob's invites (-want +got):\n%s", diff)
	}
	pend, _ := listAll[collab.Invite](e, "/me/invites?status=pending", bob, 3)
	if diff := cmp.Diff(inviteIDs(mine.Items), inviteIDs(pend)); diff != "" {
		t.Errorf("bob's pending invites (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"USER#bob INVITE#pending#" + invBob.CreatedAt}, keys(e.queryItems(store.IndexGSI1, "USER#bob", "INVITE#pending#"+invBob.CreatedAt), store.IndexGSI1)); diff != "" {
		t.Errorf("GSI1 of bob's invite (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?via=email", carol, nil, &mine)
	if diff := cmp.Diff([]string{"inv-carol:pending"}, inviteIDs(mine.Items)); diff != "" {
		t.Errorf("carol's invites by e-mail (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?via=email&status=pending", carol, nil, &mine)
	if len(mine.Items) != 1 {
		t.Errorf("carol's pending invites by e-mail: %v", inviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites", carol, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("carol's invites by user id: %v", inviteIDs(mine.Items))
	}
	e.problem(e.do("GET", "/me/invites?via=email", carolNoMail, nil), 400, "via")
	e.ok(http.StatusOK, "GET", "/me/invites?via=email", dave, nil, &mine) // dave's invite names his id
	if len(mine.Items) != 0 {
		t.Errorf("dave's invites by e-mail only: %v", inviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites", dave, nil, &mine)
	if diff := cmp.Diff([]string{"inv-dave:pending"}, inviteIDs(mine.Items)); diff != "" {
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
	e.problem(e.do("GET", G+"/invites/inv-carol", carolNoMail, nil), 404)
	e.problem(e.do("GET", G+"/invites/inv-carol", bob, nil), 404)
	e.problem(e.do("GET", G+"/invites/inv-bob", mallory, nil), 404)
	e.problem(e.do("GET", G+"/invites/nope", alice, nil), 404)
	e.problem(e.do("GET", "/resources/quest/goal-123/invites/inv-bob", bob, nil), 404)

	// Accept: the invite becomes accepted (GSI1SK INVITE#accepted#…, no
	// ttl) and a Collaborator is written.
	e.problem(e.do("POST", G+"/invites/inv-bob/accept", alice, nil), 403)
	e.problem(e.do("POST", G+"/invites/inv-bob/accept", mallory, nil), 404)
	var acc inviteResp
	e.ok(http.StatusOK, "POST", G+"/invites/inv-bob/accept", bob, nil, &acc)
	if acc.Invite.Status != collab.InviteAccepted || acc.Invite.UpdatedAt <= invBob.CreatedAt || acc.Collaborator == nil {
		t.Fatalf("accepted %+v", acc)
	}
	wantCol := collab.Collaborator{UserID: "bob", ResourceType: collab.Goal, ResourceID: "goal-123", Role: collab.RoleCollaborator, JoinedAt: acc.Invite.UpdatedAt, InviteID: "inv-bob"}
	if diff := cmp.Diff(wantCol, *acc.Collaborator); diff != "" {
		t.Errorf("new collaborator (-want +got):\n%s", diff)
	}
	raw := e.getItem(store.InviteKey(collab.Goal, "goal-123", "inv-bob"))
	if str(raw, "status") != "accepted" || str(raw, "GSI1PK") != "USER#bob" || str(raw, "GSI1SK") != "INVITE#accepted#"+invBob.CreatedAt || raw["ttl"] != nil {
		t.Errorf("accepted invite item %v", raw)
	}
	raw = e.getItem(store.CollaboratorKey(collab.Goal, "goal-123", "bob"))
	if str(raw, "itemType") != "Collaborator" || str(raw, "GSI1PK") != "USER#bob" || str(raw, "GSI1SK") != "COLLAB#goal#"+acc.Invite.UpdatedAt || str(raw, "role") != "collaborator" {
		t.Errorf("collaborator item %v", raw)
	}
	// Unfiltered, by status (pending before accepted), newest first within.
	e.ok(http.StatusOK, "GET", "/me/invites", bob, nil, &mine)
	if diff := cmp.Diff([]string{"inv-bob-goal2:pending", "inv-bob-task:pending", "inv-bob-quest:pending", "inv-bob:accepted"}, inviteIDs(mine.Items)); diff != "" {
		t.Errorf("bob's invites after one acceptance (-want +got):\n%s", diff)
	}
	// Accepting again (a retry) is the same success, nothing written.
	var again struct {
		Invite       collab.Invite
		Collaborator *collab.Collaborator
	}
	e.ok(http.StatusOK, "POST", G+"/invites/inv-bob/accept", bob, nil, &again)
	if again.Invite.Status != collab.InviteAccepted || again.Collaborator == nil || again.Collaborator.UserID != "bob" {
		t.Errorf("accepting twice: %+v", again)
	}
	if d := e.problem(e.do("POST", G+"/invites/inv-bob/decline", bob, nil), 409).Detail; !strings.Contains(d, "already accepted") {
		t.Errorf("declining an accepted invite: detail %q", d)
	}
	e.problem(e.do("GET", G+"/invites", bob, nil), 403) // a collaborator, not the owner
	e.problem(e.do("POST", G+"/invites", bob, map[string]any{"inviteeId": "zed"}), 403)

	// By e-mail: the holder of the verified address accepts.
	e.problem(e.do("POST", G+"/invites/inv-carol/accept", carolNoMail, nil), 404)
	e.ok(http.StatusOK, "POST", G+"/invites/inv-carol/accept", carol, nil, &acc)
	if acc.Collaborator == nil || acc.Collaborator.UserID != "carol" || acc.Invite.Status != collab.InviteAccepted {
		t.Errorf("carol accepted %+v", acc)
	}
	if raw := e.getItem(store.InviteKey(collab.Goal, "goal-123", "inv-carol")); str(raw, "GSI1SK") != "INVITE#accepted#"+invCarol.CreatedAt {
		t.Errorf("accepted e-mail invite item %v", raw)
	}
	e.ok(http.StatusOK, "POST", G+"/invites/inv-dave/accept", dave, nil, nil)

	// An invite to the owner's own address: the owner reads it as its
	// inviter but cannot accept it (no collaborator on one's own resource).
	e.createInvite(alice, G, "inv-self", map[string]any{"inviteeEmail": "alice@example.com"})
	aliceMail := e.emailToken("alice", "alice@example.com")
	e.ok(http.StatusOK, "GET", G+"/invites/inv-self", aliceMail, nil, nil)
	e.problem(e.do("POST", G+"/invites/inv-self/accept", aliceMail, nil), 403)
	if raw := e.getItem(store.CollaboratorKey(collab.Goal, "goal-123", "alice")); raw != nil {
		t.Errorf("the owner became a collaborator: %v", raw)
	}

	// Decline: no collaborator; declining or accepting again is a 409.
	r := e.ok(http.StatusOK, "POST", G+"/invites/inv-erin/decline", erin, nil, &acc)
	if acc.Invite.Status != collab.InviteDeclined || acc.Collaborator != nil || !bytes.Contains(r.body, []byte(`"collaborator":null`)) {
		t.Errorf("declined %s", r.body)
	}
	raw = e.getItem(store.InviteKey(collab.Goal, "goal-123", "inv-erin"))
	if str(raw, "status") != "declined" || !strings.HasPrefix(str(raw, "GSI1SK"), "INVITE#declined#") {
		t.Errorf("declined invite item %v", raw)
	}
	if raw := e.getItem(store.CollaboratorKey(collab.Goal, "goal-123", "erin")); raw != nil {
		t.Errorf("erin became a collaborator: %v", raw)
	}
	if d := e.problem(e.do("POST", G+"/invites/inv-erin/accept", erin, nil), 409).Detail; !strings.Contains(d, "already declined") {
		t.Errorf("accepting a declined invite: detail %q", d)
	}
	e.ok(http.StatusOK, "POST", G+"/invites/inv-erin/decline", erin, nil, nil) // again (a retry): the same success
	e.problem(e.do("GET", G, erin, nil), 404)

	e.ok(http.StatusOK, "POST", "/resources/quest/quest-1/invites/inv-bob-quest/accept", bob, nil, nil)
	e.ok(http.StatusOK, "POST", "/resources/task/task-1/invites/inv-bob-task/accept", bob, nil, nil)
	e.ok(http.StatusOK, "POST", "/resources/goal/goal-2/invites/inv-bob-goal2/accept", bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", bob, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("bob's pending invites after accepting all: %v", inviteIDs(mine.Items))
	}
	accepted, _ := listAll[collab.Invite](e, "/me/invites?status=accepted", bob, 2)
	if diff := cmp.Diff([]string{"inv-bob-goal2:accepted", "inv-bob-task:accepted", "inv-bob-quest:accepted", "inv-bob:accepted"}, inviteIDs(accepted)); diff != "" {
		t.Errorf("bob's accepted invites (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?status=declined", erin, nil, &mine)
	if diff := cmp.Diff([]string{"inv-erin:declined"}, inviteIDs(mine.Items)); diff != "" {
		t.Errorf("erin's declined invites (-want +got):\n%s", diff)
	}

	// Collaborators: of a resource (by user id), one, a user's (newest
	// first within a type) and by type (GSI1 COLLAB#<type>#<joinedAt>).
	cols, pages := listAll[collab.Collaborator](e, G+"/collaborators", carol, 2)
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
	e.problem(e.do("GET", G+"/collaborators/erin", alice, nil), 404)
	e.problem(e.do("GET", G+"/collaborators/alice", alice, nil), 404) // the owner is no collaborator
	e.problem(e.do("GET", G+"/collaborators", mallory, nil), 404)
	e.problem(e.do("GET", G+"/collaborators/bob", mallory, nil), 404)
	e.ok(http.StatusOK, "GET", G, bob, nil, nil) // now a collaborator
	mineCols, _ := listAll[collab.Collaborator](e, "/me/collaborations", bob, 3)
	var got4 []string
	for _, c := range mineCols {
		got4 = append(got4, string(c.ResourceType)+"/"+c.ResourceID)
	}
	if diff := cmp.Diff([]string{"task/task-1", "quest/quest-1", "goal/goal-2", "goal/goal-123"}, got4); diff != "" {
		t.Errorf("bob's collaborations (-want +got):\n%s", diff)
	}
	for typ, want := range map[string][]string{"goal": {"goal/goal-2", "goal/goal-123"}, "quest": {"quest/quest-1"}, "task": {"task/task-1"}} {
		cs, _ := listAll[collab.Collaborator](e, "/me/collaborations?type="+typ, bob, 1)
		var got []string
		for _, c := range cs {
			got = append(got, string(c.ResourceType)+"/"+c.ResourceID)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("bob's %s collaborations (-want +got):\n%s", typ, diff)
		}
	}
	if n := len(e.queryItems(store.IndexGSI1, "USER#bob", "COLLAB#goal#")); n != 2 {
		t.Errorf("GSI1 COLLAB#goal# of bob: %d items", n)
	}
	e.problem(e.do("GET", "/me/collaborations?type=habit", bob, nil), 400, "type")
	var none list[collab.Collaborator]
	e.ok(http.StatusOK, "GET", "/me/collaborations", mallory, nil, &none)
	if none.Items == nil || len(none.Items) != 0 {
		t.Errorf("mallory's collaborations %+v", none)
	}

	// Comments: the owner and collaborators only; mentions; HTML escaped.
	e.problem(e.do("POST", G+"/comments", mallory, map[string]any{"text": "hi"}), 404)
	e.problem(e.do("POST", G+"/comments", erin, map[string]any{"text": "hi"}), 404)
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
	raw = e.getItem(store.CommentKey(collab.Goal, "goal-123", c2.CreatedAt, "cmt-2"))
	if txt := str(raw, "text"); strings.Contains(txt, "<script") || txt != c2.Text {
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
	e.problem(e.do("POST", G+"/comments", alice, map[string]any{"text": "x", "parentId": "cmt-quest"}), 400, "parentId")
	e.problem(e.do("POST", G+"/comments", bob, map[string]any{"text": strings.Repeat("x", collab.MaxCommentLength+1)}), 400, "text")
	e.problem(e.do("POST", G+"/comments", bob, map[string]any{"text": strings.Repeat("😀", collab.MaxCommentLength+1)}), 400, "text")
	e.problem(e.do("POST", G+"/comments", bob, map[string]any{"text": " \n "}), 400, "text")
	e.problem(e.do("POST", G+"/comments", bob, map[string]any{"text": "x", "parentId": "nope"}), 400, "parentId")
	e.problem(e.do("POST", G+"/comments", bob, map[string]any{"text": "x", "parentId": "cmt-other"}), 400, "parentId")

	// Top-level comments (replies left out), oldest first, over pages.
	top, pages := listAll[collab.Comment](e, G+"/comments", bob, 2)
	if diff := cmp.Diff([]string{"cmt-1", "cmt-3", "cmt-5", "cmt-6"}, commentIDs(top)); diff != "" || pages < 2 {
		t.Errorf("top-level comments in %d pages (-want +got):\n%s", pages, diff)
	}
	if diff := cmp.Diff(wantC1, top[0]); diff != "" {
		t.Errorf("listed comment (-want +got):\n%s", diff)
	}
	// Replies (GSI1 COMMENT#<parentId> / CREATED#<createdAt>), oldest first.
	replies, _ := listAll[collab.Comment](e, "/comments/cmt-1/replies", carol, 1)
	if diff := cmp.Diff([]string{"cmt-2", "cmt-4"}, commentIDs(replies)); diff != "" {
		t.Errorf("replies to cmt-1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c2, replies[0]); diff != "" {
		t.Errorf("listed reply (-want +got):\n%s", diff)
	}
	gsi := e.queryItems(store.IndexGSI1, "COMMENT#cmt-1", "")
	if diff := cmp.Diff([]string{"COMMENT#cmt-1 CREATED#" + c2.CreatedAt, "COMMENT#cmt-1 CREATED#" + replies[1].CreatedAt}, keys(gsi, store.IndexGSI1)); diff != "" {
		t.Errorf("GSI1 of the replies (-want +got):\n%s", diff)
	}
	replies, _ = listAll[collab.Comment](e, "/comments/cmt-2/replies", carol, 5)
	if diff := cmp.Diff([]string{"cmt-7"}, commentIDs(replies)); diff != "" {
		t.Errorf("replies to cmt-2 (-want +got):\n%s", diff)
	}
	var gc collab.Comment
	r = e.ok(http.StatusOK, "GET", "/comments/cmt-2", dave, nil, &gc)
	if diff := cmp.Diff(c2, gc); diff != "" || bytes.Contains(r.body, []byte("<script")) {
		t.Errorf("GET reply (-want +got):\n%s\n%s", diff, r.body)
	}
	e.problem(e.do("GET", "/comments/cmt-2", mallory, nil), 404)
	e.problem(e.do("GET", "/comments/cmt-2", erin, nil), 404)
	e.problem(e.do("GET", "/comments/cmt-1/replies", mallory, nil), 404)
	e.problem(e.do("GET", G+"/comments", mallory, nil), 404)
	e.problem(e.do("GET", "/comments/nope", alice, nil), 404)

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
	e.problem(e.do("PATCH", "/comments/cmt-1", bob, map[string]any{"text": "mine now"}), 403)
	e.problem(e.do("PATCH", "/comments/cmt-1", mallory, map[string]any{"text": "mine now"}), 404)

	// Soft delete: the author only; deletedAt set, the text gone.
	e.problem(e.do("DELETE", "/comments/cmt-2", alice, nil), 403)
	e.problem(e.do("DELETE", "/comments/cmt-2", mallory, nil), 404)
	e.ok(http.StatusNoContent, "DELETE", "/comments/cmt-2", bob, nil, nil)
	r = e.ok(http.StatusOK, "GET", "/comments/cmt-2", bob, nil, &gc)
	if gc.DeletedAt == "" || gc.Text != "" || len(gc.Mentions) != 0 || bytes.Contains(r.body, []byte("script")) || bytes.Contains(r.body, []byte("agreed")) {
		t.Errorf("deleted comment %s", r.body)
	}
	raw = e.getItem(store.CommentKey(collab.Goal, "goal-123", c2.CreatedAt, "cmt-2"))
	if str(raw, "deletedAt") != gc.DeletedAt || str(raw, "text") != "" || raw["mentions"] != nil {
		t.Errorf("deleted comment item %v", raw)
	}
	if d := e.problem(e.do("PATCH", "/comments/cmt-2", bob, map[string]any{"text": "back"}), 409).Detail; !strings.Contains(d, "deleted") {
		t.Errorf("editing a deleted comment: detail %q", d)
	}
	e.problem(e.do("DELETE", "/comments/cmt-2", bob, nil), 409)
	replies, _ = listAll[collab.Comment](e, "/comments/cmt-1/replies", carol, 5)
	if diff := cmp.Diff([]string{"cmt-2", "cmt-4"}, commentIDs(replies)); diff != "" || replies[0].DeletedAt == "" {
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
	if diff := cmp.Diff([]string{"COMMENT#cmt-1 REACTION#bob#👍"}, keys(e.queryItems("", "COMMENT#cmt-1", "REACTION#bob#"), "")); diff != "" {
		t.Errorf("bob's reaction items (-want +got):\n%s", diff)
	}
	e.ok(http.StatusCreated, "PUT", C+party, carol, nil, nil)
	e.ok(http.StatusCreated, "PUT", C+heart, alice, nil, nil)
	e.ok(http.StatusCreated, "PUT", C+party, bob, nil, nil)
	e.ok(http.StatusCreated, "PUT", "/comments/cmt-4/reactions/"+thumbs, carol, nil, nil)
	rs, pages := listAll[collab.Reaction](e, "/comments/cmt-1/reactions", dave, 3)
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
	e.problem(e.do("GET", C+thumbs+"/users/carol", alice, nil), 404)
	e.problem(e.do("GET", C+thumbs+"/users/bob", mallory, nil), 404)
	e.ok(http.StatusNoContent, "DELETE", C+thumbs, bob, nil, nil)
	e.ok(http.StatusNoContent, "DELETE", C+thumbs, bob, nil, nil) // again (a retry): the same success
	e.problem(e.do("GET", C+thumbs+"/users/bob", alice, nil), 404)
	if n := len(e.queryItems("", "COMMENT#cmt-1", "REACTION#")); n != 3 {
		t.Errorf("%d reaction items after the removal, want 3", n)
	}
	for _, bad := range []string{"abc", "%23", "1", url.PathEscape("👍 "), url.PathEscape(strings.Repeat("👍", 9))} {
		e.problem(e.do("PUT", C+bad, bob, nil), 400, "emoji")
		e.problem(e.do("GET", C+bad+"/users/bob", bob, nil), 400, "emoji")
	}
	e.problem(e.do("DELETE", C+"abc", bob, nil), 400, "emoji")
	e.problem(e.do("PUT", C+thumbs, mallory, nil), 404)
	e.problem(e.do("PUT", C+"abc", mallory, nil), 404)
	e.problem(e.do("GET", "/comments/cmt-1/reactions", mallory, nil), 404)
	e.problem(e.do("PUT", "/comments/nope/reactions/"+thumbs, bob, nil), 404)

	// Notification preferences: the defaults before any PUT.
	var prefs collab.Preferences
	e.ok(http.StatusOK, "GET", "/me/notification-preferences", bob, nil, &prefs)
	if diff := cmp.Diff(collab.Preferences{UserID: "bob", EmailOnInvite: true, EmailOnMention: true}, prefs); diff != "" {
		t.Errorf("default preferences (-want +got):\n%s", diff)
	}
	if raw := e.getItem(store.PreferencesKey("bob")); raw != nil {
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
	e.problem(e.do("GET", "/me/profile", bob, nil), 404)
	var prof collab.Profile
	e.ok(http.StatusOK, "PUT", "/me/profile", bob, map[string]any{"name": " Bob B. ", "email": "Bob@Example.com"}, &prof)
	wantProf := collab.Profile{UserID: "bob", Name: "Bob B.", Email: "bob@example.com", UpdatedAt: prof.UpdatedAt, CreatedAt: prof.UpdatedAt} // the first PUT made it
	if diff := cmp.Diff(wantProf, prof); diff != "" || prof.UpdatedAt == "" {
		t.Errorf("stored profile (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", "/me/profile", bob, nil, &prof)
	if diff := cmp.Diff(wantProf, prof); diff != "" {
		t.Errorf("GET profile (-want +got):\n%s", diff)
	}

	// In-app notifications are the notifier's: none here.
	var notes list[collab.Notification]
	r = e.ok(http.StatusOK, "GET", "/me/notifications", bob, nil, &notes)
	if notes.Items == nil || len(notes.Items) != 0 || notes.NextCursor != "" {
		t.Errorf("notifications %s", r.body)
	}

	// Expiry: a pending invite past expiresAt reads as expired, is never
	// listed as pending, and cannot be accepted or declined.
	invFrank := e.createInvite(alice, G, "inv-frank", map[string]any{"inviteeId": "frank"})
	e.createInvite(alice, G, "inv-zed", map[string]any{"inviteeEmail": "zed@example.com"})
	frank := e.token("frank")
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", frank, nil, &mine)
	if diff := cmp.Diff([]string{"inv-frank:pending"}, inviteIDs(mine.Items)); diff != "" {
		t.Errorf("frank's pending invites (-want +got):\n%s", diff)
	}
	e.clock.Advance(30*24*time.Hour + time.Minute)
	frank, alice = e.token("frank"), e.token("alice")
	zed := e.emailToken("zed", "zed@example.com")
	e.ok(http.StatusOK, "GET", G+"/invites/inv-frank", frank, nil, &one)
	if one.Status != collab.InviteExpired || one.ExpiresAt != invFrank.ExpiresAt {
		t.Errorf("expired invite reads %+v", one)
	}
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", frank, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("an expired invite is listed as pending: %v", inviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites?via=email&status=pending", zed, nil, &mine)
	if len(mine.Items) != 0 {
		t.Errorf("an expired e-mail invite is listed as pending: %v", inviteIDs(mine.Items))
	}
	e.ok(http.StatusOK, "GET", "/me/invites", frank, nil, &mine)
	if diff := cmp.Diff([]string{"inv-frank:expired"}, inviteIDs(mine.Items)); diff != "" {
		t.Errorf("frank's invites (-want +got):\n%s", diff)
	}
	all, _ = listAll[collab.Invite](e, G+"/invites", alice, 10)
	if diff := cmp.Diff([]string{"inv-bob:accepted", "inv-carol:accepted", "inv-dave:accepted", "inv-erin:declined", "inv-frank:expired", "inv-self:expired", "inv-zed:expired"}, inviteIDs(all)); diff != "" {
		t.Errorf("the goal's invites after the expiry (-want +got):\n%s", diff)
	}
	for _, action := range []string{"accept", "decline"} {
		d := e.problem(e.do("POST", G+"/invites/inv-frank/"+action, frank, nil), 409).Detail
		if !strings.Contains(d, "expired") || !strings.Contains(d, invFrank.ExpiresAt) {
			t.Errorf("%s an expired invite: detail %q", action, d)
		}
	}
	if d := e.problem(e.do("POST", G+"/invites/inv-zed/accept", zed, nil), 409).Detail; !strings.Contains(d, "expired") {
		t.Errorf("accept an expired e-mail invite: detail %q", d)
	}
	raw = e.getItem(store.InviteKey(collab.Goal, "goal-123", "inv-frank"))
	if str(raw, "status") != "pending" || num(raw, "ttl") != epoch(t, invFrank.ExpiresAt) {
		t.Errorf("expired invite item %v", raw)
	}
	if raw := e.getItem(store.CollaboratorKey(collab.Goal, "goal-123", "frank")); raw != nil {
		t.Errorf("frank became a collaborator: %v", raw)
	}
}

// TestSeed004RawKeys: every item a collaboration scenario writes has
// exactly the seed's keys, indexes, ttl and attributes.
func TestSeed004RawKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	alice, bob, dave := e.token("alice"), e.token("bob"), e.token("dave")
	carol := e.emailToken("carol", "carol@example.com")

	g := e.createResource(alice, "goal", "goal-123", "Run")
	q := e.createResource(alice, "quest", "Quest_1", "Learn")
	G := "/resources/goal/goal-123"
	i1 := e.createInvite(alice, G, "inv-456", map[string]any{"inviteeId": "bob", "inviteeEmail": "collaborator@example.com", "message": "Would you like to collaborate on this goal?"})
	i2 := e.createInvite(alice, G, "inv-mail", map[string]any{"inviteeEmail": "zed@example.com"})
	i3 := e.createInvite(alice, G, "inv-carol", map[string]any{"inviteeEmail": "carol@example.com"})
	i4 := e.createInvite(alice, "/resources/quest/Quest_1", "inv-dave", map[string]any{"inviteeId": "dave"})
	var acc inviteResp
	e.ok(http.StatusOK, "POST", G+"/invites/inv-carol/accept", carol, nil, &acc)
	var dec inviteResp
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
	ttl := func(ts string) string { return strconv.FormatInt(epoch(t, ts), 10) }
	want := []key{
		{"RESOURCE#GOAL#goal-123", "META", "Resource", "", "", ""},
		{"RESOURCE#QUEST#Quest_1", "META", "Resource", "", "", ""},
		// the members' access items: the owners', the collaborator's
		{"RESOURCE#GOAL#goal-123", "ACCESS#alice", "ResourceAccess", "", "", ""},
		{"RESOURCE#QUEST#Quest_1", "ACCESS#alice", "ResourceAccess", "", "", ""},
		{"RESOURCE#GOAL#goal-123", "ACCESS#carol", "ResourceAccess", "", "", ""},
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
	items := e.snapshot()
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
		it := maps.Clone(byKey[pk+" "+sk])
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
			"expiresAt": i1.ExpiresAt, "createdAt": i1.CreatedAt, "updatedAt": i1.CreatedAt, "ttl": float64(epoch(t, i1.ExpiresAt))}},
		"collaborator": {attrs("RESOURCE#GOAL#goal-123", "COLLABORATOR#carol"), map[string]any{
			"userId": "carol", "resourceType": "goal", "resourceId": "goal-123", "role": "collaborator",
			"joinedAt": acc.Collaborator.JoinedAt, "inviteId": "inv-carol"}},
		"owner's access": {attrs("RESOURCE#GOAL#goal-123", "ACCESS#alice"), map[string]any{
			"userId": "alice", "resourceType": "goal", "resourceId": "goal-123", "role": "owner"}},
		"collaborator's access": {attrs("RESOURCE#GOAL#goal-123", "ACCESS#carol"), map[string]any{
			"userId": "carol", "resourceType": "goal", "resourceId": "goal-123", "role": "collaborator"}},
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
		"profile": {attrs("USER#carol", "PROFILE"), map[string]any{"userId": "carol", "name": "Carol", "updatedAt": prof.UpdatedAt, "createdAt": prof.UpdatedAt}},
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

// TestSeed004BadInput: bad input is a 400 naming each bad field and writes
// nothing; a caller who may not act gets the 404 or 403 first.
func TestSeed004BadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%03d"))
	alice, bob, mallory := e.token("alice"), e.token("bob"), e.token("mallory")
	noMail := e.token("carol")
	e.createResource(alice, "goal", "g1", "Run")
	G := "/resources/goal/g1"
	e.createInvite(alice, G, "i1", map[string]any{"inviteeId": "bob"})
	e.ok(http.StatusOK, "POST", G+"/invites/i1/accept", bob, nil, nil)
	e.createComment(alice, G, "c1", map[string]any{"text": "hello"})
	before := e.snapshot()

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
			ec := e.withT(t)
			d := ec.problem(ec.do(tc.method, tc.path, tc.token, tc.body), tc.status, tc.fields...).Detail
			if tc.status == 400 && d != "invalid request" {
				t.Errorf("detail %q", d)
			}
		})
	}
	e.unchanged(before, "bad input")
	// The 403 is the handler's, whatever the body.
	d1 := e.problem(e.do("POST", G+"/invites", bob, `{"inviteeId":"a#b"}`), 403).Detail
	d2 := e.problem(e.do("POST", G+"/invites", bob, `{"inviteeId":"carol"}`), 403).Detail
	if d1 != d2 {
		t.Errorf("403 details differ: %q vs %q", d1, d2)
	}
	// The limits are inclusive.
	e.ok(http.StatusCreated, "POST", "/resources", alice, map[string]any{"resourceType": "task", "title": strings.Repeat("é", 200)}, nil)
	e.ok(http.StatusCreated, "POST", G+"/invites", alice, map[string]any{"inviteeId": "carol", "message": strings.Repeat("é", 1000)}, nil)
	e.ok(http.StatusCreated, "POST", G+"/comments", bob, map[string]any{"text": strings.Repeat("é", 2000)}, nil)
}
