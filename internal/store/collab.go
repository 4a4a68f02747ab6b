package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
)

// Item types of the collaboration domain (seed 004) and the shared profile.
const (
	TypeResource       = "Resource"
	TypeInvite         = "CollaborationInvite"
	TypeCollaborator   = "Collaborator"
	TypeComment        = "Comment"
	TypeCommentRef     = "CommentRef"
	TypeReaction       = "Reaction"
	TypeReactionCounts = "ReactionCounts"
	TypePreferences    = "NotificationPreference"
	TypeProfile        = "UserProfile"
	TypeNotification   = "Notification"
	// TypeRateWindow counts what a caller did in a window (bookkeeping).
	TypeRateWindow = "RateWindow"
)

// ResourcePK is a resource's partition: RESOURCE#<TYPE>#<id>.
func ResourcePK(t collab.ResourceType, id string) string { return "RESOURCE#" + t.Key() + "#" + id }

// ResourceKey is the Resource item's key.
func ResourceKey(t collab.ResourceType, id string) Key { return Key{ResourcePK(t, id), "META"} }

// InviteKey is an invite's key.
func InviteKey(t collab.ResourceType, id, inviteID string) Key {
	return Key{ResourcePK(t, id), "INVITE#" + inviteID}
}

// InviteIndexKey is an invite's GSI1 key: the invitee's received invites by
// status (USER#<inviteeId>, or EMAIL#<address> for an invite by e-mail only).
func InviteIndexKey(inv collab.Invite) Key {
	pk := UserPK(inv.InviteeID)
	if inv.InviteeID == "" {
		pk = EmailPK(inv.InviteeEmail)
	}
	return Key{pk, "INVITE#" + inv.Status + "#" + inv.CreatedAt}
}

// EmailPK is the GSI1 partition of invites sent to an address only.
func EmailPK(email string) string { return "EMAIL#" + strings.ToLower(email) }

// CollaboratorKey is a collaborator's key.
func CollaboratorKey(t collab.ResourceType, id, userID string) Key {
	return Key{ResourcePK(t, id), "COLLABORATOR#" + userID}
}

// CollaboratorIndexKey is a collaborator's GSI1 key.
func CollaboratorIndexKey(c collab.Collaborator) Key {
	return Key{UserPK(c.UserID), "COLLAB#" + string(c.ResourceType) + "#" + c.JoinedAt}
}

// CommentKey is a comment's key.
func CommentKey(t collab.ResourceType, id, createdAt, commentID string) Key {
	return Key{ResourcePK(t, id), "COMMENT#" + createdAt + "#" + commentID}
}

// CommentPK is a comment's own partition: its reactions, counts and the
// reference back to the comment.
func CommentPK(commentID string) string { return "COMMENT#" + commentID }

// CommentRefKey is the item that finds a comment (and its resource) by id.
func CommentRefKey(commentID string) Key { return Key{CommentPK(commentID), "META"} }

// ReplyIndexKey is a reply's GSI1 key.
func ReplyIndexKey(parentID, createdAt string) Key {
	return Key{CommentPK(parentID), "CREATED#" + createdAt}
}

// ReactionKey is a reaction's key.
func ReactionKey(commentID, userID, emoji string) Key {
	return Key{CommentPK(commentID), "REACTION#" + userID + "#" + emoji}
}

// CountsKey is a comment's derived reaction counts.
func CountsKey(commentID string) Key { return Key{CommentPK(commentID), "COUNTS"} }

// PreferencesKey is a user's notification preferences.
func PreferencesKey(userID string) Key { return Key{UserPK(userID), "COLLAB_PREFS"} }

// ProfileKey is a user's profile.
func ProfileKey(userID string) Key { return Key{UserPK(userID), "PROFILE"} }

// NotificationKey is an in-app notification's key.
func NotificationKey(userID, ts, id string) Key {
	return Key{UserPK(userID), "NOTIFICATION#" + ts + "#" + id}
}

// withIndex adds GSI1 attributes to an item.
func withIndex(it map[string]types.AttributeValue, k Key) {
	it["GSI1PK"] = &types.AttributeValueMemberS{Value: k.PK}
	it["GSI1SK"] = &types.AttributeValueMemberS{Value: k.SK}
}

// CreateResource writes a resource and its owner's access item in one
// transaction; an existing id is a Conflict.
func (s Collab) CreateResource(ctx context.Context, r collab.Resource) error {
	it, err := marshal(head{Key: ResourceKey(r.ResourceType, r.ResourceID), ItemType: TypeResource}, r)
	if err != nil {
		return err
	}
	err = s.transactWrite(ctx, []types.TransactWriteItem{
		put(s.Table, it, "attribute_not_exists(PK)"),
		s.grantAccess(r.ResourceType, r.ResourceID, r.OwnerID, collab.RoleOwner),
	})
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case failedAt(reasons, 0):
			return errs.New(errs.Conflict, "%s %s already exists", r.ResourceType, r.ResourceID)
		case ddb.Transient(err): // only conflicts: it may succeed in a moment
			return tryAgain("a concurrent change to %s %s; try again", r.ResourceType, r.ResourceID)
		}
	}
	if err != nil {
		return fmt.Errorf("store: create resource: %w", err)
	}
	return nil
}

