package lambdatest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/gateway/gatewaytest"
	"github.com/dynastream/dynastream/internal/runtimeapi"
)

func writerEnv(table, bookkeeping string, extra ...string) []string {
	// The issuer is unreachable: its keys never load, so every chat token
	// is refused (the HTTP API's identity comes from the authorizer).
	return env(table, bookkeeping, append([]string{"JWT_ISSUER=http://127.0.0.1:1/pool", "JWT_AUDIENCE=client"}, extra...)...)
}

// The writer under Lambda: HTTP API events with an authorizer's claims,
// refusals as problem+json, base64 bodies, query strings, WebSocket events,
// one log line per refusal.
func TestWriterBootstrap(t *testing.T) {
	c, table, _ := ddbtest.Table(t)
	bk := ddbtest.Bookkeeping(t, c, table)
	f, init := start(t, "writer", writerEnv(table, bk))
	t.Logf("writer init %s", init.Round(time.Millisecond))

	alice := claims("alice", "alice@example.com")
	_, room := call(t, f, "POST", "/rooms", "", alice, `{"name":"Flat in Zurich","searchType":"rent","context":{"combineMode":"strict"}}`, 201)
	roomID, _ := room["roomId"].(string)
	if roomID == "" {
		t.Fatalf("no roomId: %v", room)
	}
	_, got := call(t, f, "GET", "/rooms/"+roomID, "", alice, "", 200)
	if got["name"] != "Flat in Zurich" {
		t.Errorf("GET room: %v", got)
	}
	// A base64 body (API Gateway encodes bodies it does not take for text).
	body := base64.StdEncoding.EncodeToString([]byte(`{"userId":"bob"}`))
	decodeHTTP(t, f.Invoke(httpEvent("POST", "/rooms/"+roomID+"/members", "", alice, body, true), 10*time.Second), "base64 body", 201)
	// A query string.
	_, list := call(t, f, "GET", "/rooms/"+roomID+"/members", "limit=1", alice, "", 200)
	if items, _ := list["items"].([]any); len(items) != 1 || list["nextCursor"] == nil {
		t.Errorf("members with limit=1: %v", list)
	}

	// Refusals: problem+json, naming the field; each logged once.
	resp, _ := call(t, f, "GET", "/me/rooms", "", nil, "", 401)
	if resp.Headers["Content-Type"] != "application/problem+json" {
		t.Errorf("401 content type %q", resp.Headers["Content-Type"])
	}
	call(t, f, "GET", "/no/such/route", "", alice, "", 404)
	_, p := call(t, f, "POST", "/rooms", "", alice, `{"name":"","searchType":"rent"}`, 400)
	if b, _ := json.Marshal(p["errors"]); !strings.Contains(string(b), `"name"`) {
		t.Errorf("400 does not name the field: %v", p)
	}
	if n := len(f.WaitLogs(5*time.Second, 1, `"msg":"request refused"`, `"status":400`)); n != 1 {
		t.Errorf("%d log lines for the 400, want 1:\n%s", n, strings.Join(f.Logs(), "\n"))
	}

	// WebSocket events (API Gateway's shapes): a token the pool did not
	// sign is refused before the connection exists; a frame on an unknown
	// connection is answered; $disconnect is fine.
	ws := func(name string, vals map[string]string) map[string]any {
		r := f.Invoke(payload(t, gatewaytest.Event(t, name, vals)), 10*time.Second)
		if r.Error != nil || r.TimedOut || r.Exited {
			t.Fatalf("%s: %+v %+v", name, r, r.Error)
		}
		var out map[string]any
		_ = json.Unmarshal(r.Payload, &out)
		return out
	}
	if out := ws("connect", map[string]string{"CONN": "c1=", "TOKEN": "not-a-jwt", "ROOM": "lobby"}); out["statusCode"] != 401.0 {
		t.Errorf("$connect with a bad token: %v", out)
	}
	if out := ws("message", map[string]string{"CONN": "c1=", "BODY": `{"action":"sendMessage","content":"hi"}`}); out["statusCode"] == nil {
		t.Errorf("frame on an unknown connection: %v", out)
	}
	if out := ws("disconnect", map[string]string{"CONN": "c1="}); out["statusCode"] != 200.0 {
		t.Errorf("$disconnect: %v", out)
	}
	f.WaitLogs(5*time.Second, 1, `"route":"unmatched"`)
	f.WaitLogs(5*time.Second, 1, `"route":"WS $disconnect"`) // the output is read as it comes
	if len(emfLines(f, `"ColdStart":1`)) != 1 || len(emfLines(f, `"Requests":1`, `"route":"POST /rooms"`, `"status":"201"`)) != 1 ||
		len(emfLines(f, `"route":"unmatched"`, `"status":"404"`)) != 1 ||
		len(emfLines(f, `"route":"WS $connect"`, `"status":"401"`)) != 1 || len(emfLines(f, `"route":"WS sendMessage"`, `"status":"404"`)) != 1 ||
		len(emfLines(f, `"route":"WS $disconnect"`, `"status":"200"`)) != 1 {
		t.Errorf("request metrics missing:\n%s", strings.Join(emfLines(f), "\n"))
	}
	for _, l := range f.Logs() {
		if !strings.HasPrefix(l, "{") {
			t.Errorf("a log line that is not JSON: %q", l)
		}
	}
}

