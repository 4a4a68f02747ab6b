package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/gateway"
)

// room answers sendMessage with sent, after pushing the message through
// the management endpoint as the notifier would (its id from its content,
// so the same text twice is the same message, as a redelivery is), and
// joinRoom with joined.
type room struct{ gw *gateway.Local }

func (room) Connect(_ context.Context, r gateway.ConnectRequest) error {
	if r.Token != "ok" {
		return errors.New("bad token")
	}
	return nil
}
func (room) Disconnect(context.Context, string) error { return nil }
func (r room) Message(_ context.Context, id string, frame []byte) []byte {
	var in chat.Inbound
	_ = json.Unmarshal(frame, &in)
	if in.Action == chat.ActionJoinRoom {
		return chat.Outbound{Type: chat.FrameJoined, RoomID: in.RoomID}.Encode()
	}
	m := &chat.Message{RoomID: "global", MessageID: "id-" + in.Content, UserName: "ann", Content: in.Content}
	push := httptest.NewRequest(http.MethodPost, "/@connections/"+id, bytes.NewReader(chat.Outbound{Type: chat.FrameMessage, Message: m}.Encode()))
	r.gw.Management().ServeHTTP(httptest.NewRecorder(), push)
	return chat.Outbound{Type: chat.FrameSent, Message: m}.Encode()
}

// The client prints what it is pushed, once per message, and the local
// answers to commands; at the end of input it waits for every answer
// before it closes (answerWait raised: its 5 s ran out once on a machine
// busy with the other tests, before the pushes queued ahead of the
// answers were read).
func TestClient(t *testing.T) {
	defer func(w time.Duration) { answerWait = w }(answerWait)
	answerWait = 5 * time.Minute
	gw := &gateway.Local{NewID: func() string { return "c1" },
		Refuse: func(err error) (int, http.Header, []byte) {
			return http.StatusUnauthorized, nil, []byte(`{"detail":"invalid token"}`)
		}}
	gw.Routes = room{gw}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	defer gw.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	// the client writes from two goroutines (the input's answers, the
	// pushes): a plain bytes.Buffer lost the pushes' lines now and then
	var out syncBuffer
	in := strings.NewReader("hello <b>there</b>\nhello <b>there</b>\n\x1b[31mred\n\n/help\n/join\n/frob\n/join kitchen\n")
	if err := run(url, "ok", "global", in, &out); err != nil {
		t.Fatal(err)
	}
	// commands are answered here and never sent: /help, a bare /join, an
	// unknown one
	local := "a line is sent as a message to the room; commands:\n" +
		"  /join <room>  move to another room\n  /quit         close (so does the end of input)\n" +
		"  /help         this\n  //text        send \"/text\" as a message\n" +
		"usage: /join <room>\n" +
		"unknown command /frob (/help lists them; //text sends a message that starts with /)\n"
	for _, l := range strings.SplitAfter(local, "\n") {
		if !strings.Contains(out.String(), l) {
			t.Errorf("printed no %q", l)
		}
	}
	got := out.String()
	for _, l := range strings.SplitAfter(local, "\n") {
		got = strings.Replace(got, l, "", 1)
	}
	want := "connected to global; type a message, /join <room>, /quit (/help)\n" +
		"[global] ann: hello <b>there</b>\n" + // once: the same id twice
		"[global] ann: \\x1b[31mred\n" + // a terminal escape is shown, not obeyed
		"joined kitchen\n"
	if got != want {
		t.Errorf("printed (local answers taken out):\n%s\nwant:\n%s", got, want)
	}
	if err := run(url, "forged", "global", strings.NewReader(""), &out); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a refused connection: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the client's two goroutines and
// the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// When the server closes the connection while the user is not typing (a
// member removed from the room: the notifier's DeleteConnection), the
// client says so at once, with the close frame's status and reason, and
// run returns; it does not wait for the next line to fail on a closed
// socket.
func TestClientSaysTheServerClosed(t *testing.T) {
	gw := &gateway.Local{NewID: func() string { return "c1" }}
	gw.Routes = room{gw}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	defer gw.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	in, _ := io.Pipe() // the user types nothing
	var out syncBuffer
	errc := make(chan error, 1)
	go func() { errc <- run(url, "ok", "global", in, &out) }()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "connected to global"); {
		if time.Now().After(deadline) {
			t.Fatalf("not connected: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	del := httptest.NewRecorder()
	gw.Management().ServeHTTP(del, httptest.NewRequest(http.MethodDelete, "/@connections/c1", nil))
	if del.Code != http.StatusNoContent {
		t.Fatalf("DeleteConnection: %d %s", del.Code, del.Body)
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "the server closed the connection: 1000 (StatusNormalClosure): closed by the server") {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client still waits on its input after the server closed the connection")
	}
}
