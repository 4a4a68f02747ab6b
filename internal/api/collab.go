package api

import (
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
)

// Collaboration routes (seed 004). Who may do what, as the seed's security
// section says: the owner creates invites and reads them all; the invitee
// reads, accepts or declines their invite; the owner and collaborators read
// the resource, its collaborators and comments, comment and react; only a
// comment's author edits or deletes it. Anyone else gets 404 for the
// resource (its existence is not revealed), and a member doing what only
// the owner or author may do gets 403.

const (
	maxResourceTitle = 200
	maxInviteMessage = 1000
	inviteTTL        = 30 * 24 * time.Hour
)

func resourceType(r *http.Request) (collab.ResourceType, error) {
	t := collab.ResourceType(r.PathValue("type"))
	if !t.Valid() {
		return t, errs.Field("type", `must be "goal", "quest" or "task"`)
	}
	return t, nil
}

// access reads the caller's access to the resource of the path; a caller
// who is neither owner nor collaborator gets 404.
func (s *Server) access(r *http.Request) (store.Access, error) {
	t, err := resourceType(r)
	if err != nil {
		return store.Access{}, err
	}
	id := r.PathValue("id")
	a, err := s.Store.Collab.ResourceAccess(r.Context(), t, id, identity(r.Context()).UserID)
	if err == nil && !a.Member() {
		err = errs.New(errs.NotFound, "%s %s not found", t, id)
	}
	return a, err
}

type createResourceRequest struct {
	ResourceType collab.ResourceType `json:"resourceType"`
	Title        string              `json:"title"`
}

func (s *Server) createResource(w http.ResponseWriter, r *http.Request) error {
	var req createResourceRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	if !req.ResourceType.Valid() {
		fs = append(fs, errs.FieldError{Field: "resourceType", Reason: `must be "goal", "quest" or "task"`})
	}
	checkText(&fs, "title", req.Title, true, maxResourceTitle)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	res := collab.Resource{ResourceType: req.ResourceType, ResourceID: s.NewID(), Title: strings.TrimSpace(req.Title),
		OwnerID: identity(r.Context()).UserID, CreatedAt: store.Timestamp(s.Now())}
	if err := s.Store.Collab.CreateResource(r.Context(), res); err != nil {
		return err
	}
	return created(w, "/resources/"+string(res.ResourceType)+"/"+res.ResourceID, res)
}

func (s *Server) getResource(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	writeJSON(w, http.StatusOK, a.Resource)
	return nil
}

type createInviteRequest struct {
	InviteeID    string `json:"inviteeId"`
	InviteeEmail string `json:"inviteeEmail"`
	Message      string `json:"message"`
}

// createInvite: the owner invites by user id and/or e-mail; the invite
// expires in 30 days (expiresAt, and ttl for DynamoDB to remove it).
func (s *Server) createInvite(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	var req createInviteRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	switch {
	case req.InviteeID == "" && req.InviteeEmail == "":
		fs = append(fs, errs.FieldError{Field: "inviteeId", Reason: "inviteeId or inviteeEmail is required"})
	case req.InviteeID != "" && !auth.ValidUserID(req.InviteeID):
		fs = append(fs, errs.FieldError{Field: "inviteeId", Reason: auth.UserIDRule})
	case req.InviteeID == a.Resource.OwnerID:
		fs = append(fs, errs.FieldError{Field: "inviteeId", Reason: "the owner cannot invite themselves"})
	}
	if req.InviteeEmail != "" && !auth.ValidEmail(req.InviteeEmail) {
		fs = append(fs, errs.FieldError{Field: "inviteeEmail", Reason: "must be an e-mail address"})
	}
	checkText(&fs, "message", req.Message, false, maxInviteMessage)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	now := s.Now()
	inv := collab.Invite{
		InviteID: s.NewID(), InviterID: a.Resource.OwnerID, InviteeID: req.InviteeID, InviteeEmail: strings.ToLower(req.InviteeEmail),
		ResourceType: a.Resource.ResourceType, ResourceID: a.Resource.ResourceID, Status: collab.InvitePending,
		Message: collab.SanitizeText(req.Message), CreatedAt: store.Timestamp(now), UpdatedAt: store.Timestamp(now),
		ExpiresAt: store.Timestamp(now.Add(inviteTTL)), TTL: now.Add(inviteTTL).Unix(),
	}
	if err := s.Store.Collab.CreateInvite(r.Context(), inv); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, inviteJSON(inv, inv.CreatedAt))
	return nil
}

