package notify_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// mailbox is a mail.Sender that records what it is asked to send and can
// fail chosen sends (our own interface: SES itself is tested in
// internal/mail against its wire protocol).
type mailbox struct {
	mu       sync.Mutex
	sent     []mail.Message
	failLeft map[string]int // recipient → failures still to give
}

func (m *mailbox) Send(_ context.Context, msg mail.Message) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failLeft[msg.To[0]] > 0 {
		m.failLeft[msg.To[0]]--
		return "", fmt.Errorf("injected send failure to %s", msg.To[0])
	}
	m.sent = append(m.sent, msg)
	return fmt.Sprintf("msg-%d", len(m.sent)), nil
}

// distinct lists "to | subject" of the sends, each idempotency key once,
// sorted, and counts the sends again of a key already sent: what a crash
// between a send and its completion record repeats (SES takes no key).
func (m *mailbox) distinct() (sends []string, resent int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, s := range m.sent {
		if seen[s.IdempotencyKey] {
			resent++
			continue
		}
		seen[s.IdempotencyKey] = true
		sends = append(sends, s.To[0]+" | "+s.Subject)
	}
	sort.Strings(sends)
	return sends, resent
}

// delivered lists "to | subject" of every send, sorted; duplicates stay.
func (m *mailbox) delivered() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.sent {
		out = append(out, s.To[0]+" | "+s.Subject)
	}
	sort.Strings(out)
	return out
}

