package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/store"
)

// writeOps are the DynamoDB operations that write.
var writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}

// A oneWrite route's request, with an Idempotency-Key or without, makes one
// DynamoDB write, a transaction, and only the reads of memberReads before
// it on a member or resource route: the key's record and the access check
// are in the transaction. Its
// repeat with the key answers the first response, marked replayed, with
// no second effect; the key with another body is a 422; an outsider is
// refused as ever, and the refusal is what the key answers again.
func TestOneWriteRoutes(t *testing.T) {
	t.Parallel()
	e, tok := matrixEnv(t, "ow%03d")
	w := buildWorld(t, e, tok, 1)
	routes := api.OneWriteRoutes()
	if len(routes) == 0 {
		t.Fatal("no oneWrite routes")
	}
	for i, pattern := range routes {
		method, tmpl, _ := strings.Cut(pattern, " ")
		// a path, and a body, that make a new thing each time (n: the
		// send's number); a reaction's emoji is in its path
		emojis := []string{"%F0%9F%8E%89", "%F0%9F%9A%80", "%F0%9F%8D%95", "%F0%9F%8C%B5", "%F0%9F%90%A2", "%F0%9F%8E%B8"}
		fresh := map[int]string{} // a new listing per send, for a listing's routes
		pathOf := func(n int) string {
			p := strings.Replace(tmpl, "{emoji}", emojis[n%len(emojis)], 1)
			if strings.Contains(p, "{listingId}") {
				if fresh[n] == "" {
					var v struct{ ListingID string }
					e.ok(201, "POST", "/rooms/"+w.room+"/listings", tok[cOwner], map[string]any{"sourceBrand": "homegate", "title": "Fresh", "location": "Bern"}, &v)
					fresh[n] = v.ListingID
				}
				p = strings.Replace(p, "{listingId}", fresh[n], 1)
			}
			if strings.Contains(p, "/members/{userId}") {
				// a new member to remove
				if fresh[n] == "" {
					fresh[n] = fmt.Sprintf("gone%d", 100*i+n)
					e.ok(201, "POST", "/rooms/"+w.room+"/members", tok[cOwner], map[string]any{"userId": fresh[n]}, nil)
				}
				p = strings.Replace(p, "{userId}", fresh[n], 1)
			}
			return w.path(p)
		}
		caller := cOwner
		if strings.HasPrefix(pattern, "POST /locations") || strings.HasPrefix(pattern, "PATCH /locations") {
			caller = cAdmin
		}
		body := func(n int) any {
			if strings.Contains(pattern, "/reactions/") || strings.HasPrefix(pattern, "DELETE") {
				return nil
			}
			bodies := map[string]string{
				"POST /locations":                                 `{"locationCode":"bern-%[1]d","name":"Bern","placeId":"p2","formattedAddress":"b","lat":46.9,"lng":7.4}`,
				"POST /rooms/{roomId}/members":                    `{"userId":"user%[1]d"}`,
				"POST /resources/{type}/{id}/invites":             `{"inviteeId":"user%[1]d"}`,
				"POST /rooms/{roomId}/listings":                   `{"sourceBrand":"homegate","externalId":"OW-%[1]d","title":"One","location":"Zurich"}`,
				"POST /resources/{type}/{id}/comments":            `{"text":"hello %[1]d"}`,
				"POST /resources":                                 `{"resourceType":"quest","title":"Quest %[1]d"}`,
				"PUT /rooms/{roomId}/criteria":                    `{"criteria":{"priceMax":%[1]d}}`,
				"POST /me/cooking-history":                        `{"recipeId":"` + w.recipe + `","notes":"take %[1]d"}`,
				"PUT /rooms/{roomId}/listings/{listingId}/status": `{"status":"SHORTLISTED"}`,
				"POST /rooms/{roomId}/listings/{listingId}/seen":  `{}`,
				"PATCH /locations/{locationId}":                   `{"name":"Zurich %[1]d"}`,
			}
			b, ok := bodies[pattern]
			if !ok {
				t.Fatalf("no body for %s", pattern)
			}
			if !strings.Contains(b, "%") {
				return json.RawMessage(b)
			}
			return json.RawMessage(fmt.Sprintf(b, 100*i+n+1))
		}
		t.Run(pattern, func(t *testing.T) {
			e := e.withT(t)
			for n, key := range []string{"", fmt.Sprintf("ow-key-%d", i)} {
				before := e.requests.Counts().ByLabel[pattern]
				var res response
				path := pathOf(n)
				if key == "" {
					res = e.do(method, path, tok[caller], body(n))
				} else {
					res, _ = e.keyed(method, path, tok[caller], key, body(n))
				}
				if res.status/100 != 2 {
					t.Fatalf("key %q: %d %s", key, res.status, res.body)
				}
				used := usage(e.requests.Counts().ByLabel[pattern], before)
				if used["TransactWriteItems"] != 1 || writes(used) != 1 {
					t.Errorf("key %q: requests %v, want one transaction and no other write", key, used)
				}
				if strings.Contains(pattern, "{listingId}") || strings.Contains(pattern, "{locationId}") {
					// the answer, made without reading the item back, is the
					// listing or location as stored
					read := path
					if strings.Contains(pattern, "{listingId}") {
						read = path[:strings.LastIndex(path, "/")]
					}
					if got := e.ok(200, "GET", read, tok[caller], nil, nil); string(got.body) != string(res.body) {
						t.Errorf("key %q: answered %s, stored %s", key, res.body, got.body)
					}
				}
				// the reads of a member route
				if reads, ok := memberReads[pattern]; ok && (used["GetItem"] != reads["GetItem"] || used["BatchGetItem"] != reads["BatchGetItem"]) {
					t.Errorf("key %q: requests %v, want reads %v", key, used, reads)
				}
				if key == "" {
					continue
				}
				before = e.requests.Counts().ByLabel[pattern]
				again, replayed := e.keyed(method, path, tok[caller], key, body(n))
				if again.status != res.status || replayed != "true" || string(again.body) != string(res.body) {
					t.Errorf("repeat: %d %s (replayed %q), want the first answer %d %s", again.status, again.body, replayed, res.status, res.body)
				}
				// the commit refused (the key's record is there), then the
				// claim that finds the record: nothing written
				if used := usage(e.requests.Counts().ByLabel[pattern], before); used["TransactWriteItems"] > 1 || writes(used) > 2 {
					t.Errorf("repeat: requests %v, want at most the refused commit and the claim", used)
				}
				if other, _ := e.keyed(method, pathOf(n+3), tok[caller], key, body(n+10)); other.status != 422 {
					t.Errorf("the key with another request: %d %s, want 422", other.status, other.body)
				}
			}
		})
	}
	// An outsider's keyed listing: refused as the ordinary way refuses it
	// (the room is not found for a non-member), nothing written, and the
	// refusal answered again for the key.
	path := "/rooms/" + w.room + "/listings"
	body := json.RawMessage(`{"sourceBrand":"homegate","externalId":"OUT-1","title":"Mine","location":"Bern"}`)
	plain := e.do("POST", path, tok[cOutsider], body)
	first, _ := e.keyed("POST", path, tok[cOutsider], "outsider-1", body)
	again, replayed := e.keyed("POST", path, tok[cOutsider], "outsider-1", body)
	if first.status != plain.status || first.status/100 != 4 || string(first.body) != string(plain.body) {
		t.Errorf("outsider keyed: %d %s, want as unkeyed %d %s", first.status, first.body, plain.status, plain.body)
	}
	if again.status != first.status || replayed != "true" {
		t.Errorf("outsider repeat: %d (replayed %q)", again.status, replayed)
	}
	var page struct{ Items []struct{ Title string } }
	e.ok(200, "GET", path+"?limit=100", tok[cOwner], nil, &page)
	for _, l := range page.Items {
		if l.Title == "Mine" {
			t.Error("the outsider's listing was written")
		}
	}
}

