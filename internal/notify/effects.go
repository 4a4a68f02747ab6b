package notify

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"slices"
	"time"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Effects carries out the collaboration side effects of a change: e-mails
// through a mail.Sender and in-app notifications (DESIGN.md §4).
//
// Delivery: at most one e-mail per (source change, recipient). Each send is
// guarded by an idempotency record keyed by the change's stream event id and
// the recipient (in progress with a hold, then completed): a redelivered
// record, a retried batch or a replay finds the record completed and sends
// nothing; a worker that crashed mid-send loses its hold after Hold, and the
// send is retried then (the one window in which a mail can go out twice, as
// with Lambda Powertools). A failed send releases the record and fails the
// record, so the event source mapping retries it. In-app notifications are
// keyed by the change and the recipient, so writing them again is harmless.
type Effects struct {
	Store  *store.Store
	Mailer mail.Sender
	// BaseURL prefixes the links in e-mails (e.g. https://app.example.com).
	BaseURL string
	Now     func() time.Time
	Logger  *slog.Logger
	// Hold is how long a send may take before another worker may retry it
	// (default 2 minutes); Keep how long idempotency records stay (7 days).
	Hold, Keep time.Duration
}

// delivery is one recipient's notification of one change.
type delivery struct {
	key     string // idempotency key
	note    *collab.Notification
	message *mail.Message // nil: no e-mail (opted out or no address)
}

