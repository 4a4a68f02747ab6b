package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// keyed sends a request with an Idempotency-Key.
func (e *env) keyed(method, path, token, key string, body any) (response, string) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	if body == nil {
		b = nil
	}
	req, _ := http.NewRequest(method, e.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(api.IdempotencyHeader, key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: rb}, res.Header.Get(api.ReplayedHeader)
}

// A request sent again with the same Idempotency-Key, as a client retries
// after a timeout, answers the first response again (status, body,
// Location), marked Idempotent-Replayed, with no second effect; the key
// with another request is a 422, the same request still running a 409
// with Retry-After; keys are the caller's own; a refusal is answered again
// as it was; a malformed key is a 400.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("ik%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	alice, bob := e.token("alice"), e.token("bob")
	body := map[string]any{"name": "Flat", "searchType": "rent"}
	first, replayed := e.keyed("POST", "/rooms", alice, "k-1", body)
	if first.status != 201 || replayed != "" {
		t.Fatalf("first: %d %s (replayed %q)", first.status, first.body, replayed)
	}
	again, replayed := e.keyed("POST", "/rooms", alice, `"k-1"`, body) // the draft's quoted form is the same key
	if again.status != 201 || replayed != "true" || !bytes.Equal(again.body, first.body) || again.header.Get("Location") != first.header.Get("Location") ||
		again.header.Get("Content-Type") != "application/json" {
		t.Errorf("again: %d %s %v, want the first answer", again.status, again.body, again.header)
	}
	var rooms struct{ Items []map[string]any }
	e.ok(200, "GET", "/me/rooms", alice, nil, &rooms)
	if len(rooms.Items) != 1 {
		t.Errorf("%d rooms after a retried create, want 1", len(rooms.Items))
	}
	// Another request with the key: 422, nothing done.
	other, _ := e.keyed("POST", "/rooms", alice, "k-1", map[string]any{"name": "Another", "searchType": "buy"})
	e.problem(other, 422)
	// bob's k-1 is not alice's.
	if r, replayed := e.keyed("POST", "/rooms", bob, "k-1", body); r.status != 201 || replayed != "" || bytes.Equal(r.body, first.body) {
		t.Errorf("bob's k-1: %d %s replayed %q", r.status, r.body, replayed)
	}
	// A refusal is kept too: the same invalid request, the same 400.
	bad := map[string]any{"name": "", "searchType": "rent"}
	r1, _ := e.keyed("POST", "/rooms", alice, "k-bad", bad)
	r2, replayed := e.keyed("POST", "/rooms", alice, "k-bad", bad)
	if r1.status != 400 || r2.status != 400 || replayed != "true" || !bytes.Equal(r1.body, r2.body) {
		t.Errorf("a refused request again: %d, %d replayed %q", r1.status, r2.status, replayed)
	}
	// The same request while the first holds the key: 409, Retry-After.
	b, _ := json.Marshal(body)
	if _, _, _, _, err := e.st.Requests.BeginRequest(context.Background(), "alice", "k-running", api.Fingerprint("POST", "/rooms", "", b), time.Now(), 20*time.Second, time.Hour); err != nil {
		t.Fatal(err)
	}
	busy, _ := e.keyed("POST", "/rooms", alice, "k-running", body)
	e.problem(busy, 409)
	if s, err := strconv.Atoi(busy.header.Get("Retry-After")); err != nil || s < 1 || s > 20 {
		t.Errorf("Retry-After %q", busy.header.Get("Retry-After"))
	}
	// Malformed keys.
	for _, k := range []string{" ", "a b", string(bytes.Repeat([]byte("k"), 256)), "é"} {
		r, _ := e.keyed("POST", "/rooms", alice, k, body)
		e.problem(r, 400, api.IdempotencyHeader)
	}
	e.ok(200, "GET", "/me/rooms", alice, nil, &rooms)
	if len(rooms.Items) != 1 {
		t.Errorf("%d rooms in the end, want 1", len(rooms.Items))
	}

	// The other effects the issue names: a cooking counted once, an invite
	// (and its e-mail) once, a criteria version once.
	var g struct{ ResourceID string }
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Run"}, &g)
	var in struct{ IngredientID string }
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Rice"}, &in)
	var rc struct{ RecipeID string }
	e.ok(201, "POST", "/recipes", alice, map[string]any{"title": "Pho", "method": "boil", "servings": 2, "steps": []string{"Boil"},
		"ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": 1}}}, &rc)
	roomID := decodeField(t, first.body, "roomId")
	for _, c := range []struct {
		method, path string
		body         any
		count        func() int
	}{
		{"POST", "/resources/goal/" + g.ResourceID + "/invites", map[string]any{"inviteeId": "bob"}, func() int {
			return len(e.queryItems("", store.ResourcePK(collab.Goal, g.ResourceID), "INVITE#"))
		}},
		{"POST", "/me/cooking-history", map[string]any{"recipeId": rc.RecipeID, "rating": 5}, func() int {
			return len(e.queryItems("", "USER#alice", "COOKING#"))
		}},
		{"PUT", "/rooms/" + roomID + "/criteria", map[string]any{"criteria": map[string]any{"locations": []string{"Bern"}}}, func() int {
			return len(e.queryItems("", "ROOM#"+roomID, "CRITERIA#"))
		}},
	} {
		for range 3 {
			if r, _ := e.keyed(c.method, c.path, alice, "k-"+c.path, c.body); r.status >= 300 {
				t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
		}
		if c.count == nil {
			continue
		}
		if n := c.count(); n != 1 {
			t.Errorf("%s %s three times with one key: %d items, want 1", c.method, c.path, n)
		}
	}
}