// Access is what a user may do with a resource.
type Access struct {
	Resource     collab.Resource
	Owner        bool
	Collaborator bool
}

// Member reports whether the user is the owner or a collaborator.
func (a Access) Member() bool { return a.Owner || a.Collaborator }

// ResourceAccess reads a resource and the user's collaborator item in one
// BatchGetItem. A missing resource is NotFound.
func (s Collab) ResourceAccess(ctx context.Context, t collab.ResourceType, id, userID string) (Access, error) {
	rk, ck := ResourceKey(t, id), CollaboratorKey(t, id, userID)
	var a Access
	found := false
	err := s.batchGet(ctx, []Key{rk, ck}, true, func(it map[string]types.AttributeValue) error {
		switch itemKey(it) {
		case rk:
			found = s.decode(it, &a.Resource)
		case ck:
			a.Collaborator = true
		}
		return nil
	})
	if err != nil {
		return Access{}, fmt.Errorf("store: read access to %s %s: %w", t, id, err)
	}
	if !found {
		return Access{}, errs.New(errs.NotFound, "%s %s not found", t, id)
	}
	a.Owner = a.Resource.OwnerID == userID
	return a, nil
}

func notFoundOr(err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	return errs.New(errs.NotFound, format, args...)
}

func inviteAV(inv collab.Invite) (map[string]types.AttributeValue, error) {
	it, err := marshal(head{Key: InviteKey(inv.ResourceType, inv.ResourceID, inv.InviteID), ItemType: TypeInvite}, inv)
	if err != nil {
		return nil, err
	}
	withIndex(it, InviteIndexKey(inv))
	return it, nil
}

// CreateInvite writes an invite, on the condition that the resource exists
// and that neither the inviter nor the resource is past its InviteLimits
// (Store.InviteLimits, default collab.DefaultInviteLimits) in the current
// window: errs.TooMany, with the time to the window's end, when one is.
// The window counters are bookkeeping (Store.Bookkeeping, no stream),
// counted in the same transaction as the invite, so a refused invite
// counts nothing and an invite is never written uncounted.
func (s Collab) CreateInvite(ctx context.Context, inv collab.Invite) error {
	it, err := inviteAV(inv)
	if err != nil {
		return err
	}
	lim := s.InviteLimits
	if lim.Window <= 0 {
		lim = collab.DefaultInviteLimits
	}
	at, err := ParseTimestamp(inv.CreatedAt)
	if err != nil {
		return fmt.Errorf("store: invite createdAt %q: %w", inv.CreatedAt, err)
	}
	start := at.Truncate(lim.Window)
	end := start.Add(lim.Window)
	counter := func(scope string, max int) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName:                aws.String(s.book()),
			Key:                      Key{"RATE#invites#" + scope, "WINDOW#" + Timestamp(start)}.AV(),
			UpdateExpression:         aws.String("SET itemType = :type, #ttl = :ttl ADD #n :one"),
			ConditionExpression:      aws.String("attribute_not_exists(#n) OR #n < :max"),
			ExpressionAttributeNames: map[string]string{"#n": "count", "#ttl": AttrTTL},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":type": &types.AttributeValueMemberS{Value: TypeRateWindow},
				":ttl":  &types.AttributeValueMemberN{Value: strconv.FormatInt(end.Add(time.Hour).Unix(), 10)},
				":one":  &types.AttributeValueMemberN{Value: "1"},
				":max":  &types.AttributeValueMemberN{Value: strconv.Itoa(max)},
			},
		}}
	}
	err = s.transactWrite(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: ResourceKey(inv.ResourceType, inv.ResourceID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		put(s.Table, it, "attribute_not_exists(PK)"),
		counter("USER#"+inv.InviterID, lim.PerUser),
		counter("RESOURCE#"+inv.ResourceType.Key()+"#"+inv.ResourceID, lim.PerResource),
	})
	if reasons := cancelReasons(err); reasons != nil {
		tooMany := func(what string, n int) error {
			e := errs.New(errs.TooMany, "%s: at most %d invites per %s; try again after %s", what, n, lim.Window, Timestamp(end))
			e.RetryAfter = end.Sub(at)
			return e
		}
		switch {
		case reasons[0] == "ConditionalCheckFailed":
			return errs.New(errs.NotFound, "%s %s not found", inv.ResourceType, inv.ResourceID)
		case reasons[1] == "ConditionalCheckFailed":
			return errs.New(errs.Conflict, "invite %s already exists", inv.InviteID)
		case reasons[2] == "ConditionalCheckFailed":
			return tooMany("you have sent too many invites", lim.PerUser)
		case reasons[3] == "ConditionalCheckFailed":
			return tooMany("this "+string(inv.ResourceType)+" has had too many invites", lim.PerResource)
		case ddb.Transient(err): // only conflicts (a concurrent invite's count, say)
			return tryAgain("a concurrent change to %s %s; try again", inv.ResourceType, inv.ResourceID)
		}
	}
	if err != nil {
		return fmt.Errorf("store: create invite: %w", err)
	}
	return nil
}

