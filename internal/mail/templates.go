package mail

import (
	"fmt"
	"net/url"
	"strings"
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

// inviteView and friends hold already-sanitised values: single-line fields
// flattened, blocks normalised, URLs checked. render.go escapes them for
// HTML.
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
	return build(d.To, subject, v, map[string]string{"type": "invite", "resource_type": v.Kind})
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
	return build(d.To, subject, v, map[string]string{"type": typ, "resource_type": v.Kind})
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
	return build(d.To, subject, v, map[string]string{"type": "reaction"})
}

func build(to, subject string, r renderer, tags map[string]string) Message {
	var rcpt []string
	if t := strings.TrimSpace(to); t != "" {
		rcpt = []string{t}
	}
	return Message{
		To:      rcpt,
		Subject: oneLine(subject, 0),
		Text:    tidyText(r.text()),
		HTML:    r.html(),
		Tags:    tags,
	}
}

// tidyText trims the text part and collapses runs of blank lines (left by
// optional sections) into one.
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