func decodeField(t *testing.T, b []byte, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[field].(string)
	return s
}

// A writer that crashed between a request's writes and recording its
// response leaves the key held; once the hold ends, the client's retry
// runs the request again, as of the first run (its clock and its ids), so
// it writes exactly what the first run wrote: the store recognises its own
// puts and transactions, and the retry answers what the first run would
// have, with nothing written twice. Shown for a transaction (a room), a
// conditional put (a resource), a transaction with counters (a cooking),
// and an invite whose rate counter the first run filled (its condition
// fails in the run again: the first run's own count, not a second invite).
func TestIdempotencyKeyAfterACrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("ic%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	e.st.InviteLimits = collab.InviteLimits{PerUser: 1, PerResource: 10, Window: time.Hour}
	alice := e.token("alice")
	var goal struct{ ResourceID string }
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Swim"}, &goal)
	var in struct{ IngredientID string }
	e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": "Rice"}, &in)
	var rc struct{ RecipeID string }
	e.ok(201, "POST", "/recipes", alice, map[string]any{"title": "Pho", "method": "boil", "servings": 2, "steps": []string{"Boil"},
		"ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": 1}}}, &rc)
	ctx := context.Background()
	for _, c := range []struct {
		path  string
		body  any
		count func() int
	}{
		{"/rooms", map[string]any{"name": "Flat", "searchType": "rent"}, func() int { return len(e.queryItems("", "USER#alice", "ROOM#")) }},
		// (no list of an owner's resources: the same body, the same id, is
		// the proof)
		{"/resources", map[string]any{"resourceType": "goal", "title": "Run"}, nil},
		{"/me/cooking-history", map[string]any{"recipeId": rc.RecipeID, "rating": 4}, func() int { return len(e.queryItems("", "USER#alice", "COOKING#")) }},
		{"/resources/goal/" + goal.ResourceID + "/invites", map[string]any{"inviteeId": "bob"}, func() int {
			return len(e.queryItems("", store.ResourcePK(collab.Goal, goal.ResourceID), "INVITE#"))
		}},
	} {
		first, _ := e.keyed("POST", c.path, alice, "crash-"+c.path, c.body)
		if first.status != 201 {
			t.Fatalf("%s: %d %s", c.path, first.status, first.body)
		}
		// The crash: the response was never recorded, and the hold ended.
		_, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.st.Bookkeeping),
			Key:                       store.RequestKey("alice", "crash-"+c.path).AV(),
			UpdateExpression:          aws.String("SET #s = :running, holdUntil = :past REMOVE responseStatus, responseBody"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":running": &types.AttributeValueMemberS{Value: "INPROGRESS"}, ":past": &types.AttributeValueMemberN{Value: "1"}}})
		if err != nil {
			t.Fatal(err)
		}
		again, replayed := e.keyed("POST", c.path, alice, "crash-"+c.path, c.body)
		if again.status != 201 || replayed != "" || !bytes.Equal(again.body, first.body) {
			t.Errorf("%s run again after the crash: %d %s (replayed %q), want the first run's 201 %s", c.path, again.status, again.body, replayed, first.body)
		}
		if c.count == nil {
			continue
		}
		if n := c.count(); n != 1 {
			t.Errorf("%s: %d written, want 1", c.path, n)
		}
	}
}