// GetInvite reads one invite.
func (s Collab) GetInvite(ctx context.Context, t collab.ResourceType, id, inviteID string) (collab.Invite, error) {
	var inv collab.Invite
	ok, err := s.getItem(ctx, InviteKey(t, id, inviteID), true, &inv)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "invite %s not found", inviteID)
	}
	return inv, err
}

// ListInvites returns one page of a resource's invites.
func (s Collab) ListInvites(ctx context.Context, t collab.ResourceType, id string, p Page) ([]collab.Invite, string, error) {
	var out []collab.Invite
	next, err := s.queryPage(ctx, query{pk: ResourcePK(t, id), skPrefix: "INVITE#", page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// ReceivedInvites returns one page of the invites sent to a GSI1 partition
// (UserPK or EmailPK) in GSI1SK order descending — by status (pending,
// declined, accepted), newest first within each; with status set only those
// in it, newest first.
// Pending invites past their expiry are left out of a "pending" list.
func (s Collab) ReceivedInvites(ctx context.Context, pk, status string, now time.Time, p Page) ([]collab.Invite, string, error) {
	prefix := "INVITE#"
	if status != "" {
		prefix += status + "#"
	}
	var out []collab.Invite
	nowTS := Timestamp(now)
	next, err := s.queryPage(ctx, query{index: IndexGSI1, pk: pk, skPrefix: prefix, desc: true, page: p}, func(it map[string]types.AttributeValue) error {
		var inv collab.Invite
		if !s.decode(it, &inv) {
			return nil
		}
		if status == collab.InvitePending && inv.EffectiveStatus(nowTS) != collab.InvitePending {
			return nil
		}
		out = append(out, inv)
		return nil
	})
	return out, next, err
}

// RespondInvite accepts (with the Collaborator written in the same
// transaction) or declines a pending, unexpired invite; otherwise a
// Conflict that says why (expired, already accepted or declined).
func (s Collab) RespondInvite(ctx context.Context, inv collab.Invite, accept bool, by string, now time.Time) (collab.Invite, *collab.Collaborator, error) {
	at := Timestamp(now)
	status := collab.InviteDeclined
	if accept {
		status = collab.InviteAccepted
	}
	upd := "SET #status = :st, GSI1SK = :gsi1sk, updatedAt = :at, respondedBy = :by"
	if accept {
		upd += " REMOVE #ttl" // accepted invites are kept as history
	}
	nv := inv
	nv.Status, nv.UpdatedAt = status, at
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName: aws.String(s.Table), Key: InviteKey(inv.ResourceType, inv.ResourceID, inv.InviteID).AV(),
		UpdateExpression:         aws.String(upd),
		ConditionExpression:      aws.String("#status = :pending AND expiresAt > :at"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#ttl": AttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":st": &types.AttributeValueMemberS{Value: status}, ":gsi1sk": &types.AttributeValueMemberS{Value: InviteIndexKey(nv).SK},
			":at": &types.AttributeValueMemberS{Value: at}, ":by": &types.AttributeValueMemberS{Value: by},
			":pending": &types.AttributeValueMemberS{Value: collab.InvitePending},
		},
	}}}
	if !accept {
		items[0].Update.ExpressionAttributeNames = map[string]string{"#status": "status"}
	}
	var col *collab.Collaborator
	if accept {
		col = &collab.Collaborator{UserID: by, ResourceType: inv.ResourceType, ResourceID: inv.ResourceID, Role: collab.RoleCollaborator, JoinedAt: at, InviteID: inv.InviteID}
		it, err := marshal(head{Key: CollaboratorKey(inv.ResourceType, inv.ResourceID, by), ItemType: TypeCollaborator}, col)
		if err != nil {
			return inv, nil, err
		}
		withIndex(it, CollaboratorIndexKey(*col))
		items = append(items, put(s.Table, it, "attribute_not_exists(PK)"), s.grantAccess(inv.ResourceType, inv.ResourceID, by, collab.RoleCollaborator))
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if reasons := cancelReasons(err); reasons != nil {
		if len(reasons) > 1 && reasons[1] == "ConditionalCheckFailed" {
			return inv, nil, errs.New(errs.Conflict, "user %s already collaborates on %s %s", by, inv.ResourceType, inv.ResourceID)
		}
		cur, gerr := s.GetInvite(ctx, inv.ResourceType, inv.ResourceID, inv.InviteID)
		if gerr != nil {
			return inv, nil, gerr
		}
		if why := cur.CanRespond(at); why != nil {
			return cur, nil, errs.New(errs.Conflict, "%s", why.Error())
		}
		return cur, nil, tryAgain("the invite changed meanwhile; try again")
	}
	if err != nil {
		return inv, nil, fmt.Errorf("store: respond to invite: %w", err)
	}
	if accept {
		nv.TTL = 0
	}
	return nv, col, nil
}

// ListCollaborators returns one page of a resource's collaborators.
func (s Collab) ListCollaborators(ctx context.Context, t collab.ResourceType, id string, p Page) ([]collab.Collaborator, string, error) {
	var out []collab.Collaborator
	next, err := s.queryPage(ctx, query{pk: ResourcePK(t, id), skPrefix: "COLLABORATOR#", page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// AllCollaborators reads every collaborator of a resource (for notifying).
func (s Collab) AllCollaborators(ctx context.Context, t collab.ResourceType, id string) ([]collab.Collaborator, error) {
	var out []collab.Collaborator
	err := s.queryAll(ctx, query{pk: ResourcePK(t, id), skPrefix: "COLLABORATOR#", consistent: true}, decodeInto(s.Store, &out))
	return out, err
}

// GetCollaborator reads one collaborator.
func (s Collab) GetCollaborator(ctx context.Context, t collab.ResourceType, id, userID string) (collab.Collaborator, error) {
	var c collab.Collaborator
	ok, err := s.get(ctx, CollaboratorKey(t, id, userID), &c)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "user %s does not collaborate on %s %s", userID, t, id)
	}
	return c, err
}

// UserCollaborations returns one page of a user's collaborations in GSI1SK
// order descending — by type (task, quest, goal), newest first within each;
// with t set, only on that resource type, newest first (GSI1).
func (s Collab) UserCollaborations(ctx context.Context, userID string, t collab.ResourceType, p Page) ([]collab.Collaborator, string, error) {
	prefix := "COLLAB#"
	if t != "" {
		prefix += string(t) + "#"
	}
	var out []collab.Collaborator
	next, err := s.queryPage(ctx, query{index: IndexGSI1, pk: UserPK(userID), skPrefix: prefix, desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// commentRef finds a comment by id.
type commentRef struct {
	CommentID    string              `dynamodbav:"commentId"`
	ResourceType collab.ResourceType `dynamodbav:"resourceType"`
	ResourceID   string              `dynamodbav:"resourceId"`
	CreatedAt    string              `dynamodbav:"createdAt"`
	UserID       string              `dynamodbav:"userId"`
}

// CreateComment writes a comment and its reference item in one transaction,
// on the condition that the resource exists (and, for a reply, that the
// parent exists on the same resource).
func (s Collab) CreateComment(ctx context.Context, c collab.Comment) error {
	it, err := marshal(head{Key: CommentKey(c.ResourceType, c.ResourceID, c.CreatedAt, c.CommentID), ItemType: TypeComment}, c)
	if err != nil {
		return err
	}
	if c.ParentID != "" {
		withIndex(it, ReplyIndexKey(c.ParentID, c.CreatedAt))
	}
	ref, err := marshal(head{Key: CommentRefKey(c.CommentID), ItemType: TypeCommentRef},
		commentRef{c.CommentID, c.ResourceType, c.ResourceID, c.CreatedAt, c.UserID})
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: ResourceKey(c.ResourceType, c.ResourceID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		put(s.Table, it, "attribute_not_exists(PK)"),
		put(s.Table, ref, "attribute_not_exists(PK)"),
	}
	if c.ParentID != "" {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.Table), Key: CommentRefKey(c.ParentID).AV(),
			ConditionExpression: aws.String("attribute_exists(PK) AND resourceType = :rt AND resourceId = :rid"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":rt": &types.AttributeValueMemberS{Value: string(c.ResourceType)}, ":rid": &types.AttributeValueMemberS{Value: c.ResourceID},
			},
		}})
	}
	err = s.transactWrite(ctx, items)
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case reasons[0] == "ConditionalCheckFailed":
			return errs.New(errs.NotFound, "%s %s not found", c.ResourceType, c.ResourceID)
		case failedAt(reasons, 3):
			return errs.Field("parentId", "no such comment on this resource")
		case failedAt(reasons, 1) || failedAt(reasons, 2):
			return errs.New(errs.Conflict, "comment %s already exists", c.CommentID)
		case ddb.Transient(err): // only conflicts, on the resource (another comment's check, an invite's count)
			return tryAgain("a concurrent change to %s %s; try again", c.ResourceType, c.ResourceID)
		}
	}
	if err != nil {
		return fmt.Errorf("store: create comment: %w", err)
	}
	return nil
}

