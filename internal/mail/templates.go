package mail

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"net/url"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"
)

// InviteData is what an invite email says. All string fields except
// InviteURL are user content and are escaped/flattened by InviteEmail.
type InviteData struct {
	To            string
	InviterName   string
	ResourceType  string // goal, quest, task
	ResourceTitle string
	Message       string // the inviter's optional note, may be multi-line
	InviteURL     string // http(s) only; anything else is left out
	ExpiresAt     time.Time
}

// CommentData is what a comment (or mention) email says.
type CommentData struct {
	To            string
	AuthorName    string
	ResourceType  string
	ResourceTitle string
	Text          string // the comment, may be multi-line
	CommentURL    string
	Mention       bool // the recipient was @mentioned: "mentioned you"
}

// ReactionData is what a reaction email says.
type ReactionData struct {
	To             string
	ReactorName    string
	Emoji          string
	CommentExcerpt string
	ResourceTitle  string
	CommentURL     string
}

// Limits on user content, in runes. Subjects stay short enough for a
// mailbox list; bodies stay bounded whatever a user typed.
const (
	maxSubjectName  = 60
	maxSubjectTitle = 80
	maxName         = 100
	maxTitle        = 200
	maxKind         = 20
	maxEmoji        = 16
	maxBlock        = 4000
	maxExcerpt      = 300
)

// expiryLayout renders InviteData.ExpiresAt (always in UTC: the recipient's
// zone is unknown).
const expiryLayout = "Monday, January 2, 2006 at 15:04 UTC"

var templateFuncs = map[string]any{
	// quote prefixes every line of a block with "> " for the text part.
	"quote": func(s string) string {
		return "> " + strings.ReplaceAll(s, "\n", "\n> ")
	},
	// link pairs a URL with its label for the HTML "button" template.
	"link": func(u, label string) linkView { return linkView{URL: u, Label: label} },
}

type linkView struct{ URL, Label string }

// Templates are parsed once; a parse error is a programming error.
var (
	textTemplates = texttemplate.Must(texttemplate.New("text").Funcs(templateFuncs).Parse(textSource))
	htmlTemplates = htmltemplate.Must(htmltemplate.New("html").Funcs(templateFuncs).Parse(htmlSource))
)

// inviteView and friends hold already-sanitised values: single-line fields
// flattened, blocks normalised, URLs checked. Escaping for HTML is left to
// html/template.
type inviteView struct {
	Inviter, Kind, Title, Message, URL, Expires string
}

type commentView struct {
	Author, Kind, Title, Text, URL string
	Mention                        bool
}

type reactionView struct {
	Reactor, Emoji, Excerpt, Title, URL string
}

// InviteEmail builds the email inviting d.To to collaborate on a resource.
func InviteEmail(d InviteData) Message {
	v := inviteView{
		Inviter: orDefault(oneLine(d.InviterName, maxName), "Someone"),
		Kind:    kind(d.ResourceType),
		Title:   orDefault(oneLine(d.ResourceTitle, maxTitle), "Untitled"),
		Message: block(d.Message, maxBlock),
		URL:     safeURL(d.InviteURL),
	}
	if !d.ExpiresAt.IsZero() {
		v.Expires = d.ExpiresAt.UTC().Format(expiryLayout)
	}
	// The subject holds no text a user chose (name, title, message): an
	// invite goes to any address, and must not carry someone's words to a
	// stranger's inbox list.
	subject := fmt.Sprintf("You have been invited to collaborate on a %s", v.Kind)
	return build(d.To, subject, "invite", v, map[string]string{"type": "invite", "resource_type": v.Kind})
}

// CommentEmail builds the email telling d.To about a new comment, or that
// they were mentioned in one when d.Mention is set.
func CommentEmail(d CommentData) Message {
	v := commentView{
		Author:  orDefault(oneLine(d.AuthorName, maxName), "Someone"),
		Kind:    kind(d.ResourceType),
		Title:   orDefault(oneLine(d.ResourceTitle, maxTitle), "Untitled"),
		Text:    block(d.Text, maxBlock),
		URL:     safeURL(d.CommentURL),
		Mention: d.Mention,
	}
	author := orDefault(oneLine(d.AuthorName, maxSubjectName), "Someone")
	title := orDefault(oneLine(d.ResourceTitle, maxSubjectTitle), "Untitled")
	subject := fmt.Sprintf("%s commented on the %s \"%s\"", author, v.Kind, title)
	typ := "comment"
	if d.Mention {
		subject = fmt.Sprintf("%s mentioned you in a comment on the %s \"%s\"", author, v.Kind, title)
		typ = "mention"
	}
	return build(d.To, subject, "comment", v, map[string]string{"type": typ, "resource_type": v.Kind})
}

// ReactionEmail builds the email telling a comment's author that someone
// reacted to it.
func ReactionEmail(d ReactionData) Message {
	v := reactionView{
		Reactor: orDefault(oneLine(d.ReactorName, maxName), "Someone"),
		Emoji:   orDefault(oneLine(d.Emoji, maxEmoji), "a reaction"),
		Excerpt: block(d.CommentExcerpt, maxExcerpt),
		Title:   orDefault(oneLine(d.ResourceTitle, maxTitle), "Untitled"),
		URL:     safeURL(d.CommentURL),
	}
	subject := fmt.Sprintf("%s reacted %s to your comment on \"%s\"",
		orDefault(oneLine(d.ReactorName, maxSubjectName), "Someone"), v.Emoji,
		orDefault(oneLine(d.ResourceTitle, maxSubjectTitle), "Untitled"))
	return build(d.To, subject, "reaction", v, map[string]string{"type": "reaction"})
}

