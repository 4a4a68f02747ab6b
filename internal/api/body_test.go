package api_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/api"
)

// A body that does not arrive in full is the client's fault: cut off
// (Content-Length 100, 9 bytes sent, the connection half-closed) or
// trickled past the read deadline, it is a 400 naming body — not a 503
// saying the database is busy — and nothing is written.
func TestBodyCutOffOrTooSlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("b%03d"))
	alice := e.token("alice")
	ts := httptest.NewServer(api.ReadDeadline(e.srv.Handler(), 300*time.Millisecond))
	t.Cleanup(ts.Close)
	before := e.snapshot()
	send := func(name string, trickle bool) {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		head := "POST /rooms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
		if _, err := c.Write([]byte(head + `{"name":"`)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if trickle { // a byte every 100 ms, for as long as the server listens
			go func() {
				for range 50 {
					time.Sleep(100 * time.Millisecond)
					if _, err := c.Write([]byte("a")); err != nil {
						return
					}
				}
			}()
		} else {
			_ = c.(*net.TCPConn).CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", name, err)
		}
		defer res.Body.Close()
		var p struct {
			Status int
			Errors []struct{ Field, Reason string }
		}
		_ = json.NewDecoder(res.Body).Decode(&p)
		if res.StatusCode != 400 || res.Header.Get("Content-Type") != "application/problem+json" || len(p.Errors) != 1 || p.Errors[0].Field != "body" {
			t.Errorf("%s: %d %s %+v, want 400 problem+json on body", name, res.StatusCode, res.Header.Get("Content-Type"), p)
		} else {
			t.Logf("%s: 400 after %v: %s", name, time.Since(start).Round(time.Millisecond), p.Errors[0].Reason)
		}
	}
	send("cut off", false)
	send("trickled", true)
	e.unchanged(before, "bodies that never arrived")
}
