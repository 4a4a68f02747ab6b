package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/gateway"
)

type panickyVerifier struct{}

func (panickyVerifier) Verify(context.Context, string) (auth.Identity, error) { panic("a bug") }

// A chat route's panic is an answer, not the end of the process: a
// refused $connect (internal), an error frame for a frame.
func TestChatRoutePanicIsAnAnswer(t *testing.T) {
	s := &Server{Tokens: panickyVerifier{}, Logger: slog.New(slog.DiscardHandler)} // no Store: a frame's handling panics
	r := s.Chat()
	if err := r.Connect(context.Background(), gateway.ConnectRequest{ConnectionID: "c1=", Token: "t"}); errs.CodeOf(err) != errs.Internal {
		t.Errorf("$connect: %v, want an internal error", err)
	}
	var out chat.Outbound
	if err := json.Unmarshal(r.Message(context.Background(), "c1=", []byte(`{"action":"sendMessage","content":"hi"}`)), &out); err != nil || out.Type != chat.FrameError {
		t.Errorf("frame: %+v %v, want an error frame", out, err)
	}
}
