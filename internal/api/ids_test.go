package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPathIdsAreBounded: every id in a path has a length limit and a
// pattern, so a 5 KB id, a 1,100-byte one or one carrying key syntax ("#")
// is a 400 naming the parameter — never DynamoDB's key-size error as a 500.
func TestPathIdsAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("id%02d"))
	alice := e.token("alice")
	roomID := e.createRoom(alice, map[string]any{"name": "r", "searchType": "rent"}).RoomID
	for _, bad := range []string{strings.Repeat("a", 5000), strings.Repeat("b", 1100), "a%23b", "ROOM%23x%23MEMBER%23bob"} {
		for _, c := range []struct{ method, path, param string }{
			{"GET", "/rooms/" + bad, "roomId"},
			{"GET", "/rooms/" + roomID + "/members/" + bad, "userId"},
			{"GET", "/rooms/" + roomID + "/listings/" + bad, "listingId"},
			{"GET", "/resources/goal/" + bad, "id"},
			{"GET", "/resources/goal/" + bad + "/invites/x", "id"},
			{"POST", "/resources/goal/g/invites/" + bad + "/accept", "inviteId"},
			{"GET", "/resources/goal/g/collaborators/" + bad, "userId"},
			{"GET", "/comments/" + bad, "commentId"},
			{"GET", "/comments/c/reactions/%F0%9F%91%8D/users/" + bad, "userId"},
			{"GET", "/locations/" + bad, "locationId"},
		} {
			r := e.do(c.method, c.path, alice, nil)
			if r.status != http.StatusBadRequest || r.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s…: %d %.200s, want 400 problem+json", c.method, c.path[:min(len(c.path), 60)], r.status, r.body)
				continue
			}
			var p struct {
				Errors []struct{ Field, Reason string }
			}
			_ = json.Unmarshal(r.body, &p)
			if len(p.Errors) != 1 || p.Errors[0].Field != c.param || p.Errors[0].Reason == "" {
				t.Errorf("%s %s…: errors %+v, want one naming %s", c.method, c.path[:min(len(c.path), 60)], p.Errors, c.param)
			}
		}
	}
}
