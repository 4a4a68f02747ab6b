package devguard

import (
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// Guard wraps a local HTTP server's handler; see the package doc.
type Guard struct {
	// Port is the port the server listens on (a Host naming another port
	// is refused).
	Port string
	// Hosts are more host names or addresses a request may name (the
	// operator's, for a server reached from elsewhere on purpose).
	Hosts []string
	// JSONOnly says which requests must carry a JSON body (Content-Type
	// application/json or +json); nil: none.
	JSONOnly func(r *http.Request) bool
}

// Wrap returns h behind the guard.
func (g Guard) Wrap(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusForbidden, "a cross-origin browser request to a local development server is refused (Origin or Sec-Fetch-Site says it comes from another site)")
	}))
	inner := cop.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := g.hostRefused(r.Host); why != "" {
			problem(w, http.StatusMisdirectedRequest, why)
			return
		}
		if g.JSONOnly != nil && g.JSONOnly(r) && !isJSON(r.Header.Get("Content-Type")) {
			problem(w, http.StatusUnsupportedMediaType, "this route takes a JSON body: set Content-Type: application/json")
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// hostRefused says why a request's Host is refused ("": it is not).
func (g Guard) hostRefused(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: the scheme's default
		host, port = hostport, "80"
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if port != g.Port {
		return fmt.Sprintf("Host %q names port %s: this server listens on %s", hostport, port, g.Port)
	}
	if Loopback(host) {
		return ""
	}
	for _, h := range g.Hosts {
		if strings.EqualFold(strings.Trim(h, "[]"), host) {
			return ""
		}
	}
	return fmt.Sprintf("Host %q is not this machine's loopback (localhost, 127.0.0.1, [::1]): a local development server answers only requests addressed to it", hostport)
}

// Loopback reports whether a host name or address is this machine's
// loopback: localhost and its subdomains (RFC 6761), 127.0.0.0/8, ::1.
func Loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail})
}
