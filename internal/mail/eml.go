package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// EMLDir is the local stack's mailbox: each sent message becomes one
// RFC 5322 .eml file in Dir that any mail client opens (MIME
// multipart/alternative, text/plain then text/html, UTF-8,
// quoted-printable). Files are written atomically (temporary dot-file in
// Dir, synced, then renamed), so a watcher never sees half a message.
// Nothing is ever retried or deduplicated: a redelivered message is
// written again under a new Message-ID.
type EMLDir struct {
	// Dir receives the files; it is created if missing.
	Dir string
	// From is the sender, "Name <addr>" or "addr" (default
	// "Dynastream <no-reply@localhost>").
	From string
	// Now stamps the Date header and the file name (default time.Now).
	Now func() time.Time
}

var _ Sender = (*EMLDir)(nil)

// DefaultEMLFrom is EMLDir's sender when From is empty.
const DefaultEMLFrom = "Dynastream <no-reply@localhost>"

// emlTimeLayout prefixes file names so that a directory listing is in
// sending order.
const emlTimeLayout = "20060102T150405.000000000Z"

// Send implements Sender: it writes the message and returns its Message-ID
// (without angle brackets). The file is Dir/<time>-<Message-ID>.eml.
func (e *EMLDir) Send(ctx context.Context, m Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("mail: eml: %w", err)
	}
	if e.Dir == "" {
		return "", errors.New("mail: eml: no directory")
	}
	if err := m.validate(); err != nil {
		return "", fmt.Errorf("mail: eml: %w", err)
	}
	now := time.Now()
	if e.Now != nil {
		now = e.Now()
	}
	from := e.From
	if from == "" {
		from = DefaultEMLFrom
	}
	id, err := newMessageID(from)
	if err != nil {
		return "", fmt.Errorf("mail: eml: %w", err)
	}
	raw, err := renderEML(m, from, now, id)
	if err != nil {
		return "", fmt.Errorf("mail: eml: %w", err)
	}
	name := now.UTC().Format(emlTimeLayout) + "-" + id + ".eml"
	if err := writeAtomic(e.Dir, name, raw); err != nil {
		return "", fmt.Errorf("mail: eml: %w", err)
	}
	return id, nil
}

// newMessageID returns 32 random hex digits @ the sender's domain.
func newMessageID(from string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("message id: %w", err)
	}
	domain := "localhost"
	if a, err := netmail.ParseAddress(from); err == nil {
		if i := strings.LastIndexByte(a.Address, '@'); i >= 0 && i < len(a.Address)-1 {
			domain = a.Address[i+1:]
		}
	}
	return hex.EncodeToString(b[:]) + "@" + domain, nil
}

// renderEML builds the whole message with CRLF line endings.
func renderEML(m Message, from string, now time.Time, id string) ([]byte, error) {
	fromAddr, err := formatAddress(from)
	if err != nil {
		return nil, fmt.Errorf("From: %w", err)
	}
	to := make([]string, 0, len(m.To))
	for _, t := range m.To {
		a, err := formatAddress(t)
		if err != nil {
			return nil, fmt.Errorf("To: %w", err)
		}
		to = append(to, a)
	}

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	parts := []struct{ typ, content string }{{"text/plain", m.Text}, {"text/html", m.HTML}}
	for _, p := range parts {
		if p.content == "" {
			continue
		}
		w, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {p.typ + "; charset=UTF-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, fmt.Errorf("%s part: %w", p.typ, err)
		}
		qp := quotedprintable.NewWriter(w)
		if _, err := qp.Write([]byte(p.content)); err != nil {
			return nil, fmt.Errorf("%s part: %w", p.typ, err)
		}
		if err := qp.Close(); err != nil {
			return nil, fmt.Errorf("%s part: %w", p.typ, err)
		}
	}
	if err := mw.Close(); err != nil {
		return nil, fmt.Errorf("multipart: %w", err)
	}

	var out bytes.Buffer
	header := func(name, value string) { out.WriteString(foldHeader(name, value)) }
	header("From", fromAddr)
	out.WriteString("To: " + strings.Join(to, ",\r\n ") + "\r\n")
	header("Subject", mime.QEncoding.Encode("UTF-8", oneLine(m.Subject, 0)))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+id+">")
	if key := oneLine(m.IdempotencyKey, 0); key != "" {
		header(IdempotencyHeader, mime.QEncoding.Encode("UTF-8", key))
	}
	tagNames := make([]string, 0, len(m.Tags))
	for k := range m.Tags {
		tagNames = append(tagNames, k)
	}
	sort.Strings(tagNames)
	for _, k := range tagNames {
		header("X-Mail-Tag", mime.QEncoding.Encode("UTF-8", oneLine(k, 0)+"="+oneLine(m.Tags[k], 0)))
	}
	header("MIME-Version", "1.0")
	header("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mw.Boundary()}))
	out.WriteString("\r\n")
	out.Write(body.Bytes())
	return out.Bytes(), nil
}

// foldHeader renders "Name: value\r\n", folding at spaces so that lines
// stay within 78 characters where the value allows it (RFC 5322 §2.2.3).
// value must not contain CR or LF.
func foldHeader(name, value string) string {
	const limit = 78
	var b strings.Builder
	line := name + ":"
	for i, word := range strings.Split(value, " ") {
		if i > 0 && len(line)+1+len(word) > limit {
			b.WriteString(line + "\r\n")
			line = " " + word
			continue
		}
		line += " " + word
	}
	b.WriteString(line + "\r\n")
	return b.String()
}

// writeAtomic writes data to dir/name through a synced temporary file in
// the same directory and a rename.
func writeAtomic(dir, name string, data []byte) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create mailbox: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*.eml")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	return nil
}