// An Idempotency-Key's record lasts 24 hours; DynamoDB deletes it late and
// DynamoDB Local never, so an expired one is treated as absent: the key
// used again a day later runs the new request (another body too), and is
// not answered with the old response.
func TestIdempotencyKeyExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("ix%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()) - 25*time.Hour) // a day and more ago
	alice := e.token("alice")
	first, _ := e.keyed("POST", "/rooms", alice, "k-day", map[string]any{"name": "Flat", "searchType": "rent"})
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	e.clock.Advance(25 * time.Hour)
	alice = e.token("alice") // a token of today
	again, replayed := e.keyed("POST", "/rooms", alice, "k-day", map[string]any{"name": "Loft", "searchType": "buy"})
	if again.status != 201 || replayed != "" || bytes.Equal(again.body, first.body) {
		t.Fatalf("the key a day later, another body: %d %s (replayed %q), want the new room", again.status, again.body, replayed)
	}
	repeat, replayed := e.keyed("POST", "/rooms", alice, "k-day", map[string]any{"name": "Loft", "searchType": "buy"})
	if repeat.status != 201 || replayed != "true" || !bytes.Equal(repeat.body, again.body) {
		t.Errorf("its repeat: %d %s (replayed %q), want the second answer", repeat.status, repeat.body, replayed)
	}
	var rooms struct{ Items []map[string]any }
	e.ok(200, "GET", "/me/rooms", alice, nil, &rooms)
	if len(rooms.Items) != 2 {
		t.Errorf("%d rooms, want 2", len(rooms.Items))
	}
}

// mainTableWrites fails the writing requests to one table (the main one)
// and passes every other (the bookkeeping table's, every read): refuse
// answers DynamoDB's 400 ProvisionedThroughputExceededException, lose
// executes the request and drops its answer.
type mainTableWrites struct {
	table        string
	refuse, lose atomic.Bool
	next         http.RoundTripper
}

func (m *mainTableWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	target := req.Header.Get("X-Amz-Target")
	write := false
	for _, op := range []string{".PutItem", ".UpdateItem", ".DeleteItem", ".BatchWriteItem", ".TransactWriteItems"} {
		write = write || strings.HasSuffix(target, op)
	}
	if !write || !bytes.Contains(body, []byte(`"TableName":"`+m.table+`"`)) {
		return m.next.RoundTrip(req)
	}
	switch {
	case m.refuse.Load():
		return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"refused by the test"}`))}, nil
	case m.lose.Load():
		res, err := m.next.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		return nil, errors.New("connection reset by the test after DynamoDB executed the request")
	}
	return m.next.RoundTrip(req)
}

// A keyed request whose first run failed (5xx) is run again as of now when
// that run surely wrote nothing (every write refused), and as of its first
// start when it may have written (its answers lost): a retry never writes
// history in the past, and never writes twice.
func TestIdempotencyRetryAfterAFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("rf%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	faults := &mainTableWrites{table: e.table, next: http.DefaultTransport}
	e.st.DB = dynamodb.New(e.st.DB.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: faults}
		o.RetryMaxAttempts = 2
	})
	alice := e.token("alice")
	body := map[string]any{"name": "Flat", "searchType": "rent"}
	created := func(r response, _ string) room.Room {
		t.Helper()
		var rm room.Room
		if r.status != 201 {
			t.Fatalf("the retry: %d %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &rm); err != nil {
			t.Fatal(err)
		}
		return rm
	}

	// Every write refused: nothing written, the retry runs as of now.
	faults.refuse.Store(true)
	first, _ := e.keyed("POST", "/rooms", alice, "refused", body)
	if first.status < 500 {
		t.Fatalf("a run whose writes were refused: %d %s, want a 5xx", first.status, first.body)
	}
	faults.refuse.Store(false)
	e.clock.Advance(5 * time.Minute)
	before := e.clock.Peek()
	rm := created(e.keyed("POST", "/rooms", alice, "refused", body))
	if at, _ := store.ParseTimestamp(rm.CreatedAt); at.Before(before) {
		t.Errorf("the retry of a run that wrote nothing is dated %s, before its own start %s", rm.CreatedAt, store.Timestamp(before))
	}

	// Every answer lost: the first run may have written; the retry runs as
	// of the first start, and finds its own writes.
	faults.lose.Store(true)
	start := e.clock.Peek()
	first, _ = e.keyed("POST", "/rooms", alice, "lost", body)
	if first.status < 500 {
		t.Fatalf("a run whose answers were lost: %d %s, want a 5xx", first.status, first.body)
	}
	faults.lose.Store(false)
	e.clock.Advance(5 * time.Minute)
	rm = created(e.keyed("POST", "/rooms", alice, "lost", body))
	if at, _ := store.ParseTimestamp(rm.CreatedAt); at.After(start.Add(2 * time.Second)) {
		t.Errorf("the retry of a run that may have written is dated %s, not as of the first start %s", rm.CreatedAt, store.Timestamp(start))
	}
	var rooms struct{ Items []map[string]any }
	e.ok(200, "GET", "/me/rooms", alice, nil, &rooms)
	if len(rooms.Items) != 2 {
		t.Errorf("%d rooms, want 2 (one a key)", len(rooms.Items))
	}
}
