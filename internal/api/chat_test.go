package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/gateway"
	"github.com/dynastream/dynastream/internal/gateway/gatewaytest"
	"github.com/dynastream/dynastream/internal/store"
)

// dialChat opens a WebSocket connection to the env's chat; the handshake's
// response comes back when it is refused.
func (e *env) dialChat(query string) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/ws?"+query, nil)
	if c != nil {
		e.t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, res, err
}

func (e *env) chatConn(query string) *websocket.Conn {
	e.t.Helper()
	c, _, err := e.dialChat(query)
	if err != nil {
		e.t.Fatalf("connect %s: %v", query, err)
	}
	return c
}

// send writes a frame and reads the frame that answers it.
func (e *env) send(c *websocket.Conn, frame string) chat.Outbound {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		e.t.Fatal(err)
	}
	return readFrame(e.t, c)
}

func readFrame(t *testing.T, c *websocket.Conn) chat.Outbound {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var o chat.Outbound
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return o
}

// Seed 002 over a real WebSocket: tokens checked before the upgrade, a
// search room's chat for its members only (connect, join, send, history),
// every bad frame answered with an error frame naming the field, messages
// stored as written and paged over HTTP, $disconnect deleting the
// connection.
func TestChatOverWebSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("c%03d"))
	e.clock.Advance(time.Since(e.clock.Peek())) // DynamoDB Local deletes items whose ttl has passed
	alice := e.mint(map[string]any{"userId": "alice", "name": "Alice"})
	bob, carol := e.token("bob"), e.token("carol")
	var rm struct{ RoomID string }
	e.ok(201, "POST", "/rooms", alice, map[string]any{"name": "Flat", "searchType": "rent"}, &rm)
	e.ok(201, "POST", "/rooms/"+rm.RoomID+"/members", alice, map[string]any{"userId": "bob"}, nil)

	// Refused before the upgrade, with problem+json, and nothing written.
	before := e.snapshot()
	for q, status := range map[string]int{
		"":            401,
		"token=x.y.z": 401,
		"token=" + carol + "&roomId=" + rm.RoomID: 404, // an outsider: as if there were no such room
		"token=" + carol + "&roomId=a%23b":        400,
		"token=" + carol + "&roomId=":             400,
	} {
		_, res, err := e.dialChat(q)
		if err == nil || res == nil || res.StatusCode != status || res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("connect ?%.30s: want %d problem+json, got %v %+v", q, status, err, res)
		}
	}
	e.unchanged(before, "refused connections")

	a := e.chatConn("token=" + alice) // the default room, global
	b := e.chatConn("token=" + bob + "&roomId=" + rm.RoomID)
	c := e.chatConn("token=" + carol)
	if e.gw.Len() != 3 {
		t.Fatalf("%d connections open", e.gw.Len())
	}

	// A message is stored as written and acknowledged with its id.
	sent := e.send(a, `{"action":"sendMessage","content":"<b>hi</b> & welcome\n"}`)
	if sent.Type != chat.FrameSent || sent.Message == nil || sent.Message.MessageID == "" || sent.Message.RoomID != chat.DefaultRoom ||
		sent.Message.UserName != "Alice" || sent.Message.Content != "<b>hi</b> & welcome\n" {
		t.Fatalf("sent: %+v", sent)
	}
	// Bad frames: an error frame each, naming the field; the connection stays.
	for frame, field := range map[string]string{
		`not json`:           "action",
		`{"action":"dance"}`: "action",
		`{"action":"sendMessage","content":"  \n"}`:                                           "content",
		`{"action":"sendMessage"}`:                                                            "content",
		`{"action":"sendMessage","content":"a\u0007"}`:                                        "content",
		`{"action":"sendMessage","content":"` + strings.Repeat("é", chat.MaxContent+1) + `"}`: "content",
		`{"action":"joinRoom","roomId":"a#b"}`:                                                "roomId",
		`{"action":"joinRoom"}`:                                                               "roomId",
	} {
		if got := e.send(c, frame); got.Type != chat.FrameError || got.Field != field || got.Reason == "" {
			t.Errorf("frame %.40s: want an error frame on %s, got %+v", frame, field, got)
		}
	}
	if got := e.send(c, `{"action":"sendMessage","content":"`+strings.Repeat("é", chat.MaxContent)+`"}`); got.Type != chat.FrameSent {
		t.Errorf("2,000 characters: %+v", got)
	}
	// An outsider cannot join the search room's chat; a member can.
	if got := e.send(c, `{"action":"joinRoom","roomId":"`+rm.RoomID+`"}`); got.Type != chat.FrameError || !strings.Contains(got.Reason, "not found") {
		t.Errorf("outsider joins: %+v", got)
	}
	if got := e.send(a, `{"action":"joinRoom","roomId":"`+rm.RoomID+`"}`); got.Type != chat.FrameJoined || got.RoomID != rm.RoomID {
		t.Fatalf("member joins: %+v", got)
	}
	inRoom := e.send(b, `{"action":"sendMessage","content":"in the flat's chat"}`)
	if inRoom.Type != chat.FrameSent || inRoom.Message.RoomID != rm.RoomID || inRoom.Message.UserName != "bob" {
		t.Fatalf("bob in the room's chat: %+v", inRoom)
	}

	// History over HTTP: newest first, after a time oldest first; the
	// room's chat for its members only.
	var page struct{ Items []chat.Message }
	e.clock.Advance(time.Second)
	later := e.send(a, `{"action":"sendMessage","content":"later"}`)
	e.ok(200, "GET", "/chat/rooms/"+rm.RoomID+"/messages", bob, nil, &page)
	if len(page.Items) != 2 || page.Items[0].MessageID != later.Message.MessageID || page.Items[1].MessageID != inRoom.Message.MessageID {
		t.Fatalf("newest first: %+v", page.Items)
	}
	e.ok(200, "GET", "/chat/rooms/"+rm.RoomID+"/messages?after="+inRoom.Message.CreatedAt, bob, nil, &page)
	if len(page.Items) != 1 || page.Items[0].Content != "later" {
		t.Fatalf("after: %+v", page.Items)
	}
	e.ok(200, "GET", "/chat/rooms/global/messages?limit=1", carol, nil, &page)
	if len(page.Items) != 1 || page.Items[0].UserID != "carol" {
		t.Fatalf("global, newest: %+v", page.Items)
	}
	var room chat.Room
	e.ok(200, "GET", "/chat/rooms/"+rm.RoomID, bob, nil, &room)
	e.problem(e.do("GET", "/chat/rooms/"+rm.RoomID, carol, nil), 404)
	e.problem(e.do("GET", "/chat/rooms/"+rm.RoomID+"/messages", carol, nil), 404)
	e.problem(e.do("GET", "/chat/rooms/nobody-here/messages", carol, nil), 404)
	e.problem(e.do("GET", "/chat/rooms/global/messages?after=yesterday", carol, nil), 400, "after")
	e.problem(e.do("GET", "/chat/rooms/a%23b", carol, nil), 400, "roomId")

	// A member removed from the room can no longer send to its chat.
	e.ok(204, "DELETE", "/rooms/"+rm.RoomID+"/members/bob", alice, nil, nil)
	if got := e.send(b, `{"action":"sendMessage","content":"still here?"}`); got.Type != chat.FrameError || !strings.Contains(got.Reason, "not found") {
		t.Errorf("removed member sends: %+v", got)
	}

	// Closing deletes the connection item ($disconnect).
	_ = c.Close(websocket.StatusNormalClosure, "")
	for end := time.Now().Add(5 * time.Second); e.getItem(store.ConnectionKey("conn-3")) != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("carol's connection item outlived her connection")
		}
	}
}