// memberReads are the reads of the member and resource routes among
// oneWrite: none where the membership or access is checked in the
// transaction; one BatchGetItem of the membership and the listing where
// the handler reads the listing; the comment's reference (which names its
// resource) on a reaction.
var memberReads = map[string]map[string]int64{
	"POST /rooms/{roomId}/listings":                   {},
	"PUT /rooms/{roomId}/criteria":                    {},
	"POST /rooms/{roomId}/members":                    {},
	"DELETE /rooms/{roomId}/members/{userId}":         {"GetItem": 1},
	"PUT /rooms/{roomId}/listings/{listingId}/status": {"BatchGetItem": 1},
	"POST /rooms/{roomId}/listings/{listingId}/seen":  {"BatchGetItem": 1},
	"POST /resources/{type}/{id}/comments":            {},
	"POST /resources/{type}/{id}/invites":             {},
	"PUT /comments/{commentId}/reactions/{emoji}":     {"GetItem": 1},
	"DELETE /comments/{commentId}/reactions/{emoji}":  {"GetItem": 1},
}

// usage is what a label's calls did between two snapshots, by operation.
func usage(after, before ddb.Usage) map[string]int64 {
	out := maps.Clone(after.ByOp)
	for op, n := range before.ByOp {
		out[op] -= n
		if out[op] == 0 {
			delete(out, op)
		}
	}
	return out
}

