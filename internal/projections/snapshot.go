package projections

import (
	"sort"

	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Trigger asks for a room's snapshots as of a timestamp.
type Trigger struct {
	RoomID string
	At     string // store.TimeLayout
}

// TriggerOf says which snapshot a change asks for, if any: a new criteria
// version (as of its timestamp), a member joining (as of joinedAt) or
// leaving (as of the record's creation time). Derived items and every other
// change ask for nothing.
func TriggerOf(c stream.Change) (Trigger, bool, error) {
	if c.Derived() {
		return Trigger{}, false, nil
	}
	switch c.ItemType() {
	case store.TypeCriteria:
		if c.Kind != stream.Insert && c.Kind != stream.Modify {
			return Trigger{}, false, nil
		}
		var v room.CriteriaVersion
		if err := c.DecodeNew(&v); err != nil {
			return Trigger{}, false, err
		}
		return Trigger{RoomID: v.RoomID, At: v.Timestamp}, true, nil
	case store.TypeMember:
		switch c.Kind {
		case stream.Insert:
			var m room.Member
			if err := c.DecodeNew(&m); err != nil {
				return Trigger{}, false, err
			}
			return Trigger{RoomID: m.RoomID, At: m.JoinedAt}, true, nil
		case stream.Remove, stream.TTLRemove:
			var m room.Member
			if err := c.DecodeOld(&m); err != nil {
				return Trigger{}, false, err
			}
			return Trigger{RoomID: m.RoomID, At: store.Timestamp(c.At)}, true, nil
		}
	}
	return Trigger{}, false, nil
}

// Snapshot computes a room's combined criteria and compatibility as of a
// timestamp from its state: each current member who joined at or before at,
// with their latest criteria version at or before at. Either result is nil
// when there is nothing to derive (no criteria; fewer than two members with
// criteria).
func Snapshot(st room.State, at string) (*room.CombinedVersion, *room.CompatibilityVersion) {
	if !st.Exists {
		return nil, nil
	}
	joined := map[string]bool{}
	for _, m := range st.Members {
		if m.JoinedAt <= at {
			joined[m.UserID] = true
		}
	}
	latest := map[string]room.StoredCriteria{}
	for _, c := range st.Criteria {
		if joined[c.UserID] && c.Timestamp <= at && c.Timestamp >= latest[c.UserID].Timestamp {
			latest[c.UserID] = c
		}
	}
	ms := make([]room.MemberCriteria, 0, len(latest))
	for _, c := range latest {
		ms = append(ms, room.MemberCriteria{UserID: c.UserID, SK: c.SK, Criteria: c.Criteria, Weights: c.Weights})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].UserID < ms[j].UserID })
	var cv *room.CombinedVersion
	if comb, ok := Combine(st.Room.Context.CombineMode, ms); ok {
		cv = &room.CombinedVersion{RoomID: st.Room.RoomID, Timestamp: at, Combined: comb}
	}
	var pv *room.CompatibilityVersion
	if comp, ok := Compatibility(ms); ok {
		pv = &room.CompatibilityVersion{RoomID: st.Room.RoomID, Timestamp: at, Compatibility: comp}
	}
	return cv, pv
}