// CommentAccess reads a comment (through its reference item) and what
// userID may do with its resource: two requests, the reference and then
// one strongly consistent batch of the comment, the resource and the
// user's collaborator item. A missing comment or resource is NotFound.
func (s Collab) CommentAccess(ctx context.Context, commentID, userID string) (collab.Comment, Access, error) {
	var ref commentRef
	ok, err := s.getItem(ctx, CommentRefKey(commentID), true, &ref)
	if err != nil || !ok {
		return collab.Comment{}, Access{}, notFoundOr(err, "comment %s not found", commentID)
	}
	t, id := ref.ResourceType, ref.ResourceID
	ck, rk, uk := CommentKey(t, id, ref.CreatedAt, commentID), ResourceKey(t, id), CollaboratorKey(t, id, userID)
	var c collab.Comment
	var a Access
	foundComment, foundResource := false, false
	err = s.batchGet(ctx, []Key{ck, rk, uk}, true, func(it map[string]types.AttributeValue) error {
		switch itemKey(it) {
		case ck:
			foundComment = s.decode(it, &c)
		case rk:
			foundResource = s.decode(it, &a.Resource)
		case uk:
			a.Collaborator = true
		}
		return nil
	})
	if err != nil {
		return collab.Comment{}, Access{}, fmt.Errorf("store: read comment %s and access: %w", commentID, err)
	}
	switch {
	case !foundComment:
		return c, Access{}, errs.New(errs.NotFound, "comment %s not found", commentID)
	case !foundResource:
		return c, Access{}, errs.New(errs.NotFound, "%s %s not found", t, id)
	}
	a.Owner = a.Resource.OwnerID == userID
	return c, a, nil
}

