package notify

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Effects carries out the collaboration side effects of a change: e-mails
// through a mail.Sender and in-app notifications (docs/design.md §4).
//
// Delivery: at most one e-mail per (source change, recipient). Each send is
// guarded by an idempotency record keyed by the change's stream event id and
// the recipient (in progress with a hold, then completed): a redelivered
// record, a retried batch or a replay finds the record completed and sends
// nothing; a worker that crashed mid-send loses its hold after Hold, and the
// next attempt waits for that and sends (a crash between the send and its
// completion record is the one window in which a mail can go out twice, as
// with Lambda Powertools; a crash before the send only delays it). A failed send releases the record and fails the
// record, so the event source mapping retries it. In-app notifications are
// keyed by the change and the recipient, so writing them again is harmless.
// Recipients are those the change's own time defines (a comment's audience
// is the owner and the collaborators who had joined by its createdAt), so a
// lagging or replayed notifier tells exactly the same people.
type Effects struct {
	Store  *store.Store
	Mailer mail.Sender
	// BaseURL prefixes the links in e-mails (e.g. https://app.example.com).
	BaseURL string
	Now     func() time.Time
	Logger  *slog.Logger
	// Hold is how long a send is reserved for the worker that claimed it
	// (default 30 s): after a crash, the next attempt takes the send over
	// when the hold ends. SendTimeout bounds one send (default 10 s, less
	// than Hold). Keep is how long idempotency records stay (7 days).
	Hold, SendTimeout, Keep time.Duration
	// MailConcurrency bounds the e-mails of a batch sent at once (default
	// DefaultMailConcurrency).
	MailConcurrency int
}

// delivery is one recipient's notification of one change.
type delivery struct {
	key     string // idempotency key
	note    *collab.Notification
	message *mail.Message // nil: no e-mail (opted out or no address)
}

// subject is the collaboration entity a change is about, decoded once.
type subject struct {
	invite   *collab.Invite
	comment  *collab.Comment
	reaction *collab.Reaction
}

// subjectOf decodes what a change's side effects are about; ok is false for
// a change that has none (not an insert, derived, or another item type).
func subjectOf(c stream.Change) (subject, bool, error) {
	if c.Derived() || c.Kind != stream.Insert {
		return subject{}, false, nil
	}
	var s subject
	var v any
	switch c.ItemType() {
	case store.TypeInvite:
		s.invite = &collab.Invite{}
		v = s.invite
	case store.TypeComment:
		s.comment = &collab.Comment{}
		v = s.comment
	case store.TypeReaction:
		s.reaction = &collab.Reaction{}
		v = s.reaction
	default:
		return subject{}, false, nil
	}
	if err := c.DecodeNew(v); err != nil {
		return subject{}, false, err
	}
	return s, true, nil
}

// reads is what a batch's side effects need, read once for the whole
// batch: its resources, the comments its reactions are on, each commented
// resource's collaborators, and everyone's profile and preferences.
type reads struct {
	resources map[store.ResourceRef]collab.Resource
	comments  map[string]collab.Comment // text only where a reaction e-mail needs it
	collabs   map[store.ResourceRef][]collab.Collaborator
	people    *people
}