func writes(used map[string]int64) int64 {
	var n int64
	for _, op := range writeOps {
		n += used[op]
	}
	return n
}

// A resource's members, the owner and a collaborator, comment and react
// with their access checked in the transaction (their access items); an
// outsider is refused as ever with nothing written; only the owner
// invites. A resource whose access items are missing (written before they
// existed) is served the ordinary way, as before, until the backfill has
// written them; an owner who accepts an invite to their own address stays
// the owner.
func TestResourceAccessFold(t *testing.T) {
	t.Parallel()
	e, tok := matrixEnv(t, "af%03d")
	w := buildWorld(t, e, tok, 1)
	ctx := context.Background()
	const (
		comment = "POST /resources/{type}/{id}/comments"
		invite  = "POST /resources/{type}/{id}/invites"
		react   = "PUT /comments/{commentId}/reactions/{emoji}"
	)
	// send sends a request and says what DynamoDB requests its route made.
	send := func(caller, pattern, path string, body any, status int) map[string]int64 {
		t.Helper()
		method, _, _ := strings.Cut(pattern, " ")
		before := e.requests.Counts().ByLabel[pattern]
		if res := e.do(method, path, tok[caller], body); res.status != status {
			t.Fatalf("%s %s as %s: %d %s, want %d", method, path, caller, res.status, res.body, status)
		}
		return usage(e.requests.Counts().ByLabel[pattern], before)
	}
	comments := "/resources/goal/" + w.goal + "/comments"
	oneRequest := func(used map[string]int64, reads int64) {
		t.Helper()
		if used["TransactWriteItems"] != 1 || writes(used) != 1 || used["GetItem"] != reads || used["BatchGetItem"] != 0 {
			t.Errorf("requests %v, want one transaction and %d GetItem", used, reads)
		}
	}
	count := func() int {
		t.Helper()
		var page struct{ Items []collab.Comment }
		e.ok(200, "GET", comments+"?limit=100", tok[cOwner], nil, &page)
		return len(page.Items)
	}

	// the owner and the collaborator: one request each
	oneRequest(send(cOwner, comment, comments, map[string]any{"text": "owner"}, 201), 0)
	oneRequest(send(cMember, comment, comments, map[string]any{"text": "collaborator"}, 201), 0)
	oneRequest(send(cMember, react, "/comments/"+w.comment+"/reactions/%F0%9F%8E%89", nil, 201), 1)
	oneRequest(send(cOwner, invite, "/resources/goal/"+w.goal+"/invites", map[string]any{"inviteeId": "erin"}, 201), 0)
	n := count()

	// refused as the ordinary way refuses (the same answer, with a key or
	// without, and the key answers it again), nothing written
	for i, c := range []struct {
		caller, pattern, path string
		body                  any
		status                int
	}{
		{cOutsider, comment, comments, map[string]any{"text": "outsider"}, 404},
		{cOutsider, react, "/comments/" + w.comment + "/reactions/%F0%9F%8E%89", nil, 404},
		{cMember, invite, "/resources/goal/" + w.goal + "/invites", map[string]any{"inviteeId": "frank"}, 403},
		{cMember, "POST /rooms/{roomId}/members", "/rooms/" + w.room + "/members", map[string]any{"userId": "frank"}, 403},
	} {
		send(c.caller, c.pattern, c.path, c.body, c.status)
		method, _, _ := strings.Cut(c.pattern, " ")
		plain := e.do(method, c.path, tok[c.caller], c.body)
		key := fmt.Sprintf("refused-%d", i)
		first, _ := e.keyed(method, c.path, tok[c.caller], key, c.body)
		again, replayed := e.keyed(method, c.path, tok[c.caller], key, c.body)
		if first.status != c.status || string(first.body) != string(plain.body) {
			t.Errorf("%s as %s with a key: %d %s, want as without %d %s", c.pattern, c.caller, first.status, first.body, plain.status, plain.body)
		}
		if again.status != first.status || replayed != "true" || string(again.body) != string(first.body) {
			t.Errorf("%s as %s, the key again: %d %s (replayed %q)", c.pattern, c.caller, again.status, again.body, replayed)
		}
	}
	var members struct{ Items []struct{ UserID string } }
	e.ok(200, "GET", "/rooms/"+w.room+"/members?limit=100", tok[cOwner], nil, &members)
	for _, m := range members.Items {
		if m.UserID == "frank" {
			t.Error("the member's member was added")
		}
	}
	if got := count(); got != n {
		t.Errorf("%d comments after the outsider's, want %d", got, n)
	}
	var reactions struct{ Items []collab.Reaction }
	e.ok(200, "GET", "/comments/"+w.comment+"/reactions?limit=100", tok[cOwner], nil, &reactions)
	for _, re := range reactions.Items {
		if re.UserID == "carol" {
			t.Error("the outsider's reaction was written")
		}
	}
	var invites struct{ Items []collab.Invite }
	e.ok(200, "GET", "/resources/goal/"+w.goal+"/invites?limit=100", tok[cOwner], nil, &invites)
	for _, inv := range invites.Items {
		if inv.InviteeID == "frank" {
			t.Error("the collaborator's invite was written")
		}
	}

	// without access items: served the ordinary way, then one request
	// again after the backfill
	for _, user := range []string{"alice", "bob"} {
		if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: store.AccessKey(collab.Goal, w.goal, user).AV()}); err != nil {
			t.Fatal(err)
		}
	}
	if used := send(cOwner, comment, comments, map[string]any{"text": "legacy"}, 201); writes(used) != 2 || used["BatchGetItem"] != 1 {
		t.Errorf("without access items: requests %v, want the refused commit, the access read and the write", used)
	}
	send(cMember, react, "/comments/"+w.comment+"/reactions/%F0%9F%9A%80", nil, 201)
	send(cOutsider, comment, comments, map[string]any{"text": "outsider"}, 404)
	// someone else's Collaborator item of a resource that is not there
	ghost := store.CollaboratorKey(collab.Goal, "ghost", "eve").AV()
	ghost["itemType"] = &types.AttributeValueMemberS{Value: store.TypeCollaborator}
	if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: ghost}); err != nil {
		t.Fatal(err)
	}
	stats, err := e.st.Collab.BackfillResourceAccess(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Granted != 2 || stats.Raced != 0 || stats.Scanned == 0 {
		t.Errorf("backfill %+v, want 2 granted: the owner's and the collaborator's", stats)
	}
	if out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: store.AccessKey(collab.Goal, "ghost", "eve").AV()}); err != nil || out.Item != nil {
		t.Errorf("access to a resource that is not there: %v %v", out, err)
	}
	oneRequest(send(cOwner, invite, "/resources/goal/"+w.goal+"/invites", map[string]any{"inviteeId": "gina"}, 201), 0)
	oneRequest(send(cMember, comment, comments, map[string]any{"text": "again"}, 201), 0)

	// the owner accepts an invite sent to an address: still the owner
	inv := collab.Invite{InviteID: "to-self", InviterID: "alice", InviteeEmail: "alice@example.com", ResourceType: collab.Goal, ResourceID: w.goal,
		Status: collab.InvitePending, CreatedAt: store.Timestamp(e.clock.Peek()), UpdatedAt: store.Timestamp(e.clock.Peek()),
		ExpiresAt: store.Timestamp(e.clock.Peek().Add(time.Hour)), TTL: e.clock.Peek().Add(time.Hour).Unix()}
	if err := e.st.Collab.CreateInvite(ctx, inv); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.st.Collab.RespondInvite(ctx, inv, true, "alice", e.clock.Peek()); err != nil {
		t.Fatal(err)
	}
	oneRequest(send(cOwner, invite, "/resources/goal/"+w.goal+"/invites", map[string]any{"inviteeId": "hugo"}, 201), 0)
	// and after backfills, which meet her as the owner and as a
	// collaborator: the first writes her item anew as the owner's, the
	// second finds nothing to do
	if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: store.AccessKey(collab.Goal, w.goal, "alice").AV()}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{1, 0} {
		stats, err := e.st.Collab.BackfillResourceAccess(ctx, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Granted != want {
			t.Errorf("backfill %d: %+v, want %d granted", i+1, stats, want)
		}
		oneRequest(send(cOwner, invite, "/resources/goal/"+w.goal+"/invites", map[string]any{"inviteeId": "ivan"}, 201), 0)
	}
}