// inviteView is an invite as a reader sees it: a pending invite past its
// expiry reads as expired.
func inviteJSON(inv collab.Invite, now string) collab.Invite {
	inv.Status = inv.EffectiveStatus(now)
	return inv
}

func (s *Server) listInvites(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	p, err := page(r)
	if err != nil {
		return err
	}
	invs, next, err := s.Store.Collab.ListInvites(r.Context(), a.Resource.ResourceType, a.Resource.ResourceID, p)
	if err != nil {
		return err
	}
	now := store.Timestamp(s.Now())
	for i := range invs {
		invs[i] = inviteJSON(invs[i], now)
	}
	return replyPage(w)(invs, next, nil)
}

// invite reads the invite of the path for its owner or its invitee (by
// user id, or by the caller's verified e-mail address); anyone else gets 404.
// The inviter is never the invitee, even when the invite went to their own
// address: the owner does not become a collaborator on their own resource.
func (s *Server) invite(r *http.Request) (collab.Invite, bool, error) {
	t, err := resourceType(r)
	if err != nil {
		return collab.Invite{}, false, err
	}
	me := identity(r.Context())
	inv, err := s.Store.Collab.GetInvite(r.Context(), t, r.PathValue("id"), r.PathValue("inviteId"))
	if err != nil {
		return inv, false, err
	}
	invitee := inv.InviterID != me.UserID &&
		(inv.InviteeID == me.UserID || (inv.InviteeID == "" && me.Email != "" && inv.InviteeEmail == me.Email))
	if !invitee && inv.InviterID != me.UserID {
		return inv, false, errs.New(errs.NotFound, "invite %s not found", inv.InviteID)
	}
	return inv, invitee, nil
}

func (s *Server) getInvite(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, inviteJSON(callerGrant(r).invite, store.Timestamp(s.Now())))
	return nil
}

// respondInvite accepts or declines (invitee only); an expired, declined or
// accepted invite is a 409 that says which.
func respondInvite(accept bool) func(*Server, http.ResponseWriter, *http.Request) error {
	return func(s *Server, w http.ResponseWriter, r *http.Request) error {
		inv := callerGrant(r).invite // the invitee (the route's access)
		want := map[bool]string{true: collab.InviteAccepted, false: collab.InviteDeclined}[accept]
		if inv.Status == want {
			// Answered so already (only the invitee answers): a retry gets
			// the same success, nothing written again.
			var col *collab.Collaborator
			if accept {
				c, err := s.Store.Collab.GetCollaborator(r.Context(), inv.ResourceType, inv.ResourceID, identity(r.Context()).UserID)
				if err != nil {
					return err
				}
				col = &c
			}
			writeJSON(w, http.StatusOK, map[string]any{"invite": inv, "collaborator": col})
			return nil
		}
		now := s.Now()
		if why := inv.CanRespond(store.Timestamp(now)); why != nil {
			return errs.New(errs.Conflict, "%s", why.Error())
		}
		inv, col, err := s.Store.Collab.RespondInvite(r.Context(), inv, accept, identity(r.Context()).UserID, now)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"invite": inv, "collaborator": col})
		return nil
	}
}

// myInvites lists the invites the caller received, in GSI1SK order
// descending (by status: pending, declined, accepted; newest first within
// each):
// ?status=pending|accepted|declined; ?via=email for those sent to the
// caller's verified address only.
func (s *Server) myInvites(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	me := identity(r.Context())
	q := r.URL.Query()
	status := q.Get("status")
	switch status {
	case "", collab.InvitePending, collab.InviteAccepted, collab.InviteDeclined:
	default:
		return errs.Field("status", `must be "pending", "accepted" or "declined"`)
	}
	pk := store.UserPK(me.UserID)
	switch q.Get("via") {
	case "":
	case "email":
		if me.Email == "" {
			return errs.Field("via", "your token carries no verified e-mail address")
		}
		pk = store.EmailPK(me.Email)
	default:
		return errs.Field("via", `must be "email" or absent`)
	}
	now := s.Now()
	invs, next, err := s.Store.Collab.ReceivedInvites(r.Context(), pk, status, now, p)
	if err != nil {
		return err
	}
	for i := range invs {
		invs[i] = inviteJSON(invs[i], store.Timestamp(now))
	}
	return replyPage(w)(invs, next, nil)
}

func (s *Server) listCollaborators(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Collab.ListCollaborators(r.Context(), a.Resource.ResourceType, a.Resource.ResourceID, p))
}