// A panic in a handler is a 500 for its request; the process goes on
// serving (aws-lambda-go would report it and exit).
func TestWriterPanicIsA500(t *testing.T) {
	c, table, _ := ddbtest.Table(t)
	bk := ddbtest.Bookkeeping(t, c, table)
	f, _ := start(t, "writer", writerEnv(table, bk, "DYNAMODB_FAULTS=0.5,seed=3,panic"))
	alice := claims("alice", "alice@example.com")
	var statuses []int
	for i := 0; i < 20 && !(contains(statuses, 500) && contains(statuses[max(0, indexOf(statuses, 500)):], 200)); i++ {
		r := f.Invoke(httpEvent("GET", "/me/rooms", "", alice, "", false), 10*time.Second)
		if r.Exited || r.TimedOut || r.Error != nil {
			t.Fatalf("request %d: %+v %+v\n%s", i, r, r.Error, strings.Join(f.Logs(), "\n"))
		}
		var resp struct {
			StatusCode int `json:"statusCode"`
		}
		_ = json.Unmarshal(r.Payload, &resp)
		statuses = append(statuses, resp.StatusCode)
	}
	if !contains(statuses, 500) || !contains(statuses[indexOf(statuses, 500):], 200) {
		t.Fatalf("statuses %v: want a 500 and a 200 after it", statuses)
	}
	if !f.Alive() || len(f.WaitLogs(5*time.Second, 1, `"msg":"request panicked"`, "injected panic")) == 0 {
		t.Errorf("alive %v; panic logged: %v", f.Alive(), f.LogsContaining("panicked"))
	}
}

func contains(s []int, v int) bool { return indexOf(s, v) >= 0 }

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Bad configuration is reported to /runtime/init/error with the reason,
// not a bare exit.
func TestBadConfigurationIsAnInitError(t *testing.T) {
	for _, tc := range []struct {
		program string
		environ []string
		want    string
	}{
		{"writer", env("t", "t-bookkeeping"), "JWT_ISSUER"},
		{"projector", env("", "b"), "DYNAMODB_TABLE_NAME is required"},
		{"notifier", env("t", "b", "CHAT_PUSH_ENDPOINT=http://127.0.0.1:1", "MAIL_FROM=a@example.com"), "EVENT_BUS_NAME is required"},
		{"projector", env("t", "b", "STREAM_BATCH_SIZE=x", "LOG_LEVEL=loud"), "LOG_LEVEL"},
	} {
		f, err := runtimeapi.Start(filepath.Join(bin, tc.program), tc.environ)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Init(30 * time.Second)
		var ie *runtimeapi.InitError
		if !errors.As(err, &ie) || ie.Body.ErrorType != "InitError" || !strings.Contains(ie.Body.ErrorMessage, tc.want) {
			t.Errorf("%s: init = %v, want an init error naming %s", tc.program, err, tc.want)
		}
		f.Stop()
	}
}
