package mail

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message is one email, ready to send: what the recipient sees plus the
// metadata the sending service keeps.
type Message struct {
	// To are the recipients' addresses (RFC 5322 addr-spec or
	// "Name <addr>"). At least one is required.
	To []string
	// Subject is a single line; senders strip CR/LF defensively.
	Subject string
	// Text is the text/plain part.
	Text string
	// HTML is the text/html part.
	HTML string
	// Tags are name/value pairs the sending service records with the
	// message (SES message tags: used for event publishing and metrics).
	// Senders may rewrite characters the service does not accept.
	Tags map[string]string
	// IdempotencyKey identifies the logical send (e.g. source change +
	// recipient). It is informational: senders put it in an
	// X-Idempotency-Key header and a tag so that a recipient-side system
	// can dedupe. It does not dedupe anything here; the caller's
	// idempotency record does that.
	IdempotencyKey string
}

// Sender delivers a Message and returns the identifier the delivery service
// assigned to it.
type Sender interface {
	Send(ctx context.Context, m Message) (messageID string, err error)
}

// IdempotencyHeader is the header carrying Message.IdempotencyKey.
const IdempotencyHeader = "X-Idempotency-Key"

// IdempotencyTag is the tag name carrying Message.IdempotencyKey (sanitized
// to the characters SES accepts in tag values).
const IdempotencyTag = "idempotency_key"

// PermanentError reports a send that will fail the same way however often
// it is retried (message rejected, sender not verified, account suspended,
// invalid input…). The caller should dead-letter it rather than retry.
// Any other error from a Sender is worth retrying later.
type PermanentError struct {
	// Code is the service's error code when there is one
	// (e.g. "MessageRejected"), "" for local validation failures.
	Code string
	Err  error
}

func (e *PermanentError) Error() string {
	if e.Code != "" {
		return "permanent mail failure (" + e.Code + "): " + e.Err.Error()
	}
	return "permanent mail failure: " + e.Err.Error()
}

func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err (or an error it wraps) is a
// *PermanentError.
func IsPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe)
}

// validate checks what every sender needs; failures are permanent.
func (m Message) validate() error {
	if len(m.To) == 0 {
		return &PermanentError{Err: errors.New("message has no recipients")}
	}
	for _, to := range m.To {
		if strings.TrimSpace(to) == "" {
			return &PermanentError{Err: errors.New("message has an empty recipient")}
		}
		if strings.ContainsAny(to, "\r\n") {
			return &PermanentError{Err: errors.New("recipient contains a line break")}
		}
	}
	if strings.TrimSpace(m.Subject) == "" {
		return &PermanentError{Err: errors.New("message has no subject")}
	}
	if m.Text == "" && m.HTML == "" {
		return &PermanentError{Err: errors.New("message has no body")}
	}
	return nil
}

// oneLine makes user content safe for a single line (subject, header,
// name): control characters, line breaks and bidirectional overrides become
// spaces, runs of spaces collapse, and the result is cut to maxRunes (with
// an ellipsis) when maxRunes > 0.
func oneLine(s string, maxRunes int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) || isBidiControl(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	out := b.String()
	if maxRunes > 0 && utf8.RuneCountInString(out) > maxRunes {
		rs := []rune(out)
		out = strings.TrimRight(string(rs[:maxRunes-1]), " ") + "…"
	}
	return out
}

// multiLine makes user content safe for a text block: line breaks are
// normalised to "\n", tabs kept, every other control character and
// bidirectional override removed, trailing blank lines dropped.
func multiLine(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError || unicode.IsControl(r) || isBidiControl(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}

// isBidiControl reports the Unicode bidirectional embedding, override and
// isolate characters, which can make displayed text differ from its
// logical order (spoofed links, reversed names).
func isBidiControl(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069') || r == '\u200E' || r == '\u200F' || r == '\u061C'
}

// formatAddress parses an RFC 5322 address ("addr" or "Name <addr>") and
// renders it for a header or an API: the bare address when there is no
// display name, otherwise the name quoted or RFC 2047-encoded (SES requires
// encoded words for non-ASCII display names).
func formatAddress(s string) (string, error) {
	a, err := netmail.ParseAddress(s)
	if err != nil {
		return "", &PermanentError{Err: fmt.Errorf("address %q: %w", s, err)}
	}
	if a.Name == "" {
		return a.Address, nil
	}
	return a.String(), nil
}