// collabScenario writes the collaboration scenario through the store.
func collabScenario(t *testing.T, st *store.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	tick := func() time.Time { t0 = t0.Add(time.Second); return t0 }
	ts := func() string { return store.Timestamp(tick()) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []collab.Profile{
		{UserID: "alice", Name: "Alice", Email: "alice@example.com"},
		{UserID: "bob", Name: "Bob", Email: "bob@example.com"},
		{UserID: "carol", Name: "Carol", Email: "carol@example.com"},
	} {
		p.UpdatedAt = ts()
		_, err := st.Collab.PutProfile(ctx, p)
		must(err)
	}
	must(st.Collab.PutPreferences(ctx, collab.Preferences{UserID: "carol", EmailOnInvite: true, EmailOnComment: true, EmailOnMention: true}))
	must(st.Collab.PutPreferences(ctx, collab.Preferences{UserID: "bob", EmailOnInvite: true, EmailOnMention: true, EmailOnReaction: true}))
	res := collab.Resource{ResourceType: collab.Goal, ResourceID: "g1", Title: "Run a marathon", OwnerID: "alice", CreatedAt: ts()}
	must(st.Collab.CreateResource(ctx, res))
	invite := func(id, invitee, email string) collab.Invite {
		now := tick()
		inv := collab.Invite{InviteID: id, InviterID: "alice", InviteeID: invitee, InviteeEmail: email, ResourceType: collab.Goal, ResourceID: "g1",
			Status: collab.InvitePending, Message: "Join me &lt;3", CreatedAt: store.Timestamp(now), UpdatedAt: store.Timestamp(now),
			ExpiresAt: store.Timestamp(now.Add(30 * 24 * time.Hour)), TTL: now.Add(30 * 24 * time.Hour).Unix()}
		must(st.Collab.CreateInvite(ctx, inv))
		return inv
	}
	ib := invite("i-bob", "bob", "")
	ic := invite("i-carol", "carol", "")
	invite("i-dave", "", "dave@example.com")
	for _, x := range []struct {
		inv collab.Invite
		by  string
	}{{ib, "bob"}, {ic, "carol"}} {
		_, _, err := st.Collab.RespondInvite(ctx, x.inv, true, x.by, tick())
		must(err)
	}
	c1 := collab.Comment{CommentID: "c1", ResourceType: collab.Goal, ResourceID: "g1", UserID: "bob",
		Text: "Great start! @carol what do you think?", Mentions: []string{"carol"}, CreatedAt: ts()}
	must(st.Collab.CreateComment(ctx, c1))
	must(st.Collab.CreateComment(ctx, collab.Comment{CommentID: "c2", ResourceType: collab.Goal, ResourceID: "g1", ParentID: "c1", UserID: "alice", Text: "Thanks &amp; welcome", CreatedAt: ts()}))
	for _, r := range []collab.Reaction{{UserID: "carol", Emoji: "👍"}, {UserID: "alice", Emoji: "🎉"}, {UserID: "bob", Emoji: "👍"}} {
		r.CommentID, r.ResourceType, r.ResourceID, r.CreatedAt = "c1", collab.Goal, "g1", ts()
		_, err := st.Collab.AddReaction(ctx, r)
		must(err)
	}
	must(st.Collab.RemoveReaction(ctx, "c1", "alice", "🎉"))
}

// Each expected e-mail goes out exactly once, and the in-app notifications
// are the same, however the stream is delivered: duplicates, random
// batches, shuffled items, injected handler failures — and failed sends.
// The one exception is the window no e-mail API closes: a crash after SES
// took a message and before its completion record (between two requests:
// another group's request of the call can be the one the crash follows)
// sends it again on the retry. Only a schedule that crashed can resend,
// and never more e-mails than it crashed calls.
func TestCollaborationEmailsExactlyOnce(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	collabScenario(t, st)
	ctx := context.Background()
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}

	box := &mailbox{}
	var mu sync.Mutex
	resent, runs := 0, 0 // e-mails sent again, over all deliveries
	var resentErrs []string
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects: &notify.Effects{Store: st, Mailer: box, BaseURL: "https://app.test",
			Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) }},
	}
	ts := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	target := replay.Target{
		Handler: n.Handle,
		Reset: func(ctx context.Context) error {
			box.mu.Lock()
			box.sent = nil
			// Every schedule also sees a send to carol fail twice.
			box.failLeft = map[string]int{"carol@example.com": 2}
			box.mu.Unlock()
			return ts.Reset(ctx)
		},
		State: func(ctx context.Context) (any, error) {
			items, err := ts.State(ctx)
			if err != nil {
				return nil, err
			}
			var notes []string
			for _, it := range items.([]map[string]any) {
				if it["itemType"] == store.TypeNotification {
					notes = append(notes, fmt.Sprintf("%s %s %s by %s", it["userId"], it["type"], it["SK"], it["actorId"]))
				}
			}
			sends, again := box.distinct()
			// An e-mail is sent again only after a crash between its send
			// and the record of it: at most one per crash of this delivery.
			mu.Lock()
			if crashes := replay.Delivered(ctx).Stats.Crashes; again > crashes {
				resentErrs = append(resentErrs, fmt.Sprintf("a delivery sent %d e-mails again with %d crashes", again, crashes))
			}
			resent, runs = resent+again, runs+1
			mu.Unlock()
			return map[string]any{"emails": sends, "notifications": notes}, nil
		},
	}
	rep, err := replay.Check(ctx, ev, target, slices.Concat(replay.Schedules(404, schedules(10, 4)), replay.Parallel(replay.Schedules(405, schedules(10, 4)), 10),
		// as a Kinesis data stream for DynamoDB delivers: records repeated
		// and one item's out of order
		replay.KinesisSchedules(406, schedules(4, 2)), replay.Parallel(replay.KinesisSchedules(407, schedules(4, 2)), 10)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	for _, e := range resentErrs {
		t.Error(e)
	}
	t.Logf("e-mails sent again after a crash between the send and its completion: %d in %d deliveries", resent, runs)
	base := rep.Baseline.(map[string]any)
	want := []string{
		`bob@example.com | Alice reacted 🎉 to your comment on "Run a marathon"`, // removed later, but it happened
		`bob@example.com | Carol reacted 👍 to your comment on "Run a marathon"`,
		`bob@example.com | You have been invited to collaborate on a goal`,
		`carol@example.com | Alice commented on the goal "Run a marathon"`,
		`carol@example.com | Bob mentioned you in a comment on the goal "Run a marathon"`,
		`carol@example.com | You have been invited to collaborate on a goal`,
		`dave@example.com | You have been invited to collaborate on a goal`,
	}
	if diff := cmp.Diff(want, base["emails"]); diff != "" {
		t.Errorf("e-mails sent (-want +got):\n%s", diff)
	}
	// In-app: bob's and carol's invites; alice (comment) and carol (mention)
	// for c1; bob and carol (comment) for c2; bob for carol's and alice's
	// reactions (bob's own reaction on his comment tells nobody) = 8.
	if notes := base["notifications"].([]string); len(notes) != 8 {
		t.Errorf("%d in-app notifications, want 8:\n%s", len(notes), strings.Join(notes, "\n"))
	}
}

// An invitee who turned invite e-mails off gets the in-app notification
// only; an invite to an address only is e-mailed there.
func TestInviteEmailPreferences(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.Collab.PutProfile(ctx, collab.Profile{UserID: "erin", Name: "Erin", Email: "erin@example.com", UpdatedAt: store.Timestamp(now)})
	must(err)
	must(st.Collab.PutPreferences(ctx, collab.Preferences{UserID: "erin"})) // everything off
	must(st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Task, ResourceID: "t1", Title: "Paint", OwnerID: "alice", CreatedAt: store.Timestamp(now)}))
	for _, inv := range []collab.Invite{
		{InviteID: "i1", InviteeID: "erin"},
		{InviteID: "i2", InviteeEmail: "frank@example.com"},
	} {
		inv.InviterID, inv.ResourceType, inv.ResourceID, inv.Status = "alice", collab.Task, "t1", collab.InvitePending
		inv.CreatedAt, inv.UpdatedAt, inv.ExpiresAt = store.Timestamp(now), store.Timestamp(now), store.Timestamp(now.Add(24*time.Hour))
		must(st.Collab.CreateInvite(ctx, inv))
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	must(err)
	box := &mailbox{}
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects:   &notify.Effects{Store: st, Mailer: box, Now: func() time.Time { return now }},
	}
	resp, err := n.Handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle: %v %+v", err, resp)
	}
	if got := box.delivered(); len(got) != 1 || !strings.HasPrefix(got[0], "frank@example.com | ") {
		t.Fatalf("e-mails %v, want only frank's", got)
	}
	notes, _, err := st.Collab.ListNotifications(ctx, "erin", now, store.Page{})
	must(err)
	if len(notes) != 1 || notes[0].Type != collab.NotifyInvite || notes[0].InviteID != "i1" {
		t.Fatalf("erin's notifications %+v", notes)
	}
}