// read reads what the subjects' side effects need with a few requests
// shared by the batch, in two rounds: resources and the reactions' comments
// (one BatchGetItem round) while each commented resource's collaborators
// are queried, then the people (one BatchGetItem round). A third round reads
// the text of the comments whose authors want reaction e-mails (off by
// default).
func (e *Effects) read(ctx context.Context, subjects []subject) (*reads, error) {
	var refs []store.ResourceRef
	var commentIDs []string
	commented := map[store.ResourceRef]bool{}
	for _, s := range subjects {
		switch {
		case s.invite != nil:
			refs = append(refs, store.ResourceRef{Type: s.invite.ResourceType, ID: s.invite.ResourceID})
		case s.comment != nil:
			r := store.ResourceRef{Type: s.comment.ResourceType, ID: s.comment.ResourceID}
			refs = append(refs, r)
			commented[r] = true
		case s.reaction != nil:
			refs = append(refs, store.ResourceRef{Type: s.reaction.ResourceType, ID: s.reaction.ResourceID})
			commentIDs = append(commentIDs, s.reaction.CommentID)
		}
	}
	rd := &reads{collabs: map[store.ResourceRef][]collab.Collaborator{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	wg.Go(func() {
		res, comments, err := e.Store.Collab.CollabReads(ctx, refs, commentIDs)
		mu.Lock()
		defer mu.Unlock()
		rd.resources, rd.comments, errs = res, comments, append(errs, err)
	})
	for r := range commented {
		wg.Go(func() {
			cols, err := e.Store.Collab.AllCollaborators(ctx, r.Type, r.ID)
			mu.Lock()
			defer mu.Unlock()
			rd.collabs[r], errs = cols, append(errs, err)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var users []string
	for _, s := range subjects {
		switch {
		case s.invite != nil:
			users = append(users, s.invite.InviterID, s.invite.InviteeID)
		case s.comment != nil:
			r := store.ResourceRef{Type: s.comment.ResourceType, ID: s.comment.ResourceID}
			users = append(users, s.comment.UserID, rd.resources[r].OwnerID)
			for _, c := range rd.collabs[r] {
				users = append(users, c.UserID)
			}
		case s.reaction != nil:
			users = append(users, s.reaction.UserID, rd.comments[s.reaction.CommentID].UserID)
		}
	}
	profiles, prefs, err := e.Store.Collab.People(ctx, users)
	if err != nil {
		return nil, err
	}
	rd.people = &people{profiles: profiles, prefs: prefs}
	var texts []collab.Comment
	for _, s := range subjects {
		if s.reaction == nil {
			continue
		}
		if c, ok := rd.comments[s.reaction.CommentID]; ok && c.UserID != s.reaction.UserID &&
			rd.people.address(c.UserID, func(p collab.Preferences) bool { return p.EmailOnReaction }) != "" {
			texts = append(texts, c)
		}
	}
	if len(texts) > 0 {
		full, err := e.Store.Collab.CommentTexts(ctx, texts)
		if err != nil {
			return nil, err
		}
		for id, c := range full {
			rd.comments[id] = c
		}
	}
	return rd, nil
}

// resource is a subject's resource; a missing one is NotFound (the record
// is retried: its resource may not be visible yet).
func (rd *reads) resource(t collab.ResourceType, id string) (collab.Resource, error) {
	r, ok := rd.resources[store.ResourceRef{Type: t, ID: id}]
	if !ok {
		return r, errs.New(errs.NotFound, "%s %s not found", t, id)
	}
	return r, nil
}

// deliveries works out a change's notifications and e-mails from what was
// read; it does no I/O.
func (e *Effects) deliveries(c stream.Change, s subject, rd *reads) ([]delivery, error) {
	switch {
	case s.invite != nil:
		return e.invite(c, *s.invite, rd)
	case s.comment != nil:
		return e.comment(c, *s.comment, rd)
	case s.reaction != nil:
		return e.reaction(c, *s.reaction, rd)
	}
	return nil, nil
}

// rejectedCodes are the SES errors that reject one message for good (as
// opposed to the account's or the configuration's state, which a fix
// changes: those fail the record, which is retried).
var rejectedCodes = map[string]bool{"MessageRejected": true, "BadRequestException": true}

// Defaults of Effects' durations.
const (
	DefaultHold        = 30 * time.Second
	DefaultSendTimeout = 10 * time.Second
	DefaultKeep        = 7 * 24 * time.Hour
)

// sendOnce sends m at most once for key, under the Guard's claim
// (idempotency.Guard.Once): a send held by another worker — in practice
// one that crashed mid-send, as a record is delivered to one invocation at
// a time — is waited out and taken over when its hold ends within this
// attempt's budget, so a crash delays an e-mail by Hold at most and never
// loses it. The send itself is bounded by SendTimeout (< Hold), so a live
// holder is done, one way or the other, before its hold ends. An e-mail
// SES rejects for good is recorded as done with the rejection as its
// result.
func (e *Effects) sendOnce(ctx context.Context, key string, m mail.Message) error {
	hold, keep, timeout := e.Hold, e.Keep, e.SendTimeout
	if hold == 0 {
		hold = DefaultHold
	}
	if keep == 0 {
		keep = DefaultKeep
	}
	if timeout == 0 || timeout >= hold {
		timeout = min(DefaultSendTimeout, hold/2)
	}
	g := e.Store.Requests.OnceGuard(e.Now, hold, keep)
	g.MinRun = timeout + time.Second // a send taken over after a wait gets its whole timeout
	g.OnWait = func(key string, wait time.Duration) {
		e.logger().Warn("e-mail held by another attempt (a crash?); waiting for its hold to end", "key", key, "wait", wait.String())
	}
	_, err := g.Once(ctx, key, nil, func(ctx context.Context) (string, error) {
		m.IdempotencyKey = key
		sctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		id, err := e.Mailer.Send(sctx, m)
		var pe *mail.PermanentError
		if errors.As(err, &pe) && rejectedCodes[pe.Code] {
			// This message can never be sent (SES rejected it): sending it
			// again cannot help, and failing the record would hold up its
			// events and the other recipients. Recorded as done, and said.
			e.logger().Error("e-mail rejected; it will not be retried", "key", key, "to", m.To, "code", pe.Code, "err", err)
			return "rejected: " + pe.Code, nil
		}
		if err != nil {
			return "", fmt.Errorf("notify: send %s: %w", key, err)
		}
		return id, nil
	})
	return err
}

func (e *Effects) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}

// people holds the profiles and preferences a batch's changes need, read
// with one BatchGetItem round (not a round trip per recipient).
type people struct {
	profiles map[string]collab.Profile
	prefs    map[string]collab.Preferences
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

// The paths of the e-mails' links under the app's base URL (APP_BASE_URL):
// pages of the app, which calls the API for the user (accepting is a POST
// with the user's token, which a link cannot carry). The local writer
// serves stand-ins for them that show the API call.
func InvitePath(resourceType, resourceID, inviteID string) string {
	return "/app/invites/" + url.PathEscape(resourceType) + "/" + url.PathEscape(resourceID) + "/" + url.PathEscape(inviteID)
}

// CommentPath is a comment's page in the app.
func CommentPath(commentID string) string { return "/app/comments/" + url.PathEscape(commentID) }

func (e *Effects) invite(c stream.Change, inv collab.Invite, rd *reads) ([]delivery, error) {
	res, err := rd.resource(inv.ResourceType, inv.ResourceID)
	if err != nil {
		return nil, err
	}
	ppl := rd.people
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
			InviteURL: e.url(InvitePath(string(inv.ResourceType), inv.ResourceID, inv.InviteID)),
		})
		d.message = &m
	}
	return []delivery{d}, nil
}

func (e *Effects) comment(c stream.Change, cm collab.Comment, rd *reads) ([]delivery, error) {
	res, err := rd.resource(cm.ResourceType, cm.ResourceID)
	if err != nil {
		return nil, err
	}
	// The audience is the one the comment's own time defines: the owner and
	// the collaborators who had joined by then, however late this runs.
	audience := []string{res.OwnerID}
	for _, col := range rd.collabs[store.ResourceRef{Type: cm.ResourceType, ID: cm.ResourceID}] {
		if col.JoinedAt <= cm.CreatedAt {
			audience = append(audience, col.UserID)
		}
	}
	ppl := rd.people
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
				Text: html.UnescapeString(cm.Text), Mention: mention, CommentURL: e.url(CommentPath(cm.CommentID)),
			})
			d.message = &m
		}
		out = append(out, d)
	}
	return out, nil
}