// The same routes on API Gateway's WebSocket events.
func TestChatOnAPIGatewayEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("l%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	l := gateway.Lambda{Routes: e.srv.Chat(), Refuse: e.srv.Refusal}
	ctx := context.Background()
	const id = "C9xkNcOFvHcCIhw="
	res, err := l.Handle(ctx, gatewaytest.Event(t, "connect", map[string]string{"CONN": id, "TOKEN": "forged", "ROOM": "global"}))
	if err != nil || res.StatusCode != 401 || !strings.Contains(res.Body, `"status":401`) {
		t.Fatalf("forged token: %+v %v", res, err)
	}
	res, err = l.Handle(ctx, gatewaytest.Event(t, "connect", map[string]string{"CONN": id, "TOKEN": e.mint(map[string]any{"userId": "dana", "name": "Dana"}), "ROOM": "kitchen"}))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("connect: %+v %v", res, err)
	}
	if it := e.getItem(store.ConnectionKey(id)); str(it, "roomId") != "kitchen" || str(it, "userName") != "Dana" || str(it, "GSI1PK") != "CHATROOM#kitchen" {
		t.Fatalf("connection item: %v", it)
	}
	res, err = l.Handle(ctx, gatewaytest.Event(t, "message", map[string]string{"CONN": id, "BODY": `{"action":"sendMessage","content":"hello from Lambda"}`}))
	var out chat.Outbound
	if err != nil || json.Unmarshal([]byte(res.Body), &out) != nil || out.Type != chat.FrameSent || out.Message.Content != "hello from Lambda" {
		t.Fatalf("sendMessage: %+v %v", res, err)
	}
	res, _ = l.Handle(ctx, gatewaytest.Event(t, "message", map[string]string{"CONN": id, "BODY": `{"action":"sendMessage","content":""}`}))
	if json.Unmarshal([]byte(res.Body), &out) != nil || out.Type != chat.FrameError || out.Field != "content" {
		t.Fatalf("empty content: %+v", res)
	}
	if _, err := l.Handle(ctx, gatewaytest.Event(t, "disconnect", map[string]string{"CONN": id})); err != nil || e.getItem(store.ConnectionKey(id)) != nil {
		t.Fatalf("disconnect: %v, item %v", err, e.getItem(store.ConnectionKey(id)))
	}
	// A frame from a connection that is gone: an error frame, not a 500.
	res, err = l.Handle(ctx, gatewaytest.Event(t, "message", map[string]string{"CONN": id, "BODY": `{"action":"sendMessage","content":"hi"}`}))
	if err != nil || json.Unmarshal([]byte(res.Body), &out) != nil || out.Type != chat.FrameError || !strings.Contains(out.Reason, "reconnect") {
		t.Fatalf("after disconnect: %+v %v", res, err)
	}
}

