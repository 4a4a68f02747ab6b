package mail

import (
	"fmt"
	"strings"
)

// The e-mails' bodies, written out in Go rather than with text/template and
// html/template: those reach methods by name through reflection, which
// keeps every exported method of every linked type in the binary (the
// notifier was 19 MB stripped). TestRenderMatchesTemplates checks the
// output against the original templates, byte for byte, escaping included.

// renderer is a view that renders both parts of its e-mail.
type renderer interface {
	text() string
	html() string
}

const (
	textFooter = "-- \nYou received this email because of your notification settings.\n"
	htmlHead   = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; color: #222; line-height: 1.5; max-width: 600px; margin: 0 auto; padding: 16px;">
`
	htmlFoot = `<hr style="border: none; border-top: 1px solid #ddd; margin-top: 24px;">
<p style="color: #888; font-size: 12px;">You received this email because of your notification settings.</p>
</body>
</html>
`
)

// quote prefixes every line of a block with "> " for the text part.
func quote(s string) string { return "> " + strings.ReplaceAll(s, "\n", "\n> ") }

func (v inviteView) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Hi,\n\n%s invited you to collaborate on the %s \"%s\".\n", v.Inviter, v.Kind, v.Title)
	if v.Message != "" {
		b.WriteString("\nTheir message:\n\n" + quote(v.Message) + "\n")
	}
	b.WriteString("\n")
	if v.URL != "" {
		b.WriteString("Accept the invite: " + v.URL + "\n")
	}
	if v.Expires != "" {
		b.WriteString("The invite expires on " + v.Expires + ".\n")
	}
	b.WriteString("\nIf you were not expecting this invite, you can ignore this email.\n\n" + textFooter)
	return b.String()
}

func (v inviteView) html() string {
	var b strings.Builder
	b.WriteString(htmlHead + "<p>Hi,</p>\n")
	fmt.Fprintf(&b, "<p><strong>%s</strong> invited you to collaborate on the %s <strong>%s</strong>.</p>\n", escape(v.Inviter), escape(v.Kind), escape(v.Title))
	if v.Message != "" {
		b.WriteString("<p>Their message:</p>\n" + htmlQuote(v.Message))
	}
	if v.URL != "" {
		b.WriteString(button(v.URL, "Accept the invite"))
	}
	if v.Expires != "" {
		b.WriteString(`<p style="color: #555;">The invite expires on ` + escape(v.Expires) + ".</p>\n")
	}
	b.WriteString(`<p style="color: #555;">If you were not expecting this invite, you can ignore this email.</p>` + "\n" + htmlFoot)
	return b.String()
}

func (v commentView) text() string {
	head := fmt.Sprintf("%s commented on the %s \"%s\":\n\n", v.Author, v.Kind, v.Title)
	if v.Mention {
		head = fmt.Sprintf("%s mentioned you in a comment on the %s \"%s\":\n\n", v.Author, v.Kind, v.Title)
	}
	return head + commentTail(v.Text, v.URL)
}

func (v commentView) html() string {
	what := "commented"
	if v.Mention {
		what = "mentioned you in a comment"
	}
	return fmt.Sprintf("%s<p><strong>%s</strong> %s on the %s <strong>%s</strong>:</p>\n", htmlHead, escape(v.Author), what, escape(v.Kind), escape(v.Title)) +
		commentTailHTML(v.Text, v.URL)
}

func (v reactionView) text() string {
	return fmt.Sprintf("%s reacted %s to your comment on \"%s\":\n\n", v.Reactor, v.Emoji, v.Title) + commentTail(v.Excerpt, v.URL)
}

func (v reactionView) html() string {
	return fmt.Sprintf("%s<p><strong>%s</strong> reacted %s to your comment on <strong>%s</strong>:</p>\n", htmlHead, escape(v.Reactor), escape(v.Emoji), escape(v.Title)) +
		commentTailHTML(v.Excerpt, v.URL)
}

// commentTail ends the text part of a comment's and a reaction's e-mail:
// the comment quoted, its link, the footer.
func commentTail(text, url string) string {
	var b strings.Builder
	if text != "" {
		b.WriteString(quote(text) + "\n")
	}
	b.WriteString("\n")
	if url != "" {
		b.WriteString("View the comment: " + url + "\n")
	}
	b.WriteString("\n" + textFooter)
	return b.String()
}

// commentTailHTML is commentTail for the HTML part.
func commentTailHTML(text, url string) string {
	s := htmlQuote(text)
	if url != "" {
		s += button(url, "View the comment")
	}
	return s + htmlFoot
}

func htmlQuote(s string) string {
	return `<blockquote style="margin: 16px 0; padding: 8px 12px; border-left: 3px solid #ccc; color: #444; white-space: pre-wrap;">` + escape(s) + "</blockquote>\n"
}

// button is a link styled as a button; u is a checked http(s) URL
// (safeURL).
func button(u, label string) string {
	return `<p><a href="` + escape(normalizeURL(u)) + `" style="display: inline-block; padding: 10px 18px; background: #2563eb; color: #fff; text-decoration: none; border-radius: 6px;">` + escape(label) + "</a></p>\n"
}

// escape is html/template's escaping of text and quoted attribute values.
var escape = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"&", "&amp;",
	"'", "&#39;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
).Replace

// normalizeURL is html/template's normalisation of a URL in an attribute:
// every byte outside the unreserved and reserved characters is
// percent-encoded, and so is a '%' that does not start an escape.
func normalizeURL(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("!#$&*+,/:;=?@[]-._~", c) >= 0,
			c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