// CommentRef reads a comment's reference item: the comment as far as its
// reference knows it (id, resource, author, creation), without its text.
// A missing reference is NotFound.
func (s Collab) CommentRef(ctx context.Context, commentID string) (collab.Comment, error) {
	var ref commentRef
	ok, err := s.getItem(ctx, CommentRefKey(commentID), true, &ref)
	if err != nil || !ok {
		return collab.Comment{}, notFoundOr(err, "comment %s not found", commentID)
	}
	return collab.Comment{CommentID: commentID, ResourceType: ref.ResourceType, ResourceID: ref.ResourceID, CreatedAt: ref.CreatedAt, UserID: ref.UserID}, nil
}

// GetComment finds a comment by id (through its reference item).
func (s Collab) GetComment(ctx context.Context, commentID string) (collab.Comment, error) {
	ref, err := s.CommentRef(ctx, commentID)
	if err != nil {
		return ref, err
	}
	var c collab.Comment
	ok, err := s.getItem(ctx, CommentKey(ref.ResourceType, ref.ResourceID, ref.CreatedAt, commentID), true, &c)
	if err != nil || !ok {
		return c, notFoundOr(err, "comment %s not found", commentID)
	}
	return c, nil
}

// ListComments returns one page of a resource's top-level comments, oldest
// first (replies are listed under their parent).
func (s Collab) ListComments(ctx context.Context, t collab.ResourceType, id string, p Page) ([]collab.Comment, string, error) {
	var out []collab.Comment
	next, err := s.queryPage(ctx, query{pk: ResourcePK(t, id), skPrefix: "COMMENT#", page: p, topLevel: true}, decodeInto(s.Store, &out))
	return out, next, err
}

