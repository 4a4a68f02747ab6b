package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/room"
)

func activityAV(a room.Activity) (map[string]types.AttributeValue, error) {
	return marshal(head{Key: ActivityKey(a.RoomID, a.CreatedAt, a.ActivityID), ItemType: TypeActivity, Derived: true}, a)
}

// ListActivities returns one page of a room's live activities, newest first.
// Entries past their ttl are never returned, deleted yet or not.
func (s Rooms) ListActivities(ctx context.Context, roomID string, now time.Time, p Page) ([]room.Activity, string, error) {
	var out []room.Activity
	next, err := s.queryPage(ctx, query{pk: RoomPK(roomID), skPrefix: SKPrefixActivity, desc: true, page: p, liveAt: now.Unix()}, decodeInto(s.Store, &out))
	return out, next, err
}

// ActivitiesAfter returns one page of a room's live activities created
// strictly after the timestamp, oldest first (for polling clients: pass the
// newest createdAt seen).
func (s Rooms) ActivitiesAfter(ctx context.Context, roomID, after string, now time.Time, p Page) ([]room.Activity, string, error) {
	var out []room.Activity
	q := query{
		pk: RoomPK(roomID), skPrefix: SKPrefixActivity,
		// '$' sorts right after '#': every entry of the timestamp itself is excluded.
		skFrom: SKPrefixActivity + after + "$", skTo: "ACTIVITY$",
		page: p, liveAt: now.Unix(),
	}
	next, err := s.queryPage(ctx, q, decodeInto(s.Store, &out))
	return out, next, err
}

// Derived is what the projector writes for a room in one go.
type Derived struct {
	Combined      []room.CombinedVersion
	Compatibility []room.CompatibilityVersion
	Activities    []room.Activity
}

// PutDerived writes derived items in batches of 25. Their keys come from the
// source change, so writing them again is harmless.
func (s Rooms) PutDerived(ctx context.Context, d Derived) error {
	items, err := DerivedItems(d)
	if err != nil {
		return err
	}
	return s.BatchPut(ctx, items)
}

// DerivedItems are the items PutDerived writes, for a caller that shares
// batch writes between several rooms.
func DerivedItems(d Derived) ([]map[string]types.AttributeValue, error) {
	items := make([]map[string]types.AttributeValue, 0, len(d.Combined)+len(d.Compatibility)+len(d.Activities))
	for _, c := range d.Combined {
		it, err := marshal(head{Key: CombinedKey(c.RoomID, c.Timestamp), ItemType: TypeCombinedCriteria, Derived: true}, c)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	for _, p := range d.Compatibility {
		it, err := marshal(head{Key: CompatibilityKey(p.RoomID, p.Timestamp), ItemType: TypeCompatibility, Derived: true}, p)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	for _, a := range d.Activities {
		it, err := activityAV(a)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// DeleteRoomCascade deletes what is left of a deleted room: each member's
// UserRoom item, then every item of the room's partition, then its chat's
// messages (the chat room's item stays, sealed: see DeleteRoom), in batches
// of 25 with unprocessed-item retry. It is safe to run again (a second run
// finds less or nothing); the UserRoom items go first so that a run cut
// short still finds the Member items that name them. It returns how many
// items it deleted.
func (s Rooms) DeleteRoomCascade(ctx context.Context, roomID string) (int, error) {
	var members, partition []Key
	err := s.queryAll(ctx, query{pk: RoomPK(roomID)}, func(it map[string]types.AttributeValue) error {
		var h struct {
			Key
			ItemType string `dynamodbav:"itemType"`
			UserID   string `dynamodbav:"userId"`
		}
		if err := attributevalue.UnmarshalMap(it, &h); err != nil {
			return err
		}
		if h.ItemType == TypeMember && h.UserID != "" {
			members = append(members, UserRoomKey(h.UserID, roomID))
		}
		partition = append(partition, h.Key)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := s.BatchDelete(ctx, members); err != nil {
		return 0, fmt.Errorf("store: cascade %s: user rooms: %w", roomID, err)
	}
	if err := s.BatchDelete(ctx, partition); err != nil {
		return len(members), fmt.Errorf("store: cascade %s: partition: %w", roomID, err)
	}
	var messages []Key
	err = s.queryAll(ctx, query{pk: ChatRoomPK(roomID), skPrefix: SKPrefixMessage}, func(it map[string]types.AttributeValue) error {
		messages = append(messages, itemKey(it))
		return nil
	})
	if err == nil {
		err = s.BatchDelete(ctx, messages)
	}
	if err != nil {
		return len(members) + len(partition), fmt.Errorf("store: cascade %s: chat messages: %w", roomID, err)
	}
	return len(members) + len(partition) + len(messages), nil
}

// BatchDelete deletes items by key in batches of 25 with unprocessed-item
// retry.
func (s Rooms) BatchDelete(ctx context.Context, keys []Key) error {
	for start := 0; start < len(keys); start += 25 {
		end := min(start+25, len(keys))
		reqs := make([]types.WriteRequest, 0, end-start)
		for _, k := range keys[start:end] {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k.AV()}})
		}
		if err := s.batchWrite(ctx, reqs); err != nil {
			return err
		}
	}
	return nil
}
