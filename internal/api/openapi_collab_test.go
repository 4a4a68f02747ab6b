package api

// Tests of openapi.yaml for the collaboration routes (seed 004): the
// document's rules are the handlers', its validation names the fields as
// the handlers do (and lets through what they accept), and every response
// of a collaboration walkthrough matches it.

import (
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/collab"
)

// TestOpenAPICollabRulesMatchTheHandlers: the collaboration schemas carry
// the handlers' constants, and their patterns and formats accept and refuse
// what the handlers do.
func TestOpenAPICollabRulesMatchTheHandlers(t *testing.T) {
	t.Parallel()
	doc := newTestDoc(t)
	types := stringsOf(collab.ResourceTypes)
	checkRules(t, map[string]docRule{
		"ResourceType enum":        {enumStrings(doc.schema("ResourceType").Enum), types},
		"type query enum":          {enumStrings(doc.param("ResourceTypeQuery").Enum), types},
		"type path enum":           {enumStrings(doc.param("ResourceType").Enum), types},
		"invite status enum":       {enumStrings(doc.prop("Invite", "status").Enum), []string{collab.InvitePending, collab.InviteAccepted, collab.InviteDeclined, collab.InviteExpired}},
		"invite status query enum": {enumStrings(doc.param("InviteStatusQuery").Enum), []string{collab.InvitePending, collab.InviteAccepted, collab.InviteDeclined}},
		"role enum":                {enumStrings(doc.prop("Collaborator", "role").Enum), []string{collab.RoleCollaborator}},
		"notification type enum":   {enumStrings(doc.prop("Notification", "type").Enum), []string{collab.NotifyInvite, collab.NotifyComment, collab.NotifyMention, collab.NotifyReaction, collab.NotifyRecipeCooked, collab.NotifyRecipeRated, collab.NotifyRecipeTop10}},
		"title maxLength":          {*doc.prop("CreateResourceRequest", "title").MaxLength, uint64(maxResourceTitle)},
		"message maxLength":        {*doc.prop("CreateInviteRequest", "message").MaxLength, uint64(maxInviteMessage)},
		"text maxLength":           {*doc.schema("CommentText").MaxLength, uint64(collab.MaxCommentLength)},
		"profile name maxLength":   {*doc.prop("ProfileRequest", "name").MaxLength, uint64(maxName)},
		"inviteeId x-reason":       {xReason(doc.prop("CreateInviteRequest", "inviteeId")), auth.UserIDRule},
		"inviteeId pattern": {doc.prop("CreateInviteRequest", "inviteeId").Pattern,
			"^(" + strings.TrimSuffix(strings.TrimPrefix(doc.schema("UserId").Pattern, "^"), "$") + ")?$"},
		"emoji x-reason": {xReason(doc.param("Emoji")), "must be one emoji"},
		"preferences": {slices.Sorted(maps.Keys(doc.schema("PreferencesRequest").Properties)),
			[]string{"emailOnComment", "emailOnInvite", "emailOnMention", "emailOnReaction"}},
	})
	for _, s := range []*openapi3.Schema{doc.prop("CreateInviteRequest", "inviteeEmail"), doc.prop("ProfileRequest", "email"), doc.prop("TokenRequest", "email")} {
		if s.Format != "email" || xReason(s) != "must be an e-mail address" || !s.Nullable {
			t.Errorf("e-mail property %+v: want format email, nullable, x-reason", s)
		}
	}

	// The emoji pattern agrees with collab.ValidEmoji within the length the
	// handler allows (8 code points, 32 bytes), which it checks itself.
	emoji := regexp.MustCompile(doc.param("Emoji").Pattern)
	var samples []string
	for r := rune(0); r <= 0x1FAFF; r++ {
		if utf8.ValidRune(r) {
			samples = append(samples, string(r))
		}
	}
	samples = append(samples, "👍", "❤️", "🎉", "👍🏽", "👨‍👩‍👧", "a👍", "👍a", "👍 ", "#👍", "1️⃣", "👍👍", "🏳️‍🌈", ":+1:", "^", "\u200d", "👍\u00a0", "½👍", "２👍", "🇨🇭")
	for _, s := range samples {
		if utf8.RuneCountInString(s) > 8 || len(s) > 32 {
			continue
		}
		if got, want := emoji.MatchString(s), collab.ValidEmoji(s); got != want {
			t.Errorf("emoji %q (%U): openapi.yaml says %v, collab.ValidEmoji %v", s, []rune(s), got, want)
		}
	}

	// format: email is auth.ValidEmail (empty means absent).
	es := &schema{Type: "string", Format: "email"}
	for _, s := range []string{"", "bob@example.com", "Bob@Example.COM", "a.b+c@d.ch", "bob", "bob@", "@x.com", "Bob <bob@example.com>", "bob@example.com ", "a@b@c", strings.Repeat("x", 250) + "@x.ch"} {
		var v visitor
		v.visit(es, s, nil)
		err := v.errs
		if got, want := len(err) == 0, s == "" || auth.ValidEmail(s); got != want {
			t.Errorf("e-mail %q: openapi.yaml accepts %v, auth.ValidEmail %v (%v)", s, got, want, err)
		}
	}
}

