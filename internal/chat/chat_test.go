package chat

import (
	"errors"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/internal/errs"
)

func TestCheckContent(t *testing.T) {
	for _, tc := range []struct {
		in, reason string
	}{
		{"hello", ""},
		{"xin chào 👋\nline two\ttab", ""},
		{"<script>alert(1)</script>", ""}, // stored as written; escaping is the renderer's
		{strings.Repeat("é", MaxContent), ""},
		{"", "must not be empty"},
		{" \n\t ", "must not be empty"},
		{strings.Repeat("é", MaxContent+1), "must be at most 2000 characters"},
		{"bell\a", "must not contain control characters (found U+0007)"},
		{"nul\x00", "must not contain control characters (found U+0000)"},
		{"c1\u0085", "must not contain control characters (found U+0085)"},
		{"bad \xff utf-8", "must be valid UTF-8"},
	} {
		err := CheckContent(tc.in)
		var e *errs.Error
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.reason != "" && (!errors.As(err, &e) || e.Fields[0].Field != "content" || e.Fields[0].Reason != tc.reason):
			t.Errorf("%q: got %v, want content: %s", tc.in, err, tc.reason)
		}
	}
}

func TestErrorFrame(t *testing.T) {
	f := ErrorFrame(ActionSendMessage, CheckContent(""))
	if f.Type != FrameError || f.Action != "sendMessage" || f.Field != "content" || f.Reason != "must not be empty" {
		t.Errorf("validation: %+v", f)
	}
	f = ErrorFrame(ActionJoinRoom, errs.New(errs.Forbidden, "not a member of room r1"))
	if f.Reason != "not a member of room r1" || f.Field != "" {
		t.Errorf("refusal: %+v", f)
	}
	f = ErrorFrame(ActionSendMessage, errors.New("dial tcp 10.0.0.1: secret detail"))
	if f.Reason != "internal error; try again" {
		t.Errorf("internal: %+v", f)
	}
	if string(f.Encode()) != `{"type":"error","action":"sendMessage","reason":"internal error; try again"}` {
		t.Errorf("encoded: %s", f.Encode())
	}
}

func TestParseInbound(t *testing.T) {
	in, err := ParseInbound([]byte(`{"action":"joinRoom","roomId":"kitchen"}`))
	if err != nil || in.Action != ActionJoinRoom || in.RoomID != "kitchen" {
		t.Errorf("%+v %v", in, err)
	}
	if _, err := ParseInbound([]byte(`not json`)); !errs.Is(err, errs.Invalid) {
		t.Errorf("not json: %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"short <b>as written</b>": "short <b>as written</b>",
		strings.Repeat("ă", 140):  strings.Repeat("ă", 140),
		strings.Repeat("ă", 141):  strings.Repeat("ă", 139) + "…",
		strings.Repeat("😀", 1000): strings.Repeat("😀", 139) + "…",
	} {
		if got := Excerpt(in); got != want {
			t.Errorf("Excerpt(%.20q) = %.20q…, want %.20q…", in, got, want)
		}
	}
}

// A frame that is not valid UTF-8 is refused as such (JSON decoding would
// replace the bad bytes with U+FFFD and store something the client never
// sent); content that shows nothing is empty.
func TestInboundText(t *testing.T) {
	_, err := ParseInbound([]byte("{\"action\":\"sendMessage\",\"content\":\"caf\xe9\"}"))
	var e *errs.Error
	if !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "frame" || e.Fields[0].Reason != "must be valid UTF-8" {
		t.Errorf("invalid UTF-8: %v", err)
	}
	for _, s := range []string{"\u200B", "\uFEFF", " \u200D "} {
		if err := CheckContent(s); !errors.As(err, &e) || e.Fields[0].Reason != "must not be empty" {
			t.Errorf("content %+q: %v", s, err)
		}
	}
}
