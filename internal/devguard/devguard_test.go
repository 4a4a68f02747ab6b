package devguard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/internal/devguard"
)

// What a web page can send a local development server, and what a
// developer's own tools send: the page's requests are refused with the
// reason, the tools' pass.
func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	g := devguard.Guard{Port: "8080", Hosts: []string{"devbox.lan"},
		JSONOnly: func(r *http.Request) bool { return r.URL.Path == "/dev/tokens" }}.Wrap(ok)
	for _, c := range []struct {
		name, method, path, host string
		header                   map[string]string
		want                     int
	}{
		{"curl on 127.0.0.1", "POST", "/dev/tokens", "127.0.0.1:8080", map[string]string{"Content-Type": "application/json"}, 204},
		{"localhost, any case", "GET", "/rooms", "LocalHost:8080", nil, 204},
		{"a localhost subdomain", "GET", "/rooms", "app.localhost:8080", nil, 204},
		{"IPv6 loopback", "GET", "/rooms", "[::1]:8080", nil, 204},
		{"another loopback address", "GET", "/rooms", "127.0.0.2:8080", nil, 204},
		{"a host the operator allowed", "GET", "/rooms", "devbox.lan:8080", nil, 204},
		{"DNS rebinding", "POST", "/dev/tokens", "rebind.evil.example:8080", map[string]string{"Content-Type": "application/json"}, 421},
		{"rebinding a GET", "GET", "/@connections/abc", "rebind.evil.example:8080", nil, 421},
		{"another port", "GET", "/rooms", "127.0.0.1:9999", nil, 421},
		{"no port (80)", "GET", "/rooms", "localhost", nil, 421},
		{"a LAN address not allowed", "GET", "/rooms", "192.168.1.5:8080", nil, 421},
		{"cross-site POST (Sec-Fetch-Site)", "POST", "/@connections/abc", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, 403},
		{"cross-site DELETE", "DELETE", "/@connections/abc", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-origin POST (Origin only)", "POST", "/pause", "127.0.0.1:8080", map[string]string{"Origin": "http://evil.example"}, 403},
		{"same-origin POST from the page itself", "POST", "/pause", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "same-origin"}, 204},
		{"typed in the address bar", "POST", "/pause", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "none"}, 204},
		{"cross-site GET (reads nothing without CORS)", "GET", "/rooms", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, 204},
		{"dev route, text/plain (no preflight)", "POST", "/dev/tokens", "127.0.0.1:8080", map[string]string{"Content-Type": "text/plain"}, 415},
		{"dev route, a form", "POST", "/dev/tokens", "127.0.0.1:8080", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"dev route, no type", "POST", "/dev/tokens", "127.0.0.1:8080", nil, 415},
		{"dev route, JSON with a charset", "POST", "/dev/tokens", "127.0.0.1:8080", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 204},
		{"another route, text/plain", "POST", "/rooms", "127.0.0.1:8080", map[string]string{"Content-Type": "text/plain"}, 204},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
			r.Host = c.host
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, c.want)
			}
			if c.want >= 400 {
				var p struct {
					Status int
					Detail string
				}
				if w.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Status != c.want || p.Detail == "" {
					t.Errorf("refusal %s %q: want problem+json with a reason", w.Header().Get("Content-Type"), w.Body)
				}
			}
		})
	}
}
