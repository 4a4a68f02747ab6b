package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/drift"
)

// TypeResourceAccess is a resource member's access item: one for its
// owner, one for each collaborator, role collab.RoleOwner or
// collab.RoleCollaborator. It lets a write check "owner or collaborator"
// as one condition of its transaction, where the two facts live on two
// items (the resource's ownerId, the collaborator item) that no single
// condition can OR. Nothing removes a collaborator or a resource today;
// whatever does must delete the access item in the same transaction, or
// the removed member keeps their access.
const TypeResourceAccess = "ResourceAccess"

// AccessKey is the access item of a member of a resource:
// RESOURCE#<TYPE>#<id> / ACCESS#<userId>.
func AccessKey(t collab.ResourceType, id, userID string) Key {
	return Key{ResourcePK(t, id), "ACCESS#" + userID}
}

// accessItem is what an access item holds.
type accessItem struct {
	UserID       string              `dynamodbav:"userId"`
	ResourceType collab.ResourceType `dynamodbav:"resourceType"`
	ResourceID   string              `dynamodbav:"resourceId"`
	Role         string              `dynamodbav:"role"`
}

// grantAccess is the transaction item that gives userID role on a
// resource. An owner's access is never lowered: the owner who accepts an
// invite sent to their own e-mail address stays the owner.
func (s Collab) grantAccess(t collab.ResourceType, id, userID, role string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: s.accessUpdate(t, id, userID, role, role != collab.RoleOwner)}
}

// accessUpdate sets an access item; with keep, a role already there stays.
func (s Collab) accessUpdate(t collab.ResourceType, id, userID, role string, keep bool) *types.Update {
	roleValue := ":role"
	if keep {
		roleValue = "if_not_exists(#role, :role)"
	}
	return &types.Update{
		TableName: aws.String(s.Table), Key: AccessKey(t, id, userID).AV(),
		UpdateExpression:         aws.String("SET itemType = :type, userId = :user, resourceType = :rt, resourceId = :rid, #role = " + roleValue),
		ExpressionAttributeNames: map[string]string{"#role": "role"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":type": strAV(TypeResourceAccess), ":user": strAV(userID), ":rt": strAV(string(t)), ":rid": strAV(id), ":role": strAV(role),
		},
	}
}

// updateInput is a transaction's Update as an UpdateItem of its own.
func updateInput(u *types.Update) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
	}
}

// AccessCheck is the transaction item that checks, in the transaction of
// a write, that userID is a member of the resource (ownerOnly: its owner)
// by its access item, in place of reading the resource and the
// collaborator item before the write. A resource written before access
// items existed has none until BackfillResourceAccess has run: the check
// fails, and the caller reads the access the ordinary way.
func (s Collab) AccessCheck(t collab.ResourceType, id, userID string, ownerOnly bool) types.TransactWriteItem {
	return s.roleCheck(AccessKey(t, id, userID), TypeResourceAccess, userID, ownerOnly, collab.RoleOwner)
}

// roleCheck is the transaction item that holds when the item at k is of
// itemType and userID's, and, with ownerOnly, its role is owner.
func (s Collab) roleCheck(k Key, itemType, userID string, ownerOnly bool, owner string) types.TransactWriteItem {
	cond := "attribute_exists(PK) AND itemType = :type AND userId = :user"
	vals := map[string]types.AttributeValue{":type": strAV(itemType), ":user": strAV(userID)}
	var names map[string]string
	if ownerOnly {
		cond += " AND #role = :owner"
		vals[":owner"] = strAV(owner)
		names = map[string]string{"#role": "role"}
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.Table), Key: k.AV(),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
	}}
}

// AccessBackfillStats count a BackfillResourceAccess's progress.
type AccessBackfillStats struct {
	Scanned int64 // items read
	Granted int64 // access items written
	Raced   int64 // left: a resource or collaborator changed after the scan
}

// BackfillResourceAccess writes the access items the Resource and
// Collaborator items call for and the table lacks (or holds wrong), for
// resources written before access items existed: what `projector
// rebuild` repairs of drift.KindAccess, by the same rule and the same
// conditional writes (an owner stays an owner; a repair refused because
// the resource or collaborator changed after the scan is counted in Raced
// and left), but only what is missing: it deletes nothing. The identities
// come from the items' keys, as verify reads them, so a stored item whose
// attributes name another resource grants nothing there. Running it again
// writes nothing. progress, if set, is called after every scanned page,
// never concurrently.
func (s Collab) BackfillResourceAccess(ctx context.Context, segments int, progress func(AccessBackfillStats)) (AccessBackfillStats, error) {
	segments = max(segments, 1)
	var st AccessBackfillStats
	facts := make([]*drift.Facts, segments)
	for i := range facts {
		facts[i] = drift.NewFacts()
	}
	var mu sync.Mutex
	err := s.scanSegments(ctx, segments, dynamodb.ScanInput{
		ConsistentRead:   aws.Bool(true),
		FilterExpression: aws.String("itemType IN (:resource, :collaborator, :access)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":resource": strAV(TypeResource), ":collaborator": strAV(TypeCollaborator), ":access": strAV(TypeResourceAccess)},
	}, func(seg int, out *dynamodb.ScanOutput) error {
		mu.Lock()
		defer mu.Unlock()
		for _, it := range out.Items {
			addFact(facts[seg], it)
		}
		st.Scanned += int64(out.ScannedCount)
		if progress != nil {
			progress(st)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	all := drift.NewFacts()
	for _, f := range facts {
		all.Merge(f)
	}
	for _, d := range drift.Check(all) {
		if d.Kind != drift.KindAccess || d.Stray {
			continue
		}
		switch err := s.Upkeep.repairAccess(ctx, *d.Access, false); {
		case cancelReasons(err) != nil && !ddb.Transient(err):
			st.Raced++
		case err != nil:
			return st, fmt.Errorf("store: backfill access %s: %w", d.Key, err)
		default:
			st.Granted++
		}
		if progress != nil {
			progress(st)
		}
	}
	return st, nil
}