// A transaction cancelled by a concurrent one, past the client's retries,
// is a 503 to try again, never a 409 or 404 an Idempotency-Key would keep:
// the same key, once DynamoDB lets the transaction through, does the
// request.
func TestConflictIsTryAgain(t *testing.T) {
	t.Parallel()
	e, tok := matrixEnv(t, "cf%03d")
	w := buildWorld(t, e, tok, 1)
	faulty := ddbtest.ClientsWith(t, ddb.Config{MaxAttempts: 2, OwnWrites: true,
		Faults: &ddb.Faults{Rate: 1, Seed: 3, Kinds: []int{ddb.FaultConflict}}})
	st := store.New(faulty.DB, e.table)
	st.Bookkeeping = e.st.Bookkeeping
	st.InviteLimits = e.st.InviteLimits
	srv := *e.srv
	srv.Store = st
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	e.ok(201, "POST", "/rooms/"+w.room+"/members", tok[cOwner], map[string]any{"userId": "gone"}, nil)
	for i, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/resources", map[string]any{"resourceType": "task", "title": "T"}, 201},
		{"POST", "/resources/goal/" + w.goal + "/comments", map[string]any{"text": "hi"}, 201},
		{"POST", "/resources/goal/" + w.goal + "/invites", map[string]any{"inviteeId": "zoe"}, 201},
		{"POST", "/rooms/" + w.room + "/members", map[string]any{"userId": "yann"}, 201},
		{"DELETE", "/rooms/" + w.room + "/members/gone", nil, 204},
	} {
		key := fmt.Sprintf("conflict-%d", i)
		req, err := http.NewRequest(c.method, ts.URL+c.path, bytes.NewReader(api.RequestBody(t, c.body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok[cOwner])
		req.Header.Set("Idempotency-Key", key)
		if c.body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "try again") {
			t.Errorf("%s %s in conflict: %d %s, want 503 to try again", c.method, c.path, res.StatusCode, b)
		}
		if got, replayed := e.keyed(c.method, c.path, tok[cOwner], key, c.body); got.status != c.status || replayed == "true" {
			t.Errorf("%s %s again, no conflict: %d %s (replayed %q), want %d", c.method, c.path, got.status, got.body, replayed, c.status)
		}
	}
	if n := faulty.Faults().Counts().Injected["TransactionConflict"]; n == 0 {
		t.Error("no conflict injected")
	}
}
