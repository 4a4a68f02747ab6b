package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/collab"
)

// TestInviteLimits: invites are limited per inviter and per resource in a
// window (429 with Retry-After, the limit named, nothing written), and
// allowed again when the window ends.
func TestInviteLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("lim%02d"))
	e.st.InviteLimits = collab.InviteLimits{PerUser: 3, PerResource: 2, Window: time.Hour}
	// Real time: a window's counters expire (TTL) an hour after it ends,
	// and DynamoDB Local deletes expired items, which the harness's clock
	// in 2025 would make of them at once.
	e.clock.Advance(time.Since(e.clock.Peek()))
	alice := e.token("alice")
	var g1, g2 struct{ ResourceID string }
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "One"}, &g1)
	e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Two"}, &g2)
	invite := func(res string, n int, want int) response {
		t.Helper()
		r := e.do("POST", "/resources/goal/"+res+"/invites", alice, map[string]any{"inviteeEmail": "x" + strconv.Itoa(n) + "@example.com"})
		if r.status != want {
			t.Fatalf("invite %d on %s: %d %s, want %d", n, res, r.status, r.body, want)
		}
		return r
	}
	invite(g1.ResourceID, 1, 201)
	invite(g1.ResourceID, 2, 201)
	r := invite(g1.ResourceID, 3, 429) // the resource's limit
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s <= 0 || s > 3600 {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if p := e.problem(r, 429); p.Detail == "" {
		t.Error("no detail")
	}
	invite(g2.ResourceID, 4, 201)
	invite(g2.ResourceID, 5, 429) // alice's limit (3 sent)
	var list struct{ Items []any }
	e.ok(200, "GET", "/resources/goal/"+g1.ResourceID+"/invites", alice, nil, &list)
	if len(list.Items) != 2 {
		t.Errorf("%d invites on g1, want 2 (refused ones not written)", len(list.Items))
	}
	e.clock.Advance(time.Hour)
	invite(g1.ResourceID, 6, 201)
}