// TestOpenAPICollabValidatesRequests: the document refuses bad
// collaboration requests naming each field as the handlers do, and lets
// through what they accept.
func TestOpenAPICollabValidatesRequests(t *testing.T) {
	t.Parallel()
	emojis := strings.Repeat("😀", collab.MaxCommentLength) // 2000 characters (4000 UTF-16 units, 8000 bytes)
	for _, tc := range []struct {
		name, pattern, path, body string
		pathValues                map[string]string
		want                      map[string]string
	}{
		{"resource", "POST /resources", "/resources", `{"resourceType":"habit","title":" ","colour":"red"}`, nil,
			map[string]string{"resourceType": `must be "goal", "quest" or "task"`, "title": "is required", "colour": "unknown field"}},
		{"resource types", "POST /resources", "/resources", `{"resourceType":1,"title":true}`, nil,
			map[string]string{"resourceType": "must be a string", "title": "must be a string"}},
		{"resource missing", "POST /resources", "/resources", `{}`, nil,
			map[string]string{"resourceType": "is required", "title": "is required"}},
		{"title too long", "POST /resources", "/resources", `{"resourceType":"goal","title":"` + strings.Repeat("é", 201) + `"}`, nil,
			map[string]string{"title": "must be at most 200 characters"}},
		{"path type", "GET /resources/{type}/{id}", "/resources/habit/g1", ``, map[string]string{"type": "habit"},
			map[string]string{"type": `must be "goal", "quest" or "task"`}},
		{"invite", "POST /resources/{type}/{id}/invites", "/resources/goal/g1/invites",
			`{"inviteeId":"a#b","inviteeEmail":"Bob <bob@example.com>","message":"` + strings.Repeat("x", 1001) + `","cc":[]}`, nil,
			map[string]string{"inviteeId": auth.UserIDRule, "inviteeEmail": "must be an e-mail address", "message": "must be at most 1000 characters", "cc": "unknown field"}},
		{"invite types", "POST /resources/{type}/{id}/invites", "/resources/goal/g1/invites", `{"inviteeId":5,"inviteeEmail":false,"message":[]}`, nil,
			map[string]string{"inviteeId": "must be a string", "inviteeEmail": "must be a string", "message": "must be a string"}},
		{"comment", "POST /resources/{type}/{id}/comments", "/resources/goal/g1/comments", `{"text":"` + strings.Repeat("é", 2001) + `","parentId":5,"html":true}`, nil,
			map[string]string{"text": "must be at most 2000 characters", "parentId": "must be a string", "html": "unknown field"}},
		{"comment blank", "POST /resources/{type}/{id}/comments", "/resources/goal/g1/comments", `{"text":"  \n"}`, nil,
			map[string]string{"text": "is required"}},
		{"comment missing", "POST /resources/{type}/{id}/comments", "/resources/goal/g1/comments", `{"parentId":"c1"}`, nil,
			map[string]string{"text": "is required"}},
		{"comment emoji too long", "POST /resources/{type}/{id}/comments", "/resources/goal/g1/comments", `{"text":"` + emojis + `😀"}`, nil,
			map[string]string{"text": "must be at most 2000 characters"}},
		{"edit", "PATCH /comments/{commentId}", "/comments/c1", `{"text":null}`, nil, map[string]string{"text": "must not be null"}},
		{"emoji", "PUT /comments/{commentId}/reactions/{emoji}", "/comments/c1/reactions/abc", ``, map[string]string{"emoji": "abc"},
			map[string]string{"emoji": "must be one emoji"}},
		{"emoji hash", "DELETE /comments/{commentId}/reactions/{emoji}", "/comments/c1/reactions/%23", ``, map[string]string{"emoji": "#"},
			map[string]string{"emoji": "must be one emoji"}},
		{"preferences", "PUT /me/notification-preferences", "/me/notification-preferences", `{"emailOnInvite":"yes","emailOnSMS":true}`, nil,
			map[string]string{"emailOnInvite": "must be a boolean", "emailOnSMS": "unknown field"}},
		{"profile", "PUT /me/profile", "/me/profile", `{"name":"","email":"bob@"}`, nil,
			map[string]string{"name": "is required", "email": "must be an e-mail address"}},
		{"my invites", "GET /me/invites", "/me/invites?status=expired&via=sms&limit=0", ``, nil,
			map[string]string{"status": `must be "pending", "accepted" or "declined"`, "via": `must be "email" or absent`, "limit": "must be an integer from 1 to 100"}},
		{"my collaborations", "GET /me/collaborations", "/me/collaborations?type=habit", ``, nil,
			map[string]string{"type": `must be "goal", "quest" or "task"`}},
		{"token email", "POST /dev/tokens", "/dev/tokens", `{"userId":"bob","email":"bob"}`, nil,
			map[string]string{"email": "must be an e-mail address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := specRequest(tc.pattern, tc.path, tc.body)
			for k, v := range tc.pathValues {
				r.SetPathValue(k, v)
			}
			got := fieldsOf(t, validated(t, tc.pattern, r))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}

	// What the handlers accept passes: null or empty optional members,
	// lengths in characters (not UTF-16 units), empty query parameters.
	for _, tc := range []struct{ pattern, path, body string }{
		{"POST /resources", "/resources", `{"resourceType":"quest","title":"` + strings.Repeat("😀", 200) + `"}`},
		{"POST /resources/{type}/{id}/invites", "/resources/goal/g1/invites", `{"inviteeId":"bob","inviteeEmail":null,"message":null}`},
		{"POST /resources/{type}/{id}/invites", "/resources/goal/g1/invites", `{"inviteeId":"","inviteeEmail":"Bob@Example.com","message":""}`},
		{"POST /resources/{type}/{id}/invites", "/resources/goal/g1/invites", `{}`}, // the handler names what is missing
		{"POST /resources/{type}/{id}/invites", "/resources/goal/g1/invites", `{"inviteeId":"bob","message":"` + strings.Repeat("🎉", 1000) + `"}`},
		{"POST /resources/{type}/{id}/comments", "/resources/goal/g1/comments", `{"text":"` + emojis + `","parentId":null}`},
		{"POST /resources/{type}/{id}/comments", "/resources/goal/g1/comments", `{"text":"<script>alert(1)</script>","parentId":""}`},
		{"PATCH /comments/{commentId}", "/comments/c1", `{"text":"` + strings.Repeat("é", 2000) + `"}`},
		{"PUT /comments/{commentId}/reactions/{emoji}", "/comments/c1/reactions/%F0%9F%91%8D", ``},
		{"PUT /me/notification-preferences", "/me/notification-preferences", `{}`},
		{"PUT /me/notification-preferences", "/me/notification-preferences", `{"emailOnInvite":false,"emailOnComment":null,"emailOnMention":true,"emailOnReaction":true}`},
		{"PUT /me/profile", "/me/profile", `{"name":"Bob","email":""}`},
		{"PUT /me/profile", "/me/profile", `{"name":"Bob","email":null}`},
		{"GET /me/invites", "/me/invites?status=&via=&limit=&cursor=", ``},
		{"GET /me/invites", "/me/invites?status=declined&via=email", ``},
		{"GET /me/collaborations", "/me/collaborations?type=", ``},
		{"GET /me/collaborations", "/me/collaborations?type=task&limit=100", ``},
		{"POST /dev/tokens", "/dev/tokens", `{"userId":"bob","email":"bob@example.com"}`},
		{"POST /dev/tokens", "/dev/tokens", `{"userId":"bob","email":null}`},
	} {
		r := specRequest(tc.pattern, tc.path, tc.body)
		r.Header.Set("Content-Type", "text/plain")
		if err := validated(t, tc.pattern, r); err != nil {
			t.Errorf("%s %.80s: %v", tc.pattern, tc.body, err)
		}
	}
}

// TestOpenAPICollabResponses: every response of a collaboration
// walkthrough, errors included, matches the document (checked in
// oaEnv.do); authorization comes before input here as for rooms.
func TestOpenAPICollabResponses(t *testing.T) {
	t.Parallel()
	e := newOAEnv(t)
	alice, bob, mallory := e.token("alice"), e.token("bob"), e.token("mallory")
	carol := e.mint(map[string]any{"userId": "carol", "email": "Carol@Example.com"})
	e.problem(e.do("POST", "/dev/tokens", "", `{"userId":"carol","email":"carol"}`), 400, map[string]string{"email": "must be an e-mail address"})

	var res struct{ ResourceID string }
	r := e.ok(http.StatusCreated, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Run"}, &res)
	R := "/resources/goal/" + res.ResourceID
	if loc := r.header.Get("Location"); loc != R {
		t.Errorf("Location %q, want %s", loc, R)
	}
	e.ok(http.StatusCreated, "POST", "/resources", alice, map[string]any{"resourceType": "task", "title": "Other"}, nil)
	e.problem(e.do("POST", "/resources", alice, `{"resourceType":"habit","title":"x"}`), 400, map[string]string{"resourceType": ""})
	e.problem(e.do("POST", "/resources", "", `{}`), 401, nil)
	e.ok(http.StatusOK, "GET", R, alice, nil, nil)
	e.problem(e.do("GET", R, mallory, nil), 404, nil)
	e.problem(e.do("GET", "/resources/habit/"+res.ResourceID, alice, nil), 400, map[string]string{"type": ""})

	// Invites.
	var ib, ic, ie struct{ InviteID string }
	e.ok(http.StatusCreated, "POST", R+"/invites", alice, map[string]any{"inviteeId": "bob", "message": "Join <b>us</b>"}, &ib)
	e.ok(http.StatusCreated, "POST", R+"/invites", alice, map[string]any{"inviteeEmail": "carol@example.com"}, &ic)
	e.ok(http.StatusCreated, "POST", R+"/invites", alice, map[string]any{"inviteeId": "erin", "inviteeEmail": "erin@example.com"}, &ie)
	e.problem(e.do("POST", R+"/invites", alice, `{}`), 400, map[string]string{"inviteeId": "inviteeId or inviteeEmail is required"})
	e.problem(e.do("POST", R+"/invites", alice, `{"inviteeId":"alice"}`), 400, map[string]string{"inviteeId": "the owner cannot invite themselves"})
	e.problem(e.do("POST", R+"/invites", mallory, `{"inviteeId":"a#b"}`), 404, nil)
	e.ok(http.StatusOK, "GET", R+"/invites?limit=2", alice, nil, nil)
	e.problem(e.do("GET", R+"/invites?limit=0", mallory, nil), 404, nil)
	e.ok(http.StatusOK, "GET", R+"/invites/"+ib.InviteID, bob, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/invites/"+ic.InviteID, carol, nil, nil)
	e.problem(e.do("GET", R+"/invites/"+ib.InviteID, mallory, nil), 404, nil)
	e.ok(http.StatusOK, "GET", "/me/invites", bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/me/invites?via=email&status=pending", carol, nil, nil)
	e.problem(e.do("GET", "/me/invites?via=email", bob, nil), 400, map[string]string{"via": "your token carries no verified e-mail address"})
	e.problem(e.do("POST", R+"/invites/"+ib.InviteID+"/accept", alice, nil), 403, nil)
	e.ok(http.StatusOK, "POST", R+"/invites/"+ib.InviteID+"/accept", bob, nil, nil)
	e.ok(http.StatusOK, "POST", R+"/invites/"+ic.InviteID+"/accept", carol, nil, nil)
	e.ok(http.StatusOK, "POST", R+"/invites/"+ie.InviteID+"/decline", e.token("erin"), nil, nil)
	e.problem(e.do("POST", R+"/invites/"+ib.InviteID+"/decline", bob, nil), 409, nil)
	e.problem(e.do("POST", R+"/invites", bob, `{"inviteeId":"a#b"}`), 403, nil)
	e.problem(e.do("GET", R+"/invites", bob, nil), 403, nil)

	// Collaborators.
	e.ok(http.StatusOK, "GET", R+"/collaborators?limit=1", bob, nil, nil)
	e.ok(http.StatusOK, "GET", R+"/collaborators/carol", bob, nil, nil)
	e.problem(e.do("GET", R+"/collaborators/erin", bob, nil), 404, nil)
	e.ok(http.StatusOK, "GET", "/me/collaborations?type=goal", bob, nil, nil)
	e.problem(e.do("GET", "/me/collaborations?type=habit", bob, nil), 400, map[string]string{"type": ""})

	// Comments.
	var c1, c2, c3 struct{ CommentID string }
	e.ok(http.StatusCreated, "POST", R+"/comments", alice, map[string]any{"text": "Hi @bob <i>x</i>"}, &c1)
	e.ok(http.StatusCreated, "POST", R+"/comments", bob, map[string]any{"text": "Reply", "parentId": c1.CommentID}, &c2)
	e.ok(http.StatusCreated, "POST", R+"/comments", carol, map[string]any{"text": strings.Repeat("😀", collab.MaxCommentLength)}, &c3)
	e.problem(e.do("POST", R+"/comments", bob, map[string]any{"text": "x", "parentId": "nope"}), 400, map[string]string{"parentId": ""})
	e.problem(e.do("POST", R+"/comments", mallory, map[string]any{"text": ""}), 404, nil)
	e.ok(http.StatusOK, "GET", R+"/comments?limit=1", bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/comments/"+c1.CommentID, carol, nil, nil)
	e.ok(http.StatusOK, "GET", "/comments/"+c1.CommentID+"/replies", carol, nil, nil)
	e.problem(e.do("GET", "/comments/"+c1.CommentID, mallory, nil), 404, nil)
	e.problem(e.do("GET", "/comments/nope", alice, nil), 404, nil)
	e.ok(http.StatusOK, "PATCH", "/comments/"+c1.CommentID, alice, map[string]any{"text": "Hi @carol"}, nil)
	e.problem(e.do("PATCH", "/comments/"+c1.CommentID, bob, map[string]any{"text": "mine"}), 403, nil)
	e.problem(e.do("PATCH", "/comments/"+c1.CommentID, bob, `{"text":""}`), 403, nil)
	e.problem(e.do("PATCH", "/comments/"+c1.CommentID, alice, `{"text":""}`), 400, map[string]string{"text": "is required"})
	e.problem(e.do("DELETE", "/comments/"+c1.CommentID, bob, nil), 403, nil)

	// Reactions.
	thumbs := "/comments/" + c1.CommentID + "/reactions/" + url.PathEscape("👍")
	e.ok(http.StatusCreated, "PUT", thumbs, bob, nil, nil)
	e.ok(http.StatusOK, "PUT", thumbs, bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/comments/"+c1.CommentID+"/reactions", alice, nil, nil)
	e.ok(http.StatusOK, "GET", thumbs+"/users/bob", alice, nil, nil)
	e.problem(e.do("GET", thumbs+"/users/carol", alice, nil), 404, nil)
	e.problem(e.do("PUT", "/comments/"+c1.CommentID+"/reactions/abc", bob, nil), 400, map[string]string{"emoji": "must be one emoji"})
	e.problem(e.do("PUT", "/comments/"+c1.CommentID+"/reactions/abc", mallory, nil), 404, nil)
	if r := e.do("DELETE", thumbs, bob, nil); r.status != http.StatusNoContent {
		t.Errorf("remove reaction: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", thumbs, bob, nil); r.status != http.StatusNoContent { // again: the same success
		t.Errorf("remove the reaction again: %d %s", r.status, r.body)
	}
	e.ok(http.StatusCreated, "PUT", "/comments/"+c1.CommentID+"/reactions/"+url.PathEscape("🎉"), carol, nil, nil)

	// The derived reaction counts, from the real projector, on the comment
	// and in lists (a count back at zero is left out).
	e.project()
	var withCounts struct {
		ReactionCounts map[string]int `json:"reactionCounts"`
	}
	e.ok(http.StatusOK, "GET", "/comments/"+c1.CommentID, bob, nil, &withCounts)
	if diff := cmp.Diff(map[string]int{"🎉": 1}, withCounts.ReactionCounts); diff != "" {
		t.Errorf("reaction counts (-want +got):\n%s", diff)
	}
	e.ok(http.StatusOK, "GET", R+"/comments", bob, nil, nil)

	// Deletion, then preferences, profile and notifications.
	if r := e.do("DELETE", "/comments/"+c2.CommentID, bob, nil); r.status != http.StatusNoContent {
		t.Errorf("delete comment: %d %s", r.status, r.body)
	}
	e.ok(http.StatusOK, "GET", "/comments/"+c2.CommentID, bob, nil, nil)
	e.problem(e.do("DELETE", "/comments/"+c2.CommentID, bob, nil), 409, nil)
	e.problem(e.do("PATCH", "/comments/"+c2.CommentID, bob, map[string]any{"text": "again"}), 409, nil)
	e.ok(http.StatusOK, "GET", "/me/notification-preferences", bob, nil, nil)
	e.ok(http.StatusOK, "PUT", "/me/notification-preferences", bob, map[string]any{"emailOnComment": true}, nil)
	e.ok(http.StatusOK, "GET", "/me/notification-preferences", bob, nil, nil)
	e.problem(e.do("GET", "/me/profile", bob, nil), 404, nil)
	e.ok(http.StatusOK, "PUT", "/me/profile", bob, map[string]any{"name": "Bob", "email": "Bob@Example.com"}, nil)
	e.ok(http.StatusOK, "GET", "/me/profile", bob, nil, nil)
	e.ok(http.StatusOK, "GET", "/me/notifications", bob, nil, nil)

	// An expired invite; the 409 says so.
	var iz struct{ InviteID string }
	e.ok(http.StatusCreated, "POST", R+"/invites", alice, map[string]any{"inviteeId": "zoe"}, &iz)
	e.clock.Advance(31 * 24 * time.Hour)
	zoe2 := e.token("zoe") // a token valid at the new time
	var got struct{ Status string }
	e.ok(http.StatusOK, "GET", R+"/invites/"+iz.InviteID, zoe2, nil, &got)
	if got.Status != collab.InviteExpired {
		t.Errorf("expired invite reads as %q", got.Status)
	}
	doc := e.problem(e.do("POST", R+"/invites/"+iz.InviteID+"/accept", zoe2, nil), 409, nil)
	if d, _ := doc["detail"].(string); !strings.Contains(d, "expired") {
		t.Errorf("409 detail %q does not say the invite expired", d)
	}
	e.ok(http.StatusOK, "GET", "/me/invites", zoe2, nil, nil)
	e.ok(http.StatusOK, "GET", "/me/invites?status=pending", zoe2, nil, nil)
}
