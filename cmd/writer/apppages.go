package main

import (
	"html/template"
	"net/http"
	"regexp"
)

// appPages are the local stack's stand-ins for the app's pages the
// e-mails link to (notify.InvitePath, notify.CommentPath): in AWS those
// links go to the app at APP_BASE_URL, which calls the API for the signed-in
// user; here a page shows the API call to make, since a link cannot carry
// the user's token or make a POST. They read nothing and change nothing.
func appPages(api string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/invites/{type}/{id}/{invite}", func(w http.ResponseWriter, r *http.Request) {
		if !plain(w, r, "type", "id", "invite") {
			return
		}
		page(w, "An invite", api, []call{
			{"accept it (as the invitee)", "POST", "/resources/" + r.PathValue("type") + "/" + r.PathValue("id") + "/invites/" + r.PathValue("invite") + "/accept"},
			{"decline it instead", "POST", "/resources/" + r.PathValue("type") + "/" + r.PathValue("id") + "/invites/" + r.PathValue("invite") + "/decline"},
			{"see your pending invites", "GET", "/me/invites?status=pending"},
		})
	})
	mux.HandleFunc("GET /app/comments/{comment}", func(w http.ResponseWriter, r *http.Request) {
		if !plain(w, r, "comment") {
			return
		}
		page(w, "A comment", api, []call{{"read it", "GET", "/comments/" + r.PathValue("comment")}})
	})
	return mux
}

// idChars are the characters of the ids and resource types the links
// carry; anything else is not a link this system made, and is never put
// into a command a reader might paste into a shell.
var idChars = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// plain answers 404 unless every named path value is made of idChars.
func plain(w http.ResponseWriter, r *http.Request, names ...string) bool {
	for _, n := range names {
		if !idChars.MatchString(r.PathValue(n)) {
			http.NotFound(w, r)
			return false
		}
	}
	return true
}

type call struct{ What, Method, Path string }

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<meta charset="utf-8"><title>{{.Title}} — dynastream (local)</title>
<h1>{{.Title}}</h1>
<p>This is the local stack's stand-in for the app's page. The app would make these calls with the signed-in
user's token; with a token from <code>POST /dev/tokens</code>:</p>
{{range .Calls}}<p>To {{.What}}:</p>
<pre>curl -s -X {{.Method}} '{{$.API}}{{.Path}}' -H "Authorization: Bearer $TOKEN"</pre>
{{end}}`))

func page(w http.ResponseWriter, title, api string, calls []call) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	_ = pageTmpl.Execute(w, struct {
		Title, API string
		Calls      []call
	}{title, api, calls})
}