// The recipients of a comment are the collaborators the comment's own time
// defines: one who joined after it — whatever the notifier's lag — gets
// neither its notification nor its mention e-mail; one who had joined
// before it gets both.
func TestCommentRecipientsAsOfTheComment(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	t0 := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	tick := func() time.Time { t0 = t0.Add(time.Second); return t0 }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"alice", "bob", "erin"} {
		_, err := st.Collab.PutProfile(ctx, collab.Profile{UserID: u, Name: strings.ToUpper(u[:1]) + u[1:], Email: u + "@example.com", UpdatedAt: store.Timestamp(tick())})
		must(err)
	}
	must(st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Quest, ResourceID: "q1", Title: "Climb", OwnerID: "alice", CreatedAt: store.Timestamp(tick())}))
	join := func(user string) {
		now := tick()
		inv := collab.Invite{InviteID: "i-" + user, InviterID: "alice", InviteeID: user, ResourceType: collab.Quest, ResourceID: "q1",
			Status: collab.InvitePending, CreatedAt: store.Timestamp(now), UpdatedAt: store.Timestamp(now),
			ExpiresAt: store.Timestamp(now.Add(24 * time.Hour)), TTL: now.Add(24 * time.Hour).Unix()}
		must(st.Collab.CreateInvite(ctx, inv))
		_, _, err := st.Collab.RespondInvite(ctx, inv, true, user, tick())
		must(err)
	}
	join("bob")
	must(st.Collab.CreateComment(ctx, collab.Comment{CommentID: "c1", ResourceType: collab.Quest, ResourceID: "q1", UserID: "alice",
		Text: "@bob @erin ready?", Mentions: []string{"bob", "erin"}, CreatedAt: store.Timestamp(tick())}))
	join("erin") // after the comment: the notifier sees her as a collaborator, the comment's time does not

	ev, err := replay.Capture(ctx, c.Streams, arn)
	must(err)
	box := &mailbox{}
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects:   &notify.Effects{Store: st, Mailer: box, Now: func() time.Time { return t0 }},
	}
	resp, err := n.Handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle: %v %+v", err, resp)
	}
	var mentions []string
	for _, m := range box.delivered() {
		if strings.Contains(m, "mentioned you") {
			mentions = append(mentions, m)
		}
	}
	if diff := cmp.Diff([]string{`bob@example.com | Alice mentioned you in a comment on the quest "Climb"`}, mentions); diff != "" {
		t.Errorf("mention e-mails (-want +got):\n%s", diff)
	}
	for user, want := range map[string]int{"bob": 1, "erin": 0} {
		notes, _, err := st.Collab.ListNotifications(ctx, user, t0, store.Page{})
		must(err)
		got := 0
		for _, nt := range notes {
			if nt.CommentID == "c1" {
				got++
			}
		}
		if got != want {
			t.Errorf("%s has %d notifications of the comment, want %d", user, got, want)
		}
	}
}
