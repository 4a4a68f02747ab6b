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

// people caches the profiles and preferences a change needs.
type people struct {
	e        *Effects
	ctx      context.Context
	profiles map[string]collab.Profile
}

func (p *people) profile(userID string) (collab.Profile, error) {
	if pr, ok := p.profiles[userID]; ok {
		return pr, nil
	}
	pr, err := p.e.Store.GetProfile(p.ctx, userID)
	if errs.Is(err, errs.NotFound) {
		pr, err = collab.Profile{UserID: userID, Name: userID}, nil
	}
	if err != nil {
		return pr, err
	}
	if pr.Name == "" {
		pr.Name = userID
	}
	p.profiles[userID] = pr
	return pr, nil
}

// address returns where to e-mail a user who opted in, "" for no e-mail.
func (p *people) address(userID string, optedIn func(collab.Preferences) bool) (string, error) {
	prefs, err := p.e.Store.GetPreferences(p.ctx, userID)
	if err != nil || !optedIn(prefs) {
		return "", err
	}
	pr, err := p.profile(userID)
	return pr.Email, err
}

func (e *Effects) people(ctx context.Context) *people {
	return &people{e: e, ctx: ctx, profiles: map[string]collab.Profile{}}
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
	ppl := e.people(ctx)
	inviter, err := ppl.profile(inv.InviterID)
	if err != nil {
		return nil, err
	}
	// To a user: in-app, and an e-mail if they want invite e-mails (to the
	// address on the invite, else their profile's). To an address only: the
	// e-mail (there are no preferences to ask).
	d := delivery{key: "invite#" + c.EventID + "#" + inv.InviteeEmail}
	to := inv.InviteeEmail
	if inv.InviteeID != "" {
		d.key = "invite#" + c.EventID + "#" + inv.InviteeID
		d.note = note(inv.InviteeID, collab.NotifyInvite, c.EventID, inv.CreatedAt, inv.InviterID, inv.ResourceType, inv.ResourceID)
		d.note.InviteID = inv.InviteID
		prefs, err := e.Store.GetPreferences(ctx, inv.InviteeID)
		if err != nil {
			return nil, err
		}
		switch {
		case !prefs.EmailOnInvite:
			to = ""
		case to == "":
			invitee, err := ppl.profile(inv.InviteeID)
			if err != nil {
				return nil, err
			}
			to = invitee.Email
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
	ppl := e.people(ctx)
	author, err := ppl.profile(cm.UserID)
	if err != nil {
		return nil, err
	}
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
		addr, err := ppl.address(u, opted)
		if err != nil {
			return nil, err
		}
		if addr != "" {
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
	ppl := e.people(ctx)
	reactor, err := ppl.profile(re.UserID)
	if err != nil {
		return nil, err
	}
	d := delivery{key: "reaction#" + c.EventID + "#" + cm.UserID, note: note(cm.UserID, collab.NotifyReaction, c.EventID, re.CreatedAt, re.UserID, cm.ResourceType, cm.ResourceID)}
	d.note.CommentID, d.note.Emoji = cm.CommentID, re.Emoji
	addr, err := ppl.address(cm.UserID, func(p collab.Preferences) bool { return p.EmailOnReaction })
	if err != nil {
		return nil, err
	}
	if addr != "" {
		m := mail.ReactionEmail(mail.ReactionData{
			To: addr, ReactorName: reactor.Name, Emoji: re.Emoji, CommentExcerpt: html.UnescapeString(cm.Text),
			ResourceTitle: res.Title, CommentURL: e.url("/comments/" + cm.CommentID),
		})
		d.message = &m
	}
	return []delivery{d}, nil
}