// ListReplies returns one page of a comment's replies, oldest first (GSI1).
func (s Collab) ListReplies(ctx context.Context, parentID string, p Page) ([]collab.Comment, string, error) {
	var out []collab.Comment
	next, err := s.queryPage(ctx, query{index: IndexGSI1, pk: CommentPK(parentID), skPrefix: "CREATED#", page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// EditComment replaces a comment's text, keeping the previous one in
// editHistory, on the condition that the author is by, it is not deleted
// and nobody changed it meanwhile.
func (s Collab) EditComment(ctx context.Context, c collab.Comment, text string, mentions []string, by string, now time.Time) (collab.Comment, error) {
	at := Timestamp(now)
	prev, err := attributevalue.Marshal([]collab.Edit{{Text: c.Text, EditedAt: at}})
	if err != nil {
		return c, err
	}
	ment, err := attributevalue.Marshal(mentions)
	if err != nil {
		return c, err
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: CommentKey(c.ResourceType, c.ResourceID, c.CreatedAt, c.CommentID).AV(),
		UpdateExpression:         aws.String("SET #text = :text, mentions = :m, updatedAt = :at, editHistory = list_append(if_not_exists(editHistory, :empty), :prev)"),
		ConditionExpression:      aws.String("userId = :by AND attribute_not_exists(deletedAt) AND #text = :old"),
		ExpressionAttributeNames: map[string]string{"#text": "text"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":text": &types.AttributeValueMemberS{Value: text}, ":m": ment, ":at": &types.AttributeValueMemberS{Value: at},
			":empty": &types.AttributeValueMemberL{}, ":prev": prev, ":by": &types.AttributeValueMemberS{Value: by},
			":old": &types.AttributeValueMemberS{Value: c.Text},
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		// This very edit, done already (its answer was lost, the SDK sent
		// it again): the comment has its text and time. Not applied again:
		// the history would hold the old text twice.
		var cur collab.Comment
		if attributevalue.UnmarshalMap(cf.Item, &cur) == nil && cur.Text == text && cur.UpdatedAt == at && cur.DeletedAt == "" {
			return cur, nil
		}
		return c, errs.New(errs.Conflict, "comment %s was deleted or changed meanwhile", c.CommentID)
	}
	if err != nil {
		return c, fmt.Errorf("store: edit comment: %w", err)
	}
	var nc collab.Comment
	if err := attributevalue.UnmarshalMap(out.Attributes, &nc); err != nil {
		return c, fmt.Errorf("store: decode comment: %w", err)
	}
	return nc, nil
}

// DeleteComment soft-deletes a comment: deletedAt is set and its text,
// mentions and history are removed.
func (s Collab) DeleteComment(ctx context.Context, c collab.Comment, by string, now time.Time) error {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: CommentKey(c.ResourceType, c.ResourceID, c.CreatedAt, c.CommentID).AV(),
		UpdateExpression:         aws.String("SET deletedAt = :at, #text = :blank REMOVE mentions, editHistory"),
		ConditionExpression:      aws.String("userId = :by AND attribute_not_exists(deletedAt)"),
		ExpressionAttributeNames: map[string]string{"#text": "text"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": &types.AttributeValueMemberS{Value: Timestamp(now)}, ":blank": &types.AttributeValueMemberS{Value: ""},
			":by": &types.AttributeValueMemberS{Value: by},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		if d, ok := cf.Item["deletedAt"].(*types.AttributeValueMemberS); ok && d.Value == Timestamp(now) {
			return nil // this very delete, done already (its answer was lost)
		}
		return errs.New(errs.Conflict, "comment %s is already deleted", c.CommentID)
	}
	if err != nil {
		return fmt.Errorf("store: delete comment: %w", err)
	}
	return nil
}

// AddReaction writes a user's reaction; adding the same one again is a
// no-op that reports false.
func (s Collab) AddReaction(ctx context.Context, r collab.Reaction) (bool, error) {
	it, err := marshal(head{Key: ReactionKey(r.CommentID, r.UserID, r.Emoji), ItemType: TypeReaction}, r)
	if err != nil {
		return false, err
	}
	if holding(ctx) {
		// held: it commits only if the reaction is new (else the request
		// runs the ordinary way and finds it)
		return true, s.transactWrite(ctx, []types.TransactWriteItem{put(s.Table, it, "attribute_not_exists(PK)")})
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: add reaction: %w", err)
	}
	return true, nil
}

// RemoveReaction deletes a user's reaction. None there is the same
// success: a retried removal (or one whose answer was lost) finds the
// table as asked (a delete of nothing writes no stream record).
func (s Collab) RemoveReaction(ctx context.Context, commentID, userID, emoji string) error {
	key := ReactionKey(commentID, userID, emoji).AV()
	if holding(ctx) {
		return s.transactWrite(ctx, []types.TransactWriteItem{{Delete: &types.Delete{TableName: aws.String(s.Table), Key: key}}})
	}
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: key})
	if err != nil {
		return fmt.Errorf("store: remove reaction: %w", err)
	}
	return nil
}

// GetReaction reads one user's reaction.
func (s Collab) GetReaction(ctx context.Context, commentID, userID, emoji string) (collab.Reaction, error) {
	var r collab.Reaction
	ok, err := s.get(ctx, ReactionKey(commentID, userID, emoji), &r)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "no %s reaction of %s on comment %s", emoji, userID, commentID)
	}
	return r, err
}

// ListReactions returns one page of a comment's reactions.
func (s Collab) ListReactions(ctx context.Context, commentID string, p Page) ([]collab.Reaction, string, error) {
	var out []collab.Reaction
	next, err := s.queryPage(ctx, query{pk: CommentPK(commentID), skPrefix: "REACTION#", page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

type countsItem struct {
	Counts map[string]int `dynamodbav:"counts"`
}

// ReactionCounts reads the derived counts of several comments with
// BatchGetItem (zero counts left out).
func (s Collab) ReactionCounts(ctx context.Context, commentIDs []string) (map[string]map[string]int, error) {
	keys := make([]Key, len(commentIDs))
	for i, id := range commentIDs {
		keys[i] = CountsKey(id)
	}
	out := map[string]map[string]int{}
	err := s.batchGet(ctx, keys, false, func(it map[string]types.AttributeValue) error {
		var c countsItem
		if !s.decode(it, &c) {
			return nil
		}
		pk, _ := it[AttrPK].(*types.AttributeValueMemberS)
		if pk == nil {
			return nil
		}
		m := map[string]int{}
		for e, n := range c.Counts {
			if n > 0 {
				m[e] = n
			}
		}
		out[strings.TrimPrefix(pk.Value, "COMMENT#")] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read reaction counts: %w", err)
	}
	return out, nil
}

// CountReaction applies one reaction change (+1 or -1) to a comment's
// counts exactly once: a marker item for the source change (its stream
// event id) is written in the same transaction, so a redelivered record
// changes nothing. One transaction per record (O(1) requests). A comment's
// first count creates the counts map with that emoji in it (an empty map
// is never written: DynamoDB Local's stream would mangle it). countsExist
// says which to try first — adding to the map or creating it; both are
// conditional, so a wrong guess costs one more transaction, never a wrong
// count.
func (s Collab) CountReaction(ctx context.Context, commentID, emoji string, delta int, sourceID string, at time.Time, keep time.Duration, countsExist bool) (applied bool, err error) {
	marker := s.Cooking.counted(TypeReactionCountMarker, at, keep).MarkerIn(CommentPK(commentID), sourceID)
	d := &types.AttributeValueMemberN{Value: fmt.Sprint(delta)}
	vals := map[string]types.AttributeValue{
		":t": &types.AttributeValueMemberS{Value: TypeReactionCounts}, ":true": &types.AttributeValueMemberBOOL{Value: true},
		":c": &types.AttributeValueMemberS{Value: commentID},
	}
	add := &types.Update{
		TableName: aws.String(s.Table), Key: CountsKey(commentID).AV(),
		UpdateExpression:          aws.String("ADD counts.#e :d SET itemType = :t, derived = :true, commentId = :c"),
		ConditionExpression:       aws.String("attribute_exists(counts)"),
		ExpressionAttributeNames:  map[string]string{"#e": emoji},
		ExpressionAttributeValues: withValue(vals, ":d", d),
	}
	create := &types.Update{
		TableName: aws.String(s.Table), Key: CountsKey(commentID).AV(),
		UpdateExpression:          aws.String("SET counts = :init, itemType = :t, derived = :true, commentId = :c"),
		ConditionExpression:       aws.String("attribute_not_exists(counts)"),
		ExpressionAttributeValues: withValue(vals, ":init", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{emoji: d}}),
	}
	first, second := add, create
	if !countsExist {
		first, second = create, add
	}
	for attempt := 0; attempt < 4; attempt++ {
		upd := first
		if attempt%2 == 1 {
			upd = second
		}
		_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			marker, {Update: upd},
		}})
		reasons := cancelReasons(err)
		switch {
		case err == nil:
			return true, nil
		case reasons != nil && reasons[0] == "ConditionalCheckFailed":
			return false, nil // counted before
		case reasons != nil && reasons[1] == "ConditionalCheckFailed":
			continue // no map yet (add) or one appeared meanwhile (create): the other way
		}
		return false, fmt.Errorf("store: count reaction on %s: %w", commentID, err)
	}
	return false, errors.New("store: reaction counts kept changing; retry")
}