func build(to, subject, name string, view any, tags map[string]string) Message {
	var text, html bytes.Buffer
	// Execution fails only on a template bug (the views are plain strings
	// written to a bytes.Buffer); every template is exercised by the tests.
	if err := textTemplates.ExecuteTemplate(&text, name, view); err != nil {
		panic(fmt.Errorf("mail: text template %s: %w", name, err))
	}
	if err := htmlTemplates.ExecuteTemplate(&html, name, view); err != nil {
		panic(fmt.Errorf("mail: html template %s: %w", name, err))
	}
	var rcpt []string
	if t := strings.TrimSpace(to); t != "" {
		rcpt = []string{t}
	}
	return Message{
		To:      rcpt,
		Subject: oneLine(subject, 0),
		Text:    tidyText(text.String()),
		HTML:    html.String(),
		Tags:    tags,
	}
}

// tidyText trims the text part and collapses runs of blank lines (left by
// optional template sections) into one.
func tidyText(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	out := lines[:0]
	for i, l := range lines {
		if strings.TrimSpace(l) == "" && i > 0 && strings.TrimSpace(lines[i-1]) == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

func kind(resourceType string) string {
	return orDefault(strings.ToLower(oneLine(resourceType, maxKind)), "resource")
}

func block(s string, maxRunes int) string {
	s = multiLine(s)
	if utf8.RuneCountInString(s) > maxRunes {
		s = strings.TrimSpace(string([]rune(s)[:maxRunes-1])) + "…"
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// safeURL returns raw if it is an absolute http(s) URL without whitespace
// or control characters, "" otherwise (the link is then left out rather
// than offering a javascript: or data: URL).
func safeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || oneLine(raw, 0) != raw || strings.ContainsAny(raw, " \"<>") {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	return raw
}

// textSource is laid out for readability; build collapses the blank lines
// that optional sections leave behind.
const textSource = `
{{- define "footer"}}
-- 
You received this email because of your notification settings.
{{end}}

{{- define "invite"}}
Hi,

{{.Inviter}} invited you to collaborate on the {{.Kind}} "{{.Title}}".
{{if .Message}}
Their message:

{{quote .Message}}
{{end}}
{{if .URL}}Accept the invite: {{.URL}}
{{end}}
{{- if .Expires}}The invite expires on {{.Expires}}.
{{end}}
If you were not expecting this invite, you can ignore this email.

{{template "footer"}}
{{- end}}

{{- define "comment"}}
{{if .Mention}}{{.Author}} mentioned you in a comment on the {{.Kind}} "{{.Title}}":
{{else}}{{.Author}} commented on the {{.Kind}} "{{.Title}}":
{{end}}
{{if .Text}}{{quote .Text}}
{{end}}
{{if .URL}}View the comment: {{.URL}}
{{end}}
{{template "footer"}}
{{- end}}

{{- define "reaction"}}
{{.Reactor}} reacted {{.Emoji}} to your comment on "{{.Title}}":

{{if .Excerpt}}{{quote .Excerpt}}
{{end}}
{{if .URL}}View the comment: {{.URL}}
{{end}}
{{template "footer"}}
{{- end}}
`

const htmlSource = `
{{- define "head"}}<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; color: #222; line-height: 1.5; max-width: 600px; margin: 0 auto; padding: 16px;">
{{end}}

{{- define "foot"}}<hr style="border: none; border-top: 1px solid #ddd; margin-top: 24px;">
<p style="color: #888; font-size: 12px;">You received this email because of your notification settings.</p>
</body>
</html>
{{end}}

{{- define "quote"}}<blockquote style="margin: 16px 0; padding: 8px 12px; border-left: 3px solid #ccc; color: #444; white-space: pre-wrap;">{{.}}</blockquote>
{{end}}

{{- define "button"}}<p><a href="{{.URL}}" style="display: inline-block; padding: 10px 18px; background: #2563eb; color: #fff; text-decoration: none; border-radius: 6px;">{{.Label}}</a></p>
{{end}}

{{- define "invite"}}{{template "head"}}<p>Hi,</p>
<p><strong>{{.Inviter}}</strong> invited you to collaborate on the {{.Kind}} <strong>{{.Title}}</strong>.</p>
{{if .Message}}<p>Their message:</p>
{{template "quote" .Message}}{{end -}}
{{if .URL}}{{template "button" (link .URL "Accept the invite")}}{{end -}}
{{if .Expires}}<p style="color: #555;">The invite expires on {{.Expires}}.</p>
{{end -}}
<p style="color: #555;">If you were not expecting this invite, you can ignore this email.</p>
{{template "foot"}}{{end}}

{{- define "comment"}}{{template "head"}}<p><strong>{{.Author}}</strong> {{if .Mention}}mentioned you in a comment{{else}}commented{{end}} on the {{.Kind}} <strong>{{.Title}}</strong>:</p>
{{template "quote" .Text}}
{{- if .URL}}{{template "button" (link .URL "View the comment")}}{{end -}}
{{template "foot"}}{{end}}

{{- define "reaction"}}{{template "head"}}<p><strong>{{.Reactor}}</strong> reacted {{.Emoji}} to your comment on <strong>{{.Title}}</strong>:</p>
{{template "quote" .Excerpt}}
{{- if .URL}}{{template "button" (link .URL "View the comment")}}{{end -}}
{{template "foot"}}{{end}}
`
