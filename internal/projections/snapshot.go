package projections

import (
	"slices"
	"strings"

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
	ms := latestCriteria(st, at)
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

// latestCriteria is, for each current member who joined at or before at,
// their latest criteria version at or before at (of equal timestamps, the
// last in st.Criteria), sorted by user. Rooms have few members: a linear
// search over them costs less than hashing each of the room's criteria
// versions twice.
func latestCriteria(st room.State, at string) []room.MemberCriteria {
	type pick struct {
		user string
		c    *room.StoredCriteria
	}
	var stack [16]pick // a room's members, mostly: no allocation
	picks := stack[:0]
	for _, m := range st.Members {
		if m.JoinedAt <= at && !slices.ContainsFunc(picks, func(p pick) bool { return p.user == m.UserID }) {
			picks = append(picks, pick{user: m.UserID})
		}
	}
	for i := range st.Criteria {
		c := &st.Criteria[i]
		if c.Timestamp > at {
			continue
		}
		for k := range picks {
			if p := &picks[k]; p.user == c.UserID {
				if p.c == nil || c.Timestamp >= p.c.Timestamp {
					p.c = c
				}
				break
			}
		}
	}
	ms := make([]room.MemberCriteria, 0, len(picks))
	for _, p := range picks {
		if p.c != nil {
			ms = append(ms, room.MemberCriteria{UserID: p.user, SK: p.c.SK, Criteria: p.c.Criteria, Weights: p.c.Weights})
		}
	}
	slices.SortFunc(ms, func(a, b room.MemberCriteria) int { return strings.Compare(a.UserID, b.UserID) })
	return ms
}
