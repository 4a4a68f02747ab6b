package api

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// commit is how a route's change commits: the route table's last column,
// read by Handler (ordinary or not) and by oneWrite (which way).
//
// A route other than ordinary is one whose handler, when it succeeds, has
// made one transactional write and no other. Its request is first tried
// as one DynamoDB request: the handler's write is held back (store.Defer)
// and sent in one transaction with the request's Idempotency-Key record
// (as done, with the response) and, on a foldMember, foldResource or
// foldComment route, a check of the caller's access instead of a read
// beforehand. So a keyed request that would cost a claim, the write and
// the record costs the write.
//
// Anything else falls back to the ordinary way, which answers exactly as
// before: the handler failed or refused, the key was used before (its
// record is there), the caller is no member, a condition of the write
// failed. Nothing was written by the first try then (the transaction is
// all or nothing, and nothing is sent before it), so running the request
// again is safe; only a refusal costs its reads twice.
// TestOneWriteRoutes checks each such route's DynamoDB requests.
type commit int

const (
	// ordinary: the handler's writes go as it makes them (with a key,
	// through idempotent's claim and record).
	ordinary commit = iota
	// oneTx: the caller's access is read first (authorize), as on an
	// ordinary route, and the handler's one write is held and committed
	// with the key's record. A member's removal is one: the caller's role
	// decides; so are a location's change (held on the condition that
	// the location is as read) and the creations of a user's own items.
	oneTx
	// foldMember: a member route whose membership is checked in the
	// transaction instead of read first. Its handler reads nothing before
	// its write (a handler that reads must not run for a caller who is no
	// member: how long its refusal took would tell whether what it read
	// is there) and uses only the room and the caller of callerMember (its
	// role is not read: on an owner route the check is that the caller
	// is the owner).
	foldMember
	// foldResource: a resource route whose access is checked in the
	// transaction by the caller's access item (store.AccessCheck: owner or
	// collaborator, the owner alone on an owner route) instead of read
	// first. Its handler reads nothing before its write and uses only the
	// resource's type and id from the grant, and on an owner route its
	// owner, who is then the caller.
	foldResource
	// foldComment: a comment route that reads only the comment's
	// reference (which names its resource) and checks the caller's access
	// to that resource in the transaction, instead of reading the comment,
	// the resource and the collaborator item first. Its handler uses only
	// the comment's id and resource from the grant.
	foldComment
	// readListing: a member route whose handler reads the listing
	// {listingId} first: the membership and the listing are read together
	// (store.MemberListing), one request for both, and the change is held
	// on the condition that the listing is as read.
	readListing
)

// oneWrite serves a route whose commit is not ordinary: one transaction if it can, otherwise
// run (through idempotent with a key).
func (s *Server) oneWrite(w http.ResponseWriter, r *http.Request, rt route, op *operation, key string, run func(*Server, http.ResponseWriter, *http.Request) error) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ordinary := func() error {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if key != "" {
			return s.idempotent(w, r, key, run)
		}
		return run(s, w, r)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if validateRequest(r, op) != nil {
		return ordinary()
	}
	me := identity(r.Context()).UserID
	var guards []types.TransactWriteItem
	fr := r
	switch {
	case rt.commit == foldMember:
		roomID := r.PathValue("roomId")
		m := room.Member{RoomID: roomID, UserID: me}
		if rt.access == owner {
			m.Role = room.RoleOwner
		}
		fr = r.WithContext(context.WithValue(r.Context(), grantKey{}, grant{member: m}))
		guards = append(guards, s.Store.MemberCheck(roomID, me, rt.access == owner))
	case rt.commit == foldResource:
		t, id := collab.ResourceType(r.PathValue("type")), r.PathValue("id")
		if !t.Valid() {
			return ordinary() // the 400 naming type
		}
		owner := rt.access == resourceOwner
		a := store.Access{Resource: collab.Resource{ResourceType: t, ResourceID: id}, Owner: owner}
		if owner {
			a.Resource.OwnerID = me
		}
		fr = r.WithContext(context.WithValue(r.Context(), grantKey{}, grant{resource: a}))
		guards = append(guards, s.Store.Collab.AccessCheck(t, id, me, owner))
	case rt.commit == foldComment:
		// an outsider's request costs this read, as the ordinary way's
		// first read, then the refused commit and the ordinary way
		c, err := s.Store.Collab.CommentRef(r.Context(), r.PathValue("commentId"))
		if err != nil {
			return ordinary()
		}
		fr = r.WithContext(context.WithValue(r.Context(), grantKey{}, grant{comment: c}))
		guards = append(guards, s.Store.Collab.AccessCheck(c.ResourceType, c.ResourceID, me, false))
	case rt.commit == readListing:
		// the membership and the listing in one read: an outsider is
		// refused the ordinary way, having read what a member reads
		m, isMember, l, found, err := s.Store.Rooms.MemberListing(r.Context(), r.PathValue("roomId"), me, r.PathValue("listingId"))
		if err != nil || !isMember {
			return ordinary()
		}
		fr = r.WithContext(context.WithValue(r.Context(), grantKey{}, grant{member: m, listing: &listingRead{l, found}}))
	default:
		if fr, err = s.authorize(r, rt.access); err != nil {
			return ordinary() // a refusal is kept for the key as ever
		}
	}
	now := s.Now()
	srv := s
	if key != "" {
		srv = s.asOf(now, me, key) // ids from the key, as a keyed run's
	}
	ctx, u := store.Defer(fr.Context())
	buf := &bufferedResponse{header: http.Header{}}
	if err := rt.handle(srv, buf, fr.WithContext(ctx)); err != nil {
		return ordinary()
	}
	if buf.status == 0 {
		buf.status = http.StatusOK
	}
	if buf.status/100 != 2 || !u.Held() || buf.body.Len() > maxStoredBody {
		return ordinary()
	}
	if key != "" {
		resp := store.StoredResponse{Status: buf.status, ContentType: buf.header.Get("Content-Type"), Location: buf.header.Get("Location"), Body: buf.body.String()}
		rec, err := s.Store.RequestRecord(me, key, Fingerprint(r.Method, r.URL.EscapedPath(), r.URL.RawQuery, body), now, idempotencyKeep, resp)
		if err != nil {
			return err
		}
		guards = append(guards, rec)
	}
	ok, err := s.Store.Commit(ctx, u, guards...)
	if err != nil {
		return err
	}
	if !ok {
		return ordinary()
	}
	for k, vs := range buf.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(buf.status)
	_, _ = w.Write(buf.body.Bytes())
	return nil
}