// GetPreferences reads a user's preferences, the defaults when none are
// stored.
func (s Collab) GetPreferences(ctx context.Context, userID string) (collab.Preferences, error) {
	p := collab.DefaultPreferences(userID)
	_, err := s.get(ctx, PreferencesKey(userID), &p)
	return p, err
}

// PutPreferences stores a user's preferences.
func (s Collab) PutPreferences(ctx context.Context, p collab.Preferences) error {
	it, err := marshal(head{Key: PreferencesKey(p.UserID), ItemType: TypePreferences}, p)
	if err != nil {
		return err
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: it}); err != nil {
		return fmt.Errorf("store: put preferences: %w", err)
	}
	return nil
}

// GetProfile reads a user's profile; NotFound when there is none.
func (s Collab) GetProfile(ctx context.Context, userID string) (collab.Profile, error) {
	var p collab.Profile
	ok, err := s.get(ctx, ProfileKey(userID), &p)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "user %s has no profile", userID)
	}
	return p, err
}

// PutProfile stores a user's profile (GSI1 USER#<id> / PROFILE).
func (s Collab) PutProfile(ctx context.Context, p collab.Profile) (collab.Profile, error) {
	k := ProfileKey(p.UserID)
	set := []string{"itemType = :t", "userId = :u", "#n = :n", "updatedAt = :at", "GSI1PK = :gpk", "GSI1SK = :gsk", "createdAt = if_not_exists(createdAt, :at)"}
	vals := map[string]types.AttributeValue{":t": strAV(TypeProfile), ":u": strAV(p.UserID), ":n": strAV(p.Name), ":at": strAV(p.UpdatedAt),
		":gpk": strAV(k.PK), ":gsk": strAV(k.SK)}
	var remove []string
	for name, v := range map[string]string{"email": p.Email, "locale": p.Locale} {
		if v == "" {
			remove = append(remove, name)
			continue
		}
		set = append(set, name+" = :"+name)
		vals[":"+name] = strAV(v)
	}
	slices.Sort(set)
	slices.Sort(remove)
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: k.AV(),
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: map[string]string{"#n": "name"},
		ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueAllNew})
	if err != nil {
		return collab.Profile{}, fmt.Errorf("store: put profile: %w", err)
	}
	var stored collab.Profile
	if err := attributevalue.UnmarshalMap(out.Attributes, &stored); err != nil {
		return collab.Profile{}, fmt.Errorf("store: decode profile: %w", err)
	}
	return stored, nil
}

// PutNotifications writes in-app notifications (derived; keys from the
// source change, so writing them again is harmless).
func (s Collab) PutNotifications(ctx context.Context, ns []collab.Notification) error {
	items, err := NotificationItems(ns)
	if err != nil {
		return err
	}
	return s.BatchPut(ctx, items)
}