// chatMatrix is the chat's authorization matrix: for each chat operation
// on a search room's chat, while the room lives and after its deletion,
// what its owner, a member, a member removed (whose connection to the
// chat was open before the removal) and an outsider get: "ok" or the
// status ("-": no such case: an outsider never had a connection there).
// The push path's rows are the notifier's (notify.TestChatPushAuthorization)
// and the local stack's (cmd/loadgen TestRemovedMemberHearsNothing).
//
//	operation                          owner  member removed outsider
var chatMatrix = map[string][4]string{
	"live $connect":                     {"ok", "ok", "404", "404"},
	"live joinRoom":                     {"ok", "ok", "404", "404"},
	"live sendMessage":                  {"ok", "ok", "404", "-"},
	"live GET /chat/rooms/{id}":         {"ok", "ok", "404", "404"},
	"live GET /chat/rooms/{id}/msgs":    {"ok", "ok", "404", "404"},
	"deleted $connect":                  {"404", "404", "404", "404"},
	"deleted joinRoom":                  {"404", "404", "404", "404"},
	"deleted sendMessage":               {"404", "404", "404", "-"},
	"deleted GET /chat/rooms/{id}":      {"404", "404", "404", "404"},
	"deleted GET /chat/rooms/{id}/msgs": {"404", "404", "404", "404"},
}

