package mail

// The templates the e-mails were first written with, kept as the reference
// render.go must match byte for byte (TestRenderMatchesTemplates): html/
// template's escaping is the one to equal. They live in a test because
// text/template's reflection (MethodByName) stops the linker from dropping
// unused methods, which made the notifier's binary 19 MB.

import (
	"bytes"
	htmltemplate "html/template"
	"strings"
	"testing"
	texttemplate "text/template"

	"pgregory.net/rapid"
)

var templateFuncs = map[string]any{
	// quote prefixes every line of a block with "> " for the text part.
	"quote": func(s string) string {
		return "> " + strings.ReplaceAll(s, "\n", "\n> ")
	},
	// link pairs a URL with its label for the HTML "button" template.
	"link": func(u, label string) linkView { return linkView{URL: u, Label: label} },
}

type linkView struct{ URL, Label string }

var (
	textTemplates = texttemplate.Must(texttemplate.New("text").Funcs(templateFuncs).Parse(textSource))
	htmlTemplates = htmltemplate.Must(htmltemplate.New("html").Funcs(templateFuncs).Parse(htmlSource))
)

func renderTemplates(name string, view any) (text, html string) {
	var t, h bytes.Buffer
	if err := textTemplates.ExecuteTemplate(&t, name, view); err != nil {
		panic(err)
	}
	if err := htmlTemplates.ExecuteTemplate(&h, name, view); err != nil {
		panic(err)
	}
	return tidyText(t.String()), h.String()
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

// TestRenderMatchesTemplates renders random views, hostile text and URLs
// included, both ways.
func TestRenderMatchesTemplates(t *testing.T) {
	text := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "a & b", `<script>alert('x')</script>`, "line\nline", "+\x00\"'<>"}))
	url := rapid.OneOf(rapid.SampledFrom([]string{"", "https://app.example.com/invites/inv-456?token=a&b=c", "http://x.example/q?a=1+2&b='3'#c(d)", "https://é.example/ü?%41"}),
		rapid.Map(rapid.String(), func(s string) string { return safeURL("https://app.example.com/" + s) }))
	check := func(t *rapid.T, name string, v renderer) {
		wantText, wantHTML := renderTemplates(name, v)
		if got := tidyText(v.text()); got != wantText {
			t.Fatalf("%s text\n got %q\nwant %q", name, got, wantText)
		}
		if got := v.html(); got != wantHTML {
			t.Fatalf("%s html\n got %q\nwant %q", name, got, wantHTML)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		check(t, "invite", inviteView{Inviter: text.Draw(t, "inviter"), Kind: text.Draw(t, "kind"), Title: text.Draw(t, "title"),
			Message: text.Draw(t, "message"), URL: url.Draw(t, "url"), Expires: text.Draw(t, "expires")})
		check(t, "comment", commentView{Author: text.Draw(t, "author"), Kind: text.Draw(t, "kind"), Title: text.Draw(t, "title"),
			Text: text.Draw(t, "text"), URL: url.Draw(t, "url"), Mention: rapid.Bool().Draw(t, "mention")})
		check(t, "reaction", reactionView{Reactor: text.Draw(t, "reactor"), Emoji: text.Draw(t, "emoji"), Excerpt: text.Draw(t, "excerpt"),
			Title: text.Draw(t, "title"), URL: url.Draw(t, "url")})
	})
}