// NotificationsMissing returns those of ns that are not stored, as far as
// an eventually consistent read knows (one just written may be returned):
// what a caller that writes a notification again and again (a recipe's
// top-10 one at every raise) need write. A read of a notification costs a
// sixth of its write (half a read unit, against a write unit that takes
// three of its partition's read units).
func (s Collab) NotificationsMissing(ctx context.Context, ns []collab.Notification) ([]collab.Notification, error) {
	keys := make([]Key, len(ns))
	for i, n := range ns {
		keys[i] = NotificationKey(n.UserID, n.CreatedAt, n.NotificationID)
	}
	stored := map[Key]bool{}
	if err := s.batchGet(ctx, keys, false, func(it map[string]types.AttributeValue) error {
		stored[itemKey(it)] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: read notifications: %w", err)
	}
	var out []collab.Notification
	for i, n := range ns {
		if !stored[keys[i]] {
			out = append(out, n)
		}
	}
	return out, nil
}

// NotificationItems are the items PutNotifications writes, for a caller
// that shares batch writes (PutEach).
func NotificationItems(ns []collab.Notification) ([]map[string]types.AttributeValue, error) {
	items := make([]map[string]types.AttributeValue, 0, len(ns))
	for _, n := range ns {
		it, err := marshal(head{Key: NotificationKey(n.UserID, n.CreatedAt, n.NotificationID), ItemType: TypeNotification, Derived: true}, n)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// ListNotifications returns one page of a user's live notifications, newest
// first (expired ones are never returned).
func (s Collab) ListNotifications(ctx context.Context, userID string, now time.Time, p Page) ([]collab.Notification, string, error) {
	var out []collab.Notification
	next, err := s.queryPage(ctx, query{pk: UserPK(userID), skPrefix: "NOTIFICATION#", desc: true, page: p, liveAt: now.Unix()}, decodeInto(s.Store, &out))
	return out, next, err
}

// People reads the profiles and preferences of several users with
// BatchGetItem (100 keys a call, unprocessed keys retried): a user with no
// profile is absent from profiles; one with no preferences gets the
// defaults.
func (s Collab) People(ctx context.Context, userIDs []string) (map[string]collab.Profile, map[string]collab.Preferences, error) {
	profiles := map[string]collab.Profile{}
	prefs := map[string]collab.Preferences{}
	var keys []Key
	for _, u := range userIDs {
		if _, ok := prefs[u]; ok || u == "" {
			continue
		}
		prefs[u] = collab.DefaultPreferences(u)
		keys = append(keys, ProfileKey(u), PreferencesKey(u))
	}
	err := s.batchGet(ctx, keys, false, func(it map[string]types.AttributeValue) error {
		switch itemTypeOf(it) {
		case TypeProfile:
			var p collab.Profile
			if s.decode(it, &p) {
				profiles[p.UserID] = p
			}
		case TypePreferences:
			var p collab.Preferences
			if s.decode(it, &p) {
				prefs[p.UserID] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: read people: %w", err)
	}
	return profiles, prefs, nil
}

// ResourceRef names a resource.
type ResourceRef struct {
	Type collab.ResourceType
	ID   string
}

// CollabReads reads, with one BatchGetItem round (per 100 keys) however
// many changes ask, strongly consistent: resources, and comments by id as
// their id reference items hold them — id, resource, author, createdAt, not
// the text (CommentTexts reads that). A resource or comment that does not
// exist is absent from the result.
func (s Collab) CollabReads(ctx context.Context, resources []ResourceRef, commentIDs []string) (map[ResourceRef]collab.Resource, map[string]collab.Comment, error) {
	res := map[ResourceRef]collab.Resource{}
	comments := map[string]collab.Comment{}
	keys := make([]Key, 0, len(resources)+len(commentIDs))
	for _, r := range resources {
		keys = append(keys, ResourceKey(r.Type, r.ID))
	}
	for _, id := range commentIDs {
		keys = append(keys, CommentRefKey(id))
	}
	err := s.batchGet(ctx, keys, true, func(it map[string]types.AttributeValue) error {
		switch itemTypeOf(it) {
		case TypeResource:
			var r collab.Resource
			if s.decode(it, &r) {
				res[ResourceRef{r.ResourceType, r.ResourceID}] = r
			}
		case TypeCommentRef:
			var ref commentRef
			if !s.decode(it, &ref) {
				return nil
			}
			comments[ref.CommentID] = collab.Comment{CommentID: ref.CommentID, ResourceType: ref.ResourceType, ResourceID: ref.ResourceID, CreatedAt: ref.CreatedAt, UserID: ref.UserID}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: read resources and comments: %w", err)
	}
	return res, comments, nil
}

// CommentTexts reads whole comments, given what CollabReads returned of
// them, with one BatchGetItem round, strongly consistent.
func (s Collab) CommentTexts(ctx context.Context, heads []collab.Comment) (map[string]collab.Comment, error) {
	keys := make([]Key, len(heads))
	for i, h := range heads {
		keys[i] = CommentKey(h.ResourceType, h.ResourceID, h.CreatedAt, h.CommentID)
	}
	out := map[string]collab.Comment{}
	err := s.batchGet(ctx, keys, true, func(it map[string]types.AttributeValue) error {
		var c collab.Comment
		if s.decode(it, &c) {
			out[c.CommentID] = c
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read comments: %w", err)
	}
	return out, nil
}

// withValue is vals plus one more expression value (vals is not changed).
func withValue(vals map[string]types.AttributeValue, k string, v types.AttributeValue) map[string]types.AttributeValue {
	out := maps.Clone(vals)
	out[k] = v
	return out
}
