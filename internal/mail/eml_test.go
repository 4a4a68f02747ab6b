package mail_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/mail"
)

// crlf is the canonical MIME form of a text body (RFC 2045 §6.7): the
// bytes a mail client decodes for a body written with "\n" line breaks.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

type parsedEML struct {
	raw     []byte
	msg     *netmail.Message
	subject string
	parts   map[string]string // media type → decoded body
	types   []string          // part order
	params  map[string]map[string]string
}

func readEML(t *testing.T, path string) parsedEML {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("net/mail cannot read %s: %v\n%s", path, err, raw)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("decode Subject: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" || params["boundary"] == "" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	p := parsedEML{raw: raw, msg: msg, subject: subject, parts: map[string]string{}, params: map[string]map[string]string{}}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		pt, pp, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("part Content-Type: %v", err)
		}
		body, err := io.ReadAll(part)
		if err != nil {
			t.Fatalf("read %s part: %v", pt, err)
		}
		p.types = append(p.types, pt)
		p.parts[pt] = string(body)
		p.params[pt] = pp
	}
	return p
}

func only(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("mailbox holds %v, want exactly one file (no temp files left)", names)
	}
	return entries[0].Name()
}

func TestEMLDirWritesAReadableMessage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mailbox", "nested")
	now := time.Date(2024, 1, 15, 10, 30, 0, 123456789, time.FixedZone("CET", 3600))
	box := &mail.EMLDir{Dir: dir, From: "Dynastream Notifier <no-reply@dynastream.dev>", Now: func() time.Time { return now }}
	m := mail.Message{
		To:      []string{"Bob Müller <bob@example.com>", "carol@example.com"},
		Subject: "Zoë invited you to “Ünïcødé ✓ goal” — a subject long enough to need several encoded words and a fold",
		Text: "Hi Bob,\n\nZoë invited you. A line that is much longer than seventy-six characters so that quoted-printable needs a soft line break = here.\n" +
			"Trailing spaces   \nTabs\tand = signs.\n",
		HTML:           `<p>Hi <strong>Bob</strong> &amp; “friends”</p><p style="color: #555;">` + strings.Repeat("long html ", 20) + "</p>\n",
		Tags:           map[string]string{"type": "invite"},
		IdempotencyKey: "INVITE#inv-456#bob@example.com",
	}
	id, err := box.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}@dynastream\.dev$`).MatchString(id) {
		t.Errorf("message id = %q", id)
	}
	name := only(t, dir)
	if want := "20240115T093000.123456789Z-" + id + ".eml"; name != want {
		t.Errorf("file name = %q, want %q", name, want)
	}
	p := readEML(t, filepath.Join(dir, name))

	// Headers.
	from, err := p.msg.Header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Dynastream Notifier" || from[0].Address != "no-reply@dynastream.dev" {
		t.Errorf("From = %v, %v", from, err)
	}
	to, err := p.msg.Header.AddressList("To")
	if err != nil {
		t.Fatalf("To: %v", err)
	}
	wantTo := []*netmail.Address{{Name: "Bob Müller", Address: "bob@example.com"}, {Address: "carol@example.com"}}
	if diff := cmp.Diff(wantTo, to); diff != "" {
		t.Errorf("To (-want +got):\n%s", diff)
	}
	if p.subject != m.Subject {
		t.Errorf("Subject\n got %q\nwant %q", p.subject, m.Subject)
	}
	if raw := p.msg.Header.Get("Subject"); !strings.HasPrefix(raw, "=?UTF-8?q?") {
		t.Errorf("raw Subject %q is not RFC 2047-encoded", raw)
	}
	if date, err := p.msg.Header.Date(); err != nil || !date.Equal(now.Truncate(time.Second)) {
		t.Errorf("Date = %v, %v; want %v", date, err, now)
	}
	if got := p.msg.Header.Get("Message-ID"); got != "<"+id+">" {
		t.Errorf("Message-ID = %q, want <%s>", got, id)
	}
	if got := p.msg.Header.Get("X-Idempotency-Key"); got != m.IdempotencyKey {
		t.Errorf("X-Idempotency-Key = %q", got)
	}
	if got := p.msg.Header.Get("MIME-Version"); got != "1.0" {
		t.Errorf("MIME-Version = %q", got)
	}

	// Body: both alternatives, plain first, decoding to the message.
	if diff := cmp.Diff([]string{"text/plain", "text/html"}, p.types); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	for typ, want := range map[string]string{"text/plain": m.Text, "text/html": m.HTML} {
		if p.params[typ]["charset"] != "UTF-8" {
			t.Errorf("%s charset = %q", typ, p.params[typ]["charset"])
		}
		if got := p.parts[typ]; got != crlf(want) {
			t.Errorf("%s body\n got %q\nwant %q", typ, got, crlf(want))
		}
	}

	// The file itself: CRLF line endings, 7-bit, lines within RFC 5322's
	// 998-character limit; header lines fold at 78 characters unless one
	// word (an RFC 2047 encoded word is up to 75) does not fit after the
	// field name; body lines are quoted-printable's 76 at most.
	inBody := false
	for i, line := range bytes.Split(p.raw, []byte("\r\n")) {
		switch {
		case len(line) == 0:
			inBody = true
		case inBody && len(line) > 76,
			!inBody && len(line) > 78 && bytes.Count(bytes.TrimSpace(line), []byte(" ")) > 1,
			len(line) > 998:
			t.Errorf("line %d has %d characters: %q", i+1, len(line), line)
		}
		if bytes.ContainsAny(line, "\r\n") {
			t.Errorf("line %d has a bare CR or LF: %q", i+1, line)
		}
		for _, c := range line {
			if c >= 0x80 {
				t.Errorf("line %d is not 7-bit: %q", i+1, line)
				break
			}
		}
	}
}

func TestEMLDirTemplateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	box := &mail.EMLDir{Dir: dir, Now: func() time.Time { return time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC) }}
	m := mail.InviteEmail(mail.InviteData{
		To: "bob@example.com", InviterName: hostileName, ResourceType: "goal", ResourceTitle: hostileTitle,
		Message: hostileBlock, InviteURL: "https://app.example.com/invites/inv-1", ExpiresAt: time.Date(2024, 2, 14, 10, 30, 0, 0, time.UTC),
	})
	id, err := box.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	p := readEML(t, filepath.Join(dir, only(t, dir)))
	if p.subject != m.Subject {
		t.Errorf("Subject\n got %q\nwant %q", p.subject, m.Subject)
	}
	// The hostile name did not become a header.
	if bcc := p.msg.Header.Get("Bcc"); bcc != "" {
		t.Errorf("Bcc header injected: %q", bcc)
	}
	if p.parts["text/plain"] != crlf(m.Text) || p.parts["text/html"] != crlf(m.HTML) {
		t.Error("bodies differ from the template's")
	}
	if !strings.HasSuffix(id, "@localhost") {
		t.Errorf("id %q: default From should be @localhost", id)
	}
}

func TestEMLDirNamesSortInSendingOrder(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC)
	box := &mail.EMLDir{Dir: dir, Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }}
	var ids []string
	for range 3 {
		id, err := box.Send(context.Background(), testMessage())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d files, want 3", len(entries))
	}
	for i, e := range entries {
		if !strings.HasSuffix(e.Name(), "-"+ids[i]+".eml") {
			t.Errorf("file %d = %s, want message %s", i, e.Name(), ids[i])
		}
		if info, err := e.Info(); err != nil || info.Mode().Perm() != 0o644 {
			t.Errorf("file %s mode %v, %v", e.Name(), info.Mode(), err)
		}
	}
}

func TestEMLDirRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	box := &mail.EMLDir{Dir: dir}
	for name, m := range map[string]mail.Message{
		"bad address":    {To: []string{"not an address"}, Subject: "s", Text: "t"},
		"CRLF recipient": {To: []string{"bob@example.com\r\nBcc: eve@example.com"}, Subject: "s", Text: "t"},
		"no recipients":  {Subject: "s", Text: "t"},
	} {
		if _, err := box.Send(context.Background(), m); !mail.IsPermanent(err) {
			t.Errorf("%s: err = %v, want permanent", name, err)
		}
	}
	bad := &mail.EMLDir{Dir: dir, From: "<<nope"}
	if _, err := bad.Send(context.Background(), testMessage()); !mail.IsPermanent(err) {
		t.Errorf("bad From: err = %v, want permanent", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written for rejected messages: %v", entries)
	}
}

func TestEMLDirUnwritableDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := (&mail.EMLDir{Dir: filepath.Join(file, "mailbox")}).Send(context.Background(), testMessage())
	if err == nil || mail.IsPermanent(err) {
		t.Errorf("err = %v, want a (retryable) I/O error", err)
	}
}
