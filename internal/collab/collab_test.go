package collab_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
)

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		text, author string
		want         []string
	}{
		{"Great progress! @user-123 what do you think?", "u", []string{"user-123"}},
		{"@a and @b, and @a again", "x", []string{"a", "b"}},
		{"mail me at bob@example.com", "x", nil},
		{"@me talking to myself @you.", "me", []string{"you"}},
		{"(@x) [@y]:", "", []string{"x", "y"}},
		{"no mentions @ all", "", nil},
	} {
		if diff := cmp.Diff(tc.want, collab.Mentions(tc.text, tc.author)); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", tc.text, diff)
		}
	}
}

func TestSanitizeText(t *testing.T) {
	got := collab.SanitizeText("hi <script>alert('x')</script> & \"q\"\x00\x07\nnext\tline")
	if strings.Contains(got, "<") || strings.Contains(got, ">") || strings.ContainsAny(got, "\x00\x07") {
		t.Fatalf("unsafe: %q", got)
	}
	if want := "hi &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &#34;q&#34;\nnext\tline"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCheckTextAndEmoji(t *testing.T) {
	if collab.CheckText(strings.Repeat("é", 2000)) != nil || collab.CheckText(strings.Repeat("é", 2001)) == nil || collab.CheckText("  \n") == nil {
		t.Error("text limits")
	}
	for _, e := range []string{"👍", "❤️", "🎉", "👍🏽", "👨‍👩‍👧"} {
		if !collab.ValidEmoji(e) {
			t.Errorf("%q should be an emoji", e)
		}
	}
	for _, e := range []string{"", "a", "1", "#", "👍 ", ":+1:", "👍👍👍👍👍👍👍👍👍"} {
		if collab.ValidEmoji(e) {
			t.Errorf("%q should not be an emoji", e)
		}
	}
}

func TestInviteStatus(t *testing.T) {
	inv := collab.Invite{Status: collab.InvitePending, ExpiresAt: "2026-02-01T00:00:00.000Z"}
	if inv.EffectiveStatus("2026-01-31T23:59:59.999Z") != collab.InvitePending || inv.CanRespond("2026-01-15T00:00:00.000Z") != nil {
		t.Error("pending before expiry")
	}
	if inv.EffectiveStatus("2026-02-01T00:00:00.000Z") != collab.InviteExpired {
		t.Error("expired at expiry")
	}
	if err := inv.CanRespond("2026-03-01T00:00:00.000Z"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	inv.Status = collab.InviteAccepted
	if err := inv.CanRespond("2026-01-01T00:00:00.000Z"); err == nil || !strings.Contains(err.Error(), "already accepted") {
		t.Errorf("accepted: %v", err)
	}
	if collab.DefaultPreferences("u") != (collab.Preferences{UserID: "u", EmailOnInvite: true, EmailOnMention: true}) {
		t.Error("defaults")
	}
}