// TestChatAuthorizationMatrix runs chatMatrix over a real WebSocket: a
// removed member's open connection and a deleted room's chat are refused
// on every path the writer serves, the same as an outsider.
func TestChatAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("cm%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	users := [4]string{"alice", "bob", "carol", "dave"}
	tok := map[string]string{}
	for _, u := range users {
		tok[u] = e.token(u)
	}
	var rm struct{ RoomID string }
	e.ok(201, "POST", "/rooms", tok["alice"], map[string]any{"name": "Flat", "searchType": "rent"}, &rm)
	for _, u := range []string{"bob", "carol"} {
		e.ok(201, "POST", "/rooms/"+rm.RoomID+"/members", tok["alice"], map[string]any{"userId": u}, nil)
	}
	inRoom := map[string]*websocket.Conn{}
	for _, u := range users[:3] {
		inRoom[u] = e.chatConn("token=" + tok[u] + "&roomId=" + rm.RoomID)
		if got := e.send(inRoom[u], `{"action":"sendMessage","content":"hello from `+u+`"}`); got.Type != chat.FrameSent {
			t.Fatalf("%s before anything: %+v", u, got)
		}
	}
	e.ok(204, "DELETE", "/rooms/"+rm.RoomID+"/members/carol", tok["alice"], nil, nil)

	outcome := func(f chat.Outbound, want string) string {
		switch {
		case f.Type == want:
			return "ok"
		case f.Type == chat.FrameError && strings.Contains(f.Reason, "not found"):
			return "404"
		}
		return "frame " + f.Type + ": " + f.Reason
	}
	run := func(op, user string) string {
		switch {
		case strings.HasSuffix(op, "$connect"):
			c, res, err := e.dialChat("token=" + tok[user] + "&roomId=" + rm.RoomID)
			if err == nil {
				_ = c.Close(websocket.StatusNormalClosure, "")
				return "ok"
			}
			if res == nil {
				return err.Error()
			}
			return class(res.StatusCode)
		case strings.HasSuffix(op, "joinRoom"):
			c := e.chatConn("token=" + tok[user])
			defer c.Close(websocket.StatusNormalClosure, "")
			return outcome(e.send(c, `{"action":"joinRoom","roomId":"`+rm.RoomID+`"}`), chat.FrameJoined)
		case strings.HasSuffix(op, "sendMessage"):
			if inRoom[user] == nil {
				return "-"
			}
			return outcome(e.send(inRoom[user], `{"action":"sendMessage","content":"`+op+`"}`), chat.FrameSent)
		case strings.HasSuffix(op, "/msgs"):
			return strings.Replace(class(e.do("GET", "/chat/rooms/"+rm.RoomID+"/messages", tok[user], nil).status), "2xx", "ok", 1)
		default:
			return strings.Replace(class(e.do("GET", "/chat/rooms/"+rm.RoomID, tok[user], nil).status), "2xx", "ok", 1)
		}
	}
	check := func(state string) {
		for op, want := range chatMatrix {
			if !strings.HasPrefix(op, state+" ") {
				continue
			}
			var got [4]string
			for i, u := range users {
				got[i] = run(op, u)
			}
			if got != want {
				t.Errorf("%s: owner/member/removed/outsider got %v, want %v", op, got, want)
			}
		}
	}
	check("live")
	e.ok(202, "DELETE", "/rooms/"+rm.RoomID, tok["alice"], nil, nil)
	check("deleted")
	// Nobody opens a plain chat room under an id shaped like a search
	// room's, to read the messages of the room that may get it later.
	if _, res, err := e.dialChat("token=" + tok["dave"] + "&roomId=01KAZ3NDEKTSV4RRFFQ69G5FAV"); err == nil || res == nil || res.StatusCode != 404 {
		t.Errorf("a plain chat room with a room-shaped id: %v %+v, want 404", err, res)
	}
}

// A sendMessage frame sent again with its clientMessageId (the client did
// not hear whether the first arrived) stores nothing and answers the first
// message; the id with other content is refused; ids are per user.
func TestChatClientMessageID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("cmid%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	alice, bob := e.token("alice"), e.token("bob")
	a, b := e.chatConn("token="+alice+"&roomId=kitchen"), e.chatConn("token="+bob+"&roomId=kitchen")
	first := e.send(a, `{"action":"sendMessage","content":"pho?","clientMessageId":"m-1"}`)
	e.clock.Advance(time.Second)
	again := e.send(a, `{"action":"sendMessage","content":"pho?","clientMessageId":"m-1"}`)
	if first.Type != chat.FrameSent || again.Type != chat.FrameSent || *again.Message != *first.Message {
		t.Fatalf("sent again: %+v, first %+v", again.Message, first.Message)
	}
	if got := e.send(a, `{"action":"sendMessage","content":"ramen?","clientMessageId":"m-1"}`); got.Type != chat.FrameError || !strings.Contains(got.Reason, "another message") {
		t.Errorf("the id with other content: %+v", got)
	}
	if got := e.send(a, `{"action":"sendMessage","content":"x","clientMessageId":"a b"}`); got.Type != chat.FrameError || got.Field != "clientMessageId" {
		t.Errorf("a bad id: %+v", got)
	}
	if got := e.send(b, `{"action":"sendMessage","content":"pho?","clientMessageId":"m-1"}`); got.Type != chat.FrameSent || got.Message.MessageID == first.Message.MessageID {
		t.Errorf("bob's m-1 is his own: %+v", got)
	}
	var page struct{ Items []chat.Message }
	e.ok(200, "GET", "/chat/rooms/kitchen/messages", alice, nil, &page)
	if len(page.Items) != 2 {
		t.Errorf("%d messages stored, want 2 (alice's once, bob's)", len(page.Items))
	}
}

