package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The e-mails' links lead to a page that says what to do, locally; a link
// this system did not make gets nothing.
func TestAppPages(t *testing.T) {
	h := appPages("http://127.0.0.1:8080")
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	code, body := get("/app/invites/goal/01JGOAL/01JINVITE")
	if code != 200 || !strings.Contains(body, "curl -s -X POST 'http://127.0.0.1:8080/resources/goal/01JGOAL/invites/01JINVITE/accept'") {
		t.Errorf("invite page: %d\n%s", code, body)
	}
	// each call is introduced by a sentence ("To accept it …:", "To
	// decline it instead:"), never a fragment such as "To or decline it:"
	for _, want := range []string{"<p>To accept it (as the invitee):</p>", "<p>To decline it instead:</p>", "<p>To see your pending invites:</p>"} {
		if !strings.Contains(body, want) {
			t.Errorf("invite page has no %q:\n%s", want, body)
		}
	}
	code, body = get("/app/comments/01JCOMMENT")
	if code != 200 || !strings.Contains(body, "curl -s -X GET 'http://127.0.0.1:8080/comments/01JCOMMENT'") {
		t.Errorf("comment page: %d\n%s", code, body)
	}
	for _, bad := range []string{"/app/comments/x'%3Brm%20-rf%20~'", "/app/invites/goal/%3Cscript%3E/1", "/app/comments/" + strings.Repeat("a", 65)} {
		if code, body := get(bad); code != 404 || strings.Contains(body, "curl") {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
}