func (s *Server) getCollaborator(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	return reply(w, http.StatusOK)(s.Store.Collab.GetCollaborator(r.Context(), a.Resource.ResourceType, a.Resource.ResourceID, r.PathValue("userId")))
}

// myCollaborations lists the caller's collaborations (?type= to filter), in
// GSI1SK order descending (by type: task, quest, goal; newest first within
// each).
func (s *Server) myCollaborations(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	t := collab.ResourceType(r.URL.Query().Get("type"))
	if t != "" && !t.Valid() {
		return errs.Field("type", `must be "goal", "quest" or "task"`)
	}
	return replyPage(w)(s.Store.Collab.UserCollaborations(r.Context(), identity(r.Context()).UserID, t, p))
}

type commentRequest struct {
	Text     string `json:"text"`
	ParentID string `json:"parentId"`
}

// createComment: owner and collaborators comment; text is HTML-escaped when
// stored (collab.SanitizeText) and its @mentions parsed.
func (s *Server) createComment(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	var req commentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := collab.CheckText(req.Text); err != nil {
		return errs.Field("text", err.Error())
	}
	me := identity(r.Context()).UserID
	c := collab.Comment{
		CommentID: s.NewID(), ResourceType: a.Resource.ResourceType, ResourceID: a.Resource.ResourceID, ParentID: req.ParentID,
		UserID: me, Text: collab.SanitizeText(req.Text), Mentions: collab.Mentions(req.Text, me), CreatedAt: store.Timestamp(s.Now()),
	}
	if err := s.Store.Collab.CreateComment(r.Context(), c); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c)
	return nil
}

// replyComment writes a comment with its reaction counts, or returns err.
func (s *Server) replyComment(w http.ResponseWriter, r *http.Request) func(collab.Comment, error) error {
	return func(c collab.Comment, err error) error {
		cs := []collab.Comment{c}
		if err == nil {
			err = s.withCounts(r, cs)
		}
		return reply(w, http.StatusOK)(cs[0], err)
	}
}

// replyComments writes a page of comments with their reaction counts (one
// BatchGetItem for the page), or returns err.
func (s *Server) replyComments(w http.ResponseWriter, r *http.Request) func([]collab.Comment, string, error) error {
	return func(cs []collab.Comment, next string, err error) error {
		if err == nil {
			err = s.withCounts(r, cs)
		}
		return replyPage(w)(cs, next, err)
	}
}

// withCounts attaches the derived reaction counts (one BatchGetItem).
func (s *Server) withCounts(r *http.Request, cs []collab.Comment) error {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.CommentID
	}
	counts, err := s.Store.Collab.ReactionCounts(r.Context(), ids)
	if err != nil {
		return err
	}
	for i := range cs {
		cs[i].Counts = counts[cs[i].CommentID]
	}
	return nil
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) error {
	a := callerGrant(r).resource
	p, err := page(r)
	if err != nil {
		return err
	}
	return s.replyComments(w, r)(s.Store.Collab.ListComments(r.Context(), a.Resource.ResourceType, a.Resource.ResourceID, p))
}

// comment reads the comment of the path and checks the caller may see it.
func (s *Server) comment(r *http.Request) (collab.Comment, store.Access, error) {
	c, a, err := s.Store.Collab.CommentAccess(r.Context(), r.PathValue("commentId"), identity(r.Context()).UserID)
	if err == nil && !a.Member() {
		err = errs.New(errs.NotFound, "comment %s not found", c.CommentID)
	}
	return c, a, err
}

func (s *Server) getComment(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment
	return s.replyComment(w, r)(c, nil)
}

func (s *Server) listReplies(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment
	p, err := page(r)
	if err != nil {
		return err
	}
	return s.replyComments(w, r)(s.Store.Collab.ListReplies(r.Context(), c.CommentID, p))
}