// One client cannot take what others need: a user's open connections are
// bounded (the next handshake is a 429 problem+json, nothing written; a
// closed one frees its place), and so are one connection's frames (an
// error frame past the limit, the next window serves it again), while
// another user's connection is served throughout.
func TestChatLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("cl%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	e.srv.ChatConnectionsPerUser = 3
	e.srv.ChatFrames = store.FrameLimit{Frames: 5, Per: time.Minute}
	alice, bob := e.token("alice"), e.token("bob")
	var open []*websocket.Conn
	for range 3 {
		open = append(open, e.chatConn("token="+alice))
	}
	_, res, err := e.dialChat("token=" + alice)
	if err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a fourth connection: %v %+v, want a 429 problem+json", err, res)
	}
	b := e.chatConn("token=" + bob) // another user is served
	_ = open[0].Close(websocket.StatusNormalClosure, "")
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, _, err := e.dialChat("token=" + alice)
		if err == nil {
			open[0] = c
			break
		}
		if time.Now().After(end) {
			t.Fatalf("a closed connection did not free its place: %v", err)
		}
	}

	// Frames: five a minute here, from the start of a window (the clock
	// ticks a second a call, and the reconnection above made any number).
	now := e.clock.Peek()
	e.clock.Advance(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	// Junk counts as a message does: a frame that does not parse, an
	// unknown action, an empty object.
	for _, junk := range []string{`not json`, `{"action":"dance"}`, `{}`} {
		if got := e.send(open[1], junk); got.Type != chat.FrameError || strings.Contains(got.Reason, "too many frames") {
			t.Fatalf("junk %s: %+v", junk, got)
		}
	}
	for i := range 2 {
		if got := e.send(open[1], fmt.Sprintf(`{"action":"sendMessage","content":"m%d"}`, i)); got.Type != chat.FrameSent {
			t.Fatalf("frame %d: %+v", i, got)
		}
	}
	if got := e.send(open[1], `{"action":"sendMessage","content":"one too many"}`); got.Type != chat.FrameError || !strings.Contains(got.Reason, "too many frames") {
		t.Errorf("the sixth frame: %+v", got)
	}
	if got := e.send(b, `{"action":"sendMessage","content":"bob is served"}`); got.Type != chat.FrameSent {
		t.Errorf("bob meanwhile: %+v", got)
	}
	e.clock.Advance(time.Minute)
	if got := e.send(open[1], `{"action":"sendMessage","content":"the next minute"}`); got.Type != chat.FrameSent {
		t.Errorf("the next window: %+v", got)
	}
	var page struct{ Items []chat.Message }
	e.ok(200, "GET", "/chat/rooms/global/messages?limit=100", alice, nil, &page)
	if len(page.Items) != 4 {
		t.Errorf("%d messages stored, want 4 (the refused one not)", len(page.Items))
	}
}

// A user's connects are bounded per clock minute: closing and opening
// again does not buy fresh frame budgets without end. Past the bound the
// handshake is a 429 problem+json with Retry-After (to the next minute),
// another user is served, and the next minute serves the user again.
func TestChatConnectRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sequence("cr%03d"))
	now := e.clock.Peek()
	e.clock.Advance(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	e.srv.ChatConnectsPerMinute = 3
	alice, bob := e.token("alice"), e.token("bob")
	for i := range 3 {
		c := e.chatConn("token=" + alice)
		if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
	_, res, err := e.dialChat("token=" + alice)
	if err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a fourth connect in the minute: %v %+v, want a 429 problem+json", err, res)
	}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After %q, want the seconds to the next minute", res.Header.Get("Retry-After"))
	}
	e.chatConn("token=" + bob)
	e.clock.Advance(time.Minute)
	e.chatConn("token=" + alice)
}

// A client that sends frames with a huge unknown action and never reads
// the answers: nothing of the action is echoed, so the answers stay small
// and the writer's heap does not grow with what the client sent.
func TestChatLongActionsAreNotEchoed(t *testing.T) {
	e := newEnv(t, sequence("la%03d"))
	e.clock.Advance(time.Since(e.clock.Peek()))
	e.srv.ChatFrames = store.FrameLimit{Frames: 1000, Per: time.Minute}
	c := e.chatConn("token=" + e.token("alice"))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	frame := []byte(`{"action":"` + strings.Repeat("a", 120000) + `"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 400 {
		if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("400 frames of a 120,000-character action, not read: heap %+.1f MB", float64(growth)/(1<<20))
	if growth > 16<<20 {
		t.Errorf("the heap grew %.1f MB", float64(growth)/(1<<20))
	}
	// The answer names no action and echoes none of it.
	got := readFrame(t, c)
	if got.Type != chat.FrameError || got.Action != "" || got.Field != "action" {
		t.Errorf("the answer: %+v", got)
	}
}
