package mail_test

import (
	"html"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/mail"
)

const (
	hostileName  = "Eve <script>alert(1)</script>\r\nBcc: victim@example.com"
	hostileTitle = `"quotes" & <script>alert(1)</script>`
	hostileBlock = "Line one & <b>bold</b>\r\n<script>alert(1)</script>\nline \"three\""
)

// assertSafe checks what holds for every template: no CR/LF in the
// subject, no live markup from user content in the HTML, and the HTML's
// text (entities decoded) still says what the user wrote.
func assertSafe(t *testing.T, m mail.Message) {
	t.Helper()
	if strings.ContainsAny(m.Subject, "\r\n") {
		t.Errorf("subject has CR/LF: %q", m.Subject)
	}
	if strings.Contains(strings.ToLower(m.HTML), "<script") {
		t.Errorf("HTML contains <script:\n%s", m.HTML)
	}
	if strings.Contains(m.HTML, "<b>bold") {
		t.Errorf("HTML contains user markup:\n%s", m.HTML)
	}
	if !strings.Contains(m.HTML, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("HTML does not show the escaped script text:\n%s", m.HTML)
	}
	if strings.Contains(m.Text, "\r") {
		t.Errorf("text part has CR: %q", m.Text)
	}
	if m.Text == "" || m.HTML == "" {
		t.Error("missing a part")
	}
}

func contains(t *testing.T, part, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s part lacks %q:\n%s", part, w, s)
		}
	}
}

