package projections

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Effects is what one change asks of the projector for its room.
type Effects struct {
	RoomID string
	// SnapshotAt, when set, asks for the room's combined criteria and
	// compatibility as of that timestamp.
	SnapshotAt string
	// Activities are the feed entries the change means.
	Activities []room.Activity
	// DeleteRoom asks for the room's cascade delete.
	DeleteRoom bool
	// Version is the criteria version a Criteria insert carries: the
	// snapshot read need not fetch it again.
	Version *room.StoredCriteria
}

// EffectsOf maps a change to its effects (false: none). It is pure: ids and
// timestamps come from the change — the item's own timestamps, or the
// record's creation time for a removal, and the record's eventID — so a
// redelivered or replayed record asks for exactly the same writes.
func EffectsOf(c stream.Change) (Effects, bool, error) {
	if c.Derived() {
		return Effects{}, false, nil
	}
	removed := c.Kind == stream.Remove || c.Kind == stream.TTLRemove
	switch c.ItemType() {
	case store.TypeRoom:
		if removed {
			var r room.Room
			if err := c.DecodeOld(&r); err != nil {
				return Effects{}, false, err
			}
			return Effects{RoomID: r.RoomID, DeleteRoom: true}, true, nil
		}
		var r room.Room
		if err := c.DecodeNew(&r); err != nil {
			return Effects{}, false, err
		}
		if c.Kind == stream.Insert {
			return Effects{RoomID: r.RoomID, Activities: []room.Activity{
				newActivity(r.RoomID, c.EventID, room.ActivityRoomCreated, r.CreatedAt, room.SenderUser, r.CreatedByUserID),
			}}, true, nil
		}
		var old room.Room
		if err := c.DecodeOld(&old); err != nil {
			return Effects{}, false, err
		}
		if old.Context.CombineMode != r.Context.CombineMode && r.UpdatedAt != "" {
			return Effects{RoomID: r.RoomID, SnapshotAt: r.UpdatedAt}, true, nil
		}
	case store.TypeMember:
		var m room.Member
		switch {
		case c.Kind == stream.Insert:
			if err := c.DecodeNew(&m); err != nil {
				return Effects{}, false, err
			}
			a := newActivity(m.RoomID, c.EventID, room.ActivityMemberJoined, m.JoinedAt, room.SenderUser, m.UserID)
			a.UserID = m.UserID
			return Effects{RoomID: m.RoomID, SnapshotAt: m.JoinedAt, Activities: []room.Activity{a}}, true, nil
		case removed:
			if err := c.DecodeOld(&m); err != nil {
				return Effects{}, false, err
			}
			at := store.Timestamp(c.At)
			a := newActivity(m.RoomID, c.EventID, room.ActivityMemberLeft, at, room.SenderUser, m.UserID)
			a.UserID = m.UserID
			return Effects{RoomID: m.RoomID, SnapshotAt: at, Activities: []room.Activity{a}}, true, nil
		}
	case store.TypeCriteria:
		if c.Kind != stream.Insert {
			return Effects{}, false, nil
		}
		v, err := decodeCriteriaVersion(c.New)
		if err != nil {
			return Effects{}, false, err
		}
		a := newActivity(v.RoomID, c.EventID, room.ActivityCriteriaUpdated, v.Timestamp, room.SenderUser, v.UserID)
		a.UserID = v.UserID
		return Effects{RoomID: v.RoomID, SnapshotAt: v.Timestamp, Activities: []room.Activity{a},
			Version: &room.StoredCriteria{SK: c.String("SK"), CriteriaVersion: v}}, true, nil
	case store.TypeListing:
		var l room.Listing
		switch c.Kind {
		case stream.Insert:
			if err := c.DecodeNew(&l); err != nil {
				return Effects{}, false, err
			}
			a := newActivity(l.RoomID, c.EventID, room.ActivityListingPinned, l.AddedAt, room.SenderUser, l.AddedByUserID)
			a.ListingID, a.Title = l.ListingID, l.Title
			return Effects{RoomID: l.RoomID, Activities: []room.Activity{a}}, true, nil
		case stream.Modify:
			var old room.Listing
			if err := c.DecodeNew(&l); err != nil {
				return Effects{}, false, err
			}
			if err := c.DecodeOld(&old); err != nil {
				return Effects{}, false, err
			}
			if old.Status == l.Status {
				return Effects{}, false, nil
			}
			a := newActivity(l.RoomID, c.EventID, room.ActivityListingStatusChanged, l.UpdatedAt, room.SenderUser, l.UpdatedByUserID)
			a.ListingID, a.Title, a.From, a.To = l.ListingID, l.Title, old.Status, l.Status
			return Effects{RoomID: l.RoomID, Activities: []room.Activity{a}}, true, nil
		}
	case store.TypeMessage:
		var m chat.Message
		if c.Kind != stream.Insert {
			return Effects{}, false, nil
		}
		if err := c.DecodeNew(&m); err != nil {
			return Effects{}, false, err
		}
		if !m.SearchRoom {
			return Effects{}, false, nil // a plain chat room's message: no feed
		}
		a := newActivity(m.RoomID, c.EventID, room.ActivityChatMessage, m.CreatedAt, room.SenderUser, m.UserID)
		a.UserID, a.MessageID, a.Excerpt = m.UserID, m.MessageID, chat.Excerpt(m.Content)
		return Effects{RoomID: m.RoomID, Activities: []room.Activity{a}}, true, nil
	}
	return Effects{}, false, nil
}

// ExpectedActivities are the feed entries a stored item calls for: what
// EffectsOf asks for when the item is inserted, with an id from the item's
// key instead of a stream record's (drift looks for entries by what they
// say, and a repair writes them under that id). Items that call for none,
// or cannot be decoded, give none.
func ExpectedActivities(item map[string]types.AttributeValue) []room.Activity {
	pk, _ := item[store.AttrPK].(*types.AttributeValueMemberS)
	sk, _ := item[store.AttrSK].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(pk.Value + "\x00" + sk.Value))
	c := stream.Change{Kind: stream.Insert, EventID: "rebuilt-" + hex.EncodeToString(sum[:10]), New: item,
		Keys: map[string]types.AttributeValue{store.AttrPK: pk, store.AttrSK: sk}}
	e, ok, err := EffectsOf(c)
	if err != nil || !ok {
		return nil
	}
	return e.Activities
}

// newActivity builds a feed entry; its ttl is 90 days after the change.
func newActivity(roomID, id, typ, at, senderType, senderID string) room.Activity {
	var ttl int64
	if t, err := store.ParseTimestamp(at); err == nil {
		ttl = t.Add(room.ActivityTTL).Unix()
	}
	return room.Activity{RoomID: roomID, ActivityID: id, Type: typ, CreatedAt: at, SenderType: senderType, SenderID: senderID, TTL: ttl}
}

// compatibilityActivity is the copilot's feed entry for a compatibility
// snapshot; one per snapshot, so its id comes from the snapshot's timestamp.
func compatibilityActivity(p room.CompatibilityVersion) room.Activity {
	a := newActivity(p.RoomID, "compatibility-"+p.Timestamp, room.ActivityCompatibilityUpdated, p.Timestamp, room.SenderAICopilot, room.CopilotID)
	score := p.ScorePercent
	a.ScorePercent, a.Level = &score, p.Level
	return a
}
