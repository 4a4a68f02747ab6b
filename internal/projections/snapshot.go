package projections

import (
	"sort"

	"github.com/dynastream/dynastream/internal/room"
)

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