func (e *Effects) reaction(c stream.Change, re collab.Reaction, rd *reads) ([]delivery, error) {
	cm, ok := rd.comments[re.CommentID]
	if !ok {
		return nil, nil // the comment is gone: nobody to tell
	}
	if cm.UserID == re.UserID {
		return nil, nil
	}
	res, err := rd.resource(cm.ResourceType, cm.ResourceID)
	if err != nil {
		return nil, err
	}
	ppl := rd.people
	reactor := ppl.profile(re.UserID)
	d := delivery{key: "reaction#" + c.EventID + "#" + cm.UserID, note: note(cm.UserID, collab.NotifyReaction, c.EventID, re.CreatedAt, re.UserID, cm.ResourceType, cm.ResourceID)}
	d.note.CommentID, d.note.Emoji = cm.CommentID, re.Emoji
	if addr := ppl.address(cm.UserID, func(p collab.Preferences) bool { return p.EmailOnReaction }); addr != "" {
		m := mail.ReactionEmail(mail.ReactionData{
			To: addr, ReactorName: reactor.Name, Emoji: re.Emoji, CommentExcerpt: html.UnescapeString(cm.Text),
			ResourceTitle: res.Title, CommentURL: e.url(CommentPath(cm.CommentID)),
		})
		d.message = &m
	}
	return []delivery{d}, nil
}