// Apply carries out a change's side effects.
func (e *Effects) Apply(ctx context.Context, c stream.Change) error {
	if c.Derived() || c.Kind != stream.Insert {
		return nil
	}
	var ds []delivery
	var err error
	switch c.ItemType() {
	case store.TypeInvite:
		ds, err = e.invite(ctx, c)
	case store.TypeComment:
		ds, err = e.comment(ctx, c)
	case store.TypeReaction:
		ds, err = e.reaction(ctx, c)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	var notes []collab.Notification
	for _, d := range ds {
		if d.note != nil {
			notes = append(notes, *d.note)
		}
	}
	if len(notes) > 0 {
		if err := e.Store.PutNotifications(ctx, notes); err != nil {
			return err
		}
	}
	var failed []error
	for _, d := range ds {
		if d.message != nil {
			if err := e.sendOnce(ctx, d.key, *d.message); err != nil {
				failed = append(failed, err)
			}
		}
	}
	return errors.Join(failed...)
}

// errBusy: another worker holds the send; the record is retried later.
var errBusy = errors.New("notify: another worker is sending this e-mail")

func (e *Effects) sendOnce(ctx context.Context, key string, m mail.Message) error {
	hold, keep := e.Hold, e.Keep
	if hold == 0 {
		hold = 2 * time.Minute
	}
	if keep == 0 {
		keep = 7 * 24 * time.Hour
	}
	st, err := e.Store.BeginOnce(ctx, key, e.Now(), hold, keep)
	switch {
	case err != nil:
		return err
	case st == store.OnceDone:
		return nil
	case st == store.OnceBusy:
		return fmt.Errorf("%w (%s)", errBusy, key)
	}
	m.IdempotencyKey = key
	id, err := e.Mailer.Send(ctx, m)
	if err != nil {
		if aerr := e.Store.AbortOnce(context.WithoutCancel(ctx), key); aerr != nil {
			return errors.Join(err, aerr)
		}
		return fmt.Errorf("notify: send %s: %w", key, err)
	}
	return e.Store.EndOnce(context.WithoutCancel(ctx), key, id)
}

// people holds the profiles and preferences a change needs, read with one
// BatchGetItem (not a round trip per recipient).
type people struct {
	profiles map[string]collab.Profile
	prefs    map[string]collab.Preferences
}

func (e *Effects) people(ctx context.Context, userIDs ...string) (*people, error) {
	profiles, prefs, err := e.Store.People(ctx, userIDs)
	return &people{profiles: profiles, prefs: prefs}, err
}

// profile returns a user's profile; without one, the user id is the name.
func (p *people) profile(userID string) collab.Profile {
	pr, ok := p.profiles[userID]
	if !ok {
		pr = collab.Profile{UserID: userID}
	}
	if pr.Name == "" {
		pr.Name = userID
	}
	return pr
}

// address returns where to e-mail a user who opted in, "" for no e-mail.
func (p *people) address(userID string, optedIn func(collab.Preferences) bool) string {
	prefs, ok := p.prefs[userID]
	if !ok {
		prefs = collab.DefaultPreferences(userID)
	}
	if !optedIn(prefs) {
		return ""
	}
	return p.profile(userID).Email
}

func note(userID, typ, id, at, actor string, t collab.ResourceType, resID string) *collab.Notification {
	n := &collab.Notification{UserID: userID, NotificationID: id, Type: typ, CreatedAt: at, ActorID: actor, ResourceType: t, ResourceID: resID}
	if ts, err := store.ParseTimestamp(at); err == nil {
		n.TTL = ts.Add(collab.NotificationTTL).Unix()
	}
	return n
}

func (e *Effects) url(path string) string { return e.BaseURL + path }

func (e *Effects) invite(ctx context.Context, c stream.Change) ([]delivery, error) {
	var inv collab.Invite
	if err := c.DecodeNew(&inv); err != nil {
		return nil, err
	}
	res, err := e.resource(ctx, inv.ResourceType, inv.ResourceID)
	if err != nil {
		return nil, err
	}
	ppl, err := e.people(ctx, inv.InviterID, inv.InviteeID)
	if err != nil {
		return nil, err
	}
	inviter := ppl.profile(inv.InviterID)
	// To a user: in-app, and an e-mail if they want invite e-mails (to the
	// address on the invite, else their profile's). To an address only: the
	// e-mail (there are no preferences to ask).
	d := delivery{key: "invite#" + c.EventID + "#" + inv.InviteeEmail}
	to := inv.InviteeEmail
	if inv.InviteeID != "" {
		d.key = "invite#" + c.EventID + "#" + inv.InviteeID
		d.note = note(inv.InviteeID, collab.NotifyInvite, c.EventID, inv.CreatedAt, inv.InviterID, inv.ResourceType, inv.ResourceID)
		d.note.InviteID = inv.InviteID
		switch {
		case !ppl.prefs[inv.InviteeID].EmailOnInvite:
			to = "" // opted out
		case to == "":
			to = ppl.profile(inv.InviteeID).Email
		}
	}
	if to != "" {
		exp, _ := store.ParseTimestamp(inv.ExpiresAt)
		m := mail.InviteEmail(mail.InviteData{
			To: to, InviterName: inviter.Name, ResourceType: string(inv.ResourceType), ResourceTitle: res.Title,
			Message: html.UnescapeString(inv.Message), ExpiresAt: exp,
			InviteURL: e.url(fmt.Sprintf("/resources/%s/%s/invites/%s", inv.ResourceType, inv.ResourceID, inv.InviteID)),
		})
		d.message = &m
	}
	return []delivery{d}, nil
}

func (e *Effects) resource(ctx context.Context, t collab.ResourceType, id string) (collab.Resource, error) {
	a, err := e.Store.ResourceAccess(ctx, t, id, "")
	return a.Resource, err
}

func (e *Effects) comment(ctx context.Context, c stream.Change) ([]delivery, error) {
	var cm collab.Comment
	if err := c.DecodeNew(&cm); err != nil {
		return nil, err
	}
	res, err := e.resource(ctx, cm.ResourceType, cm.ResourceID)
	if err != nil {
		return nil, err
	}
	cols, err := e.Store.AllCollaborators(ctx, cm.ResourceType, cm.ResourceID)
	if err != nil {
		return nil, err
	}
	audience := []string{res.OwnerID}
	for _, col := range cols {
		audience = append(audience, col.UserID)
	}
	ppl, err := e.people(ctx, append([]string{cm.UserID}, audience...)...)
	if err != nil {
		return nil, err
	}
	author := ppl.profile(cm.UserID)
	var out []delivery
	for _, u := range audience {
		if u == cm.UserID {
			continue
		}
		mention := slices.Contains(cm.Mentions, u)
		typ, opted := collab.NotifyComment, func(p collab.Preferences) bool { return p.EmailOnComment }
		if mention {
			typ, opted = collab.NotifyMention, func(p collab.Preferences) bool { return p.EmailOnMention }
		}
		d := delivery{key: typ + "#" + c.EventID + "#" + u, note: note(u, typ, c.EventID, cm.CreatedAt, cm.UserID, cm.ResourceType, cm.ResourceID)}
		d.note.CommentID = cm.CommentID
		if addr := ppl.address(u, opted); addr != "" {
			m := mail.CommentEmail(mail.CommentData{
				To: addr, AuthorName: author.Name, ResourceType: string(cm.ResourceType), ResourceTitle: res.Title,
				Text: html.UnescapeString(cm.Text), Mention: mention, CommentURL: e.url("/comments/" + cm.CommentID),
			})
			d.message = &m
		}
		out = append(out, d)
	}
	return out, nil
}

func (e *Effects) reaction(ctx context.Context, c stream.Change) ([]delivery, error) {
	var re collab.Reaction
	if err := c.DecodeNew(&re); err != nil {
		return nil, err
	}
	cm, err := e.Store.GetComment(ctx, re.CommentID)
	if errs.Is(err, errs.NotFound) {
		return nil, nil // the comment is gone: nobody to tell
	}
	if err != nil {
		return nil, err
	}
	if cm.UserID == re.UserID {
		return nil, nil
	}
	res, err := e.resource(ctx, cm.ResourceType, cm.ResourceID)
	if err != nil {
		return nil, err
	}
	ppl, err := e.people(ctx, re.UserID, cm.UserID)
	if err != nil {
		return nil, err
	}
	reactor := ppl.profile(re.UserID)
	d := delivery{key: "reaction#" + c.EventID + "#" + cm.UserID, note: note(cm.UserID, collab.NotifyReaction, c.EventID, re.CreatedAt, re.UserID, cm.ResourceType, cm.ResourceID)}
	d.note.CommentID, d.note.Emoji = cm.CommentID, re.Emoji
	if addr := ppl.address(cm.UserID, func(p collab.Preferences) bool { return p.EmailOnReaction }); addr != "" {
		m := mail.ReactionEmail(mail.ReactionData{
			To: addr, ReactorName: reactor.Name, Emoji: re.Emoji, CommentExcerpt: html.UnescapeString(cm.Text),
			ResourceTitle: res.Title, CommentURL: e.url("/comments/" + cm.CommentID),
		})
		d.message = &m
	}
	return []delivery{d}, nil
}
