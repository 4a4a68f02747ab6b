package api_test

import (
	"encoding/json"
	"testing"
)

// TestControlCharactersRefused: NUL, BEL, ESC, CR or LF in a name, a title,
// a criteria string, a profile or location name, or a query parameter is a
// 400 naming the field; comment texts and invite messages keep their line
// breaks (and tabs) but refuse the rest.
func TestControlCharactersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("cc%02d"))
	alice := e.token("alice")
	admin := e.mint(map[string]any{"userId": "root", "groups": []string{"admins"}})
	roomID := e.createRoom(alice, map[string]any{"name": "r", "searchType": "rent"}).RoomID
	goal := e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Run"}, nil)
	var res struct{ ResourceID string }
	_ = json.Unmarshal(goal.body, &res)
	for _, c := range []struct {
		method, path, token string
		body                any
		field               string
	}{
		{"POST", "/rooms", alice, map[string]any{"name": "a\x00b", "searchType": "rent"}, "name"},
		{"POST", "/rooms", alice, map[string]any{"name": "line\nbreak", "searchType": "rent"}, "name"},
		{"PUT", "/rooms/" + roomID + "/criteria", alice, map[string]any{"criteria": map[string]any{"locations": []any{"Zur\x1bich"}}}, "criteria.locations[0]"},
		{"POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "bell\x07"}, "title"},
		{"PUT", "/me/profile", alice, map[string]any{"name": "Eve\r"}, "name"},
		{"POST", "/locations", admin, map[string]any{"locationCode": "zurich-main", "name": "Zu\x00rich", "placeId": "p1", "formattedAddress": "Bahnhofstrasse 1", "lat": 47.37, "lng": 8.54}, "name"},
		{"POST", "/resources/goal/" + res.ResourceID + "/comments", alice, map[string]any{"text": "esc \x1b[31m red"}, "text"},
		{"POST", "/resources/goal/" + res.ResourceID + "/comments", alice, map[string]any{"text": "bare \r return"}, "text"},
		{"GET", "/me/rooms?cursor=%00", alice, nil, "cursor"},
	} {
		r := e.do(c.method, c.path, c.token, c.body)
		if r.status != 400 {
			t.Errorf("%s %s %v: %d %s, want 400", c.method, c.path, c.body, r.status, r.body)
			continue
		}
		var p struct {
			Errors []struct{ Field, Reason string }
		}
		_ = json.Unmarshal(r.body, &p)
		if len(p.Errors) != 1 || p.Errors[0].Field != c.field {
			t.Errorf("%s %s: errors %+v, want one naming %s", c.method, c.path, p.Errors, c.field)
		}
	}
	// Multi-line text keeps its line breaks and tabs.
	e.ok(201, "POST", "/resources/goal/"+res.ResourceID+"/comments", alice, map[string]any{"text": "line one\r\nline two\n\tindented"}, nil)
	e.ok(201, "POST", "/resources/goal/"+res.ResourceID+"/invites", alice, map[string]any{"inviteeEmail": "bob@example.com", "message": "Hi,\njoin me"}, nil)
}