func TestInviteEmail(t *testing.T) {
	m := mail.InviteEmail(mail.InviteData{
		To:            " bob@example.com ",
		InviterName:   hostileName,
		ResourceType:  "GOAL",
		ResourceTitle: hostileTitle,
		Message:       hostileBlock,
		InviteURL:     "https://app.example.com/invites/inv-456?token=a&b=c",
		ExpiresAt:     time.Date(2024, 2, 14, 10, 30, 0, 0, time.FixedZone("CET", 3600)),
	})
	assertSafe(t, m)
	if diff := cmp.Diff([]string{"bob@example.com"}, m.To); diff != "" {
		t.Errorf("To (-want +got):\n%s", diff)
	}
	wantSubject := `You have been invited to collaborate on a goal` // no user text in an invite's subject
	if m.Subject != wantSubject {
		t.Errorf("subject\n got %q\nwant %q", m.Subject, wantSubject)
	}
	// The text part is plain text: user content verbatim but flattened
	// names, the note quoted line by line.
	contains(t, "text", m.Text,
		"Eve <script>alert(1)</script> Bcc: victim@example.com invited you to collaborate on the goal \""+hostileTitle+"\".",
		"> Line one & <b>bold</b>\n> <script>alert(1)</script>\n> line \"three\"",
		"Accept the invite: https://app.example.com/invites/inv-456?token=a&b=c",
		"The invite expires on Wednesday, February 14, 2024 at 09:30 UTC.",
	)
	contains(t, "HTML", m.HTML,
		"<strong>Eve &lt;script&gt;alert(1)&lt;/script&gt; Bcc: victim@example.com</strong>",
		"&#34;quotes&#34; &amp; &lt;script&gt;",
		`href="https://app.example.com/invites/inv-456?token=a&amp;b=c"`,
		"The invite expires on Wednesday, February 14, 2024 at 09:30 UTC.",
	)
	// Decoding the entities gives back what the user wrote.
	contains(t, "decoded HTML", html.UnescapeString(m.HTML), hostileTitle, "Line one & <b>bold</b>\n<script>alert(1)</script>")
	if diff := cmp.Diff(map[string]string{"type": "invite", "resource_type": "goal"}, m.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
}

func TestInviteEmailOptionalParts(t *testing.T) {
	m := mail.InviteEmail(mail.InviteData{To: "bob@example.com", InviterName: "Alice", ResourceType: "task", ResourceTitle: "Buy shoes"})
	if m.Subject != `You have been invited to collaborate on a task` {
		t.Errorf("subject = %q", m.Subject)
	}
	for _, absent := range []string{"Their message", "expires", "Accept the invite", "\n\n\n"} {
		if strings.Contains(m.Text, absent) || strings.Contains(m.HTML, absent) {
			t.Errorf("%q present without data:\n%s\n%s", absent, m.Text, m.HTML)
		}
	}
}

func TestUnsafeURLsAreLeftOut(t *testing.T) {
	for _, u := range []string{"javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<script>alert(1)</script>", "//evil.example.com/x", "https://ok.example.com/\r\nx", "/relative"} {
		m := mail.CommentEmail(mail.CommentData{To: "bob@example.com", AuthorName: "A", ResourceType: "goal", ResourceTitle: "T", Text: "hi", CommentURL: u})
		for _, part := range []string{m.Text, m.HTML} {
			if strings.Contains(strings.ToLower(part), "javascript:") || strings.Contains(part, "data:") || strings.Contains(part, "evil.example.com") || strings.Contains(part, "href") {
				t.Errorf("URL %q leaked into the email:\n%s", u, part)
			}
		}
	}
}

func TestCommentEmail(t *testing.T) {
	d := mail.CommentData{
		To:            "bob@example.com",
		AuthorName:    hostileName,
		ResourceType:  "quest",
		ResourceTitle: hostileTitle,
		Text:          hostileBlock + " @bob",
		CommentURL:    "https://app.example.com/quests/q-1#comment-cmt-456",
	}
	m := mail.CommentEmail(d)
	assertSafe(t, m)
	if !strings.HasPrefix(m.Subject, "Eve <script>alert(1)</script> Bcc: victim@example.com commented on the quest ") || strings.Contains(m.Subject, "mentioned") {
		t.Errorf("subject = %q", m.Subject)
	}
	contains(t, "text", m.Text, "commented on the quest", "> line \"three\" @bob", "View the comment: https://app.example.com/quests/q-1#comment-cmt-456")
	contains(t, "HTML", m.HTML, "commented on the quest", `href="https://app.example.com/quests/q-1#comment-cmt-456"`)
	if m.Tags["type"] != "comment" {
		t.Errorf("tags = %v", m.Tags)
	}

	d.Mention = true
	m = mail.CommentEmail(d)
	assertSafe(t, m)
	if !strings.Contains(m.Subject, " mentioned you in a comment on the quest ") {
		t.Errorf("mention subject = %q", m.Subject)
	}
	contains(t, "text", m.Text, "mentioned you in a comment on the quest")
	contains(t, "HTML", m.HTML, "mentioned you in a comment")
	if m.Tags["type"] != "mention" {
		t.Errorf("tags = %v", m.Tags)
	}
}

func TestReactionEmail(t *testing.T) {
	m := mail.ReactionEmail(mail.ReactionData{
		To:             "bob@example.com",
		ReactorName:    hostileName,
		Emoji:          "🎉\n",
		CommentExcerpt: hostileBlock,
		ResourceTitle:  hostileTitle,
		CommentURL:     "https://app.example.com/goals/g-1#comment-cmt-1",
	})
	assertSafe(t, m)
	want := `Eve <script>alert(1)</script> Bcc: victim@example.com reacted 🎉 to your comment on ""quotes" & <script>alert(1)</script>"`
	if m.Subject != want {
		t.Errorf("subject\n got %q\nwant %q", m.Subject, want)
	}
	contains(t, "text", m.Text, "reacted 🎉 to your comment on", "> Line one & <b>bold</b>", "View the comment: https://app.example.com/goals/g-1#comment-cmt-1")
	contains(t, "HTML", m.HTML, "reacted 🎉 to your comment on", "&lt;b&gt;bold&lt;/b&gt;")
	if m.Tags["type"] != "reaction" {
		t.Errorf("tags = %v", m.Tags)
	}
}

func TestSubjectsAreBoundedAndClean(t *testing.T) {
	long := strings.Repeat("x", 500)
	m := mail.InviteEmail(mail.InviteData{To: "bob@example.com", InviterName: "Al\u202Eice\x00\x1b[31m", ResourceType: "goal", ResourceTitle: long})
	if strings.ContainsAny(m.Subject, "\u202E\x00\x1b") {
		t.Errorf("control characters in subject: %q", m.Subject)
	}
	if strings.ContainsAny(m.Text+m.HTML, "\u202E\x00\x1b") {
		t.Error("control characters in body")
	}
	if n := len([]rune(m.Subject)); n > 160 {
		t.Errorf("subject has %d runes: %q", n, m.Subject)
	}
	if strings.Contains(m.Subject, "x") || strings.Contains(m.Subject, "Al") {
		t.Errorf("user text in an invite's subject: %q", m.Subject)
	}
	c := mail.CommentEmail(mail.CommentData{To: "bob@example.com", AuthorName: "Al\u202Eice\x00", ResourceType: "goal", ResourceTitle: long, Text: "hi"})
	if strings.ContainsAny(c.Subject, "\u202E\x00\x1b") || len([]rune(c.Subject)) > 160 || !strings.Contains(c.Subject, "…") {
		t.Errorf("comment subject not cut clean: %q", c.Subject)
	}
}

func TestEmptyRecipientYieldsNoAddress(t *testing.T) {
	m := mail.ReactionEmail(mail.ReactionData{To: "  ", ReactorName: "A", Emoji: "👍", CommentExcerpt: "x", ResourceTitle: "T"})
	if m.To != nil {
		t.Errorf("To = %q, want none (senders reject it as permanent)", m.To)
	}
}