type editCommentRequest struct {
	Text string `json:"text"`
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment // the author's (the route's access)
	me := identity(r.Context()).UserID
	var req editCommentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := collab.CheckText(req.Text); err != nil {
		return errs.Field("text", err.Error())
	}
	if c.DeletedAt != "" {
		return errs.New(errs.Conflict, "comment %s is deleted", c.CommentID)
	}
	return s.replyComment(w, r)(s.Store.Collab.EditComment(r.Context(), c, collab.SanitizeText(req.Text), collab.Mentions(req.Text, me), me, s.Now()))
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment // the author's (the route's access)
	if err := s.Store.Collab.DeleteComment(r.Context(), c, c.UserID, s.Now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func emojiOf(r *http.Request) (string, error) {
	e := r.PathValue("emoji")
	if !collab.ValidEmoji(e) {
		return "", errs.Field("emoji", "must be one emoji")
	}
	return e, nil
}

// addReaction: one reaction per user per emoji; adding it again is 200
// with the existing one, a new one 201.
func (s *Server) addReaction(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment
	e, err := emojiOf(r)
	if err != nil {
		return err
	}
	me := identity(r.Context()).UserID
	re := collab.Reaction{CommentID: c.CommentID, ResourceType: c.ResourceType, ResourceID: c.ResourceID, UserID: me, Emoji: e, CreatedAt: store.Timestamp(s.Now())}
	created, err := s.Store.Collab.AddReaction(r.Context(), re)
	if err != nil {
		return err
	}
	if !created {
		if re, err = s.Store.Collab.GetReaction(r.Context(), c.CommentID, me, e); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, re)
		return nil
	}
	writeJSON(w, http.StatusCreated, re)
	return nil
}

func (s *Server) removeReaction(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment
	e, err := emojiOf(r)
	if err != nil {
		return err
	}
	if err := s.Store.Collab.RemoveReaction(r.Context(), c.CommentID, identity(r.Context()).UserID, e); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listReactions(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Collab.ListReactions(r.Context(), c.CommentID, p))
}

// getReaction reads one user's reaction (the seed's GetItem pattern).
func (s *Server) getReaction(w http.ResponseWriter, r *http.Request) error {
	c := callerGrant(r).comment
	e, err := emojiOf(r)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK)(s.Store.Collab.GetReaction(r.Context(), c.CommentID, r.PathValue("userId"), e))
}

func (s *Server) getPreferences(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Collab.GetPreferences(r.Context(), identity(r.Context()).UserID))
}

type preferencesRequest struct {
	EmailOnInvite   *bool `json:"emailOnInvite"`
	EmailOnComment  *bool `json:"emailOnComment"`
	EmailOnMention  *bool `json:"emailOnMention"`
	EmailOnReaction *bool `json:"emailOnReaction"`
}

// putPreferences replaces the caller's preferences; an omitted one takes
// its default.
func (s *Server) putPreferences(w http.ResponseWriter, r *http.Request) error {
	var req preferencesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	me := identity(r.Context()).UserID
	p := collab.DefaultPreferences(me)
	for _, f := range []struct {
		v   *bool
		dst *bool
	}{{req.EmailOnInvite, &p.EmailOnInvite}, {req.EmailOnComment, &p.EmailOnComment}, {req.EmailOnMention, &p.EmailOnMention}, {req.EmailOnReaction, &p.EmailOnReaction}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	p.UpdatedAt = store.Timestamp(s.Now())
	if err := s.Store.Collab.PutPreferences(r.Context(), p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

func (s *Server) getProfile(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Collab.GetProfile(r.Context(), identity(r.Context()).UserID))
}

type profileRequest struct {
	Name   string `json:"name"`
	Email  string `json:"email"`
	Locale string `json:"locale"`
}

// localePattern is a BCP 47 language tag's shape: a language, then
// subtags.
var localePattern = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$`)

// putProfile sets the caller's profile: the name shown in e-mails and the
// address they are sent to.
func (s *Server) putProfile(w http.ResponseWriter, r *http.Request) error {
	var req profileRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	checkText(&fs, "name", req.Name, true, maxName)
	if req.Email != "" && !auth.ValidEmail(req.Email) {
		fs = append(fs, errs.FieldError{Field: "email", Reason: "must be an e-mail address"})
	}
	if req.Locale != "" && !localePattern.MatchString(req.Locale) {
		fs = append(fs, errs.FieldError{Field: "locale", Reason: "must be a BCP 47 language tag, such as en or vi-VN"})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	p := collab.Profile{UserID: identity(r.Context()).UserID, Name: strings.TrimSpace(req.Name), Email: strings.ToLower(req.Email), Locale: req.Locale, UpdatedAt: store.Timestamp(s.Now())}
	return reply(w, http.StatusOK)(s.Store.Collab.PutProfile(r.Context(), p)) // createdAt kept
}

func (s *Server) myNotifications(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	return replyPage(w)(s.Store.Collab.ListNotifications(r.Context(), identity(r.Context()).UserID, s.Now(), p))
}
