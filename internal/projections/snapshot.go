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
	s := Snapshots(st, []string{at})[0]
	return s.Combined, s.Compatibility
}

// Snap is a room's combined criteria and compatibility as of one
// timestamp (Snapshot's two results).
type Snap struct {
	Combined      *room.CombinedVersion
	Compatibility *room.CompatibilityVersion
}

// Snapshots is Snapshot at each of ats (out[i] is at ats[i]), reading the
// room's criteria once, in time order, however many timestamps a batch
// asks for.
func Snapshots(st room.State, ats []string) []Snap {
	out := make([]Snap, len(ats))
	if !st.Exists {
		return out
	}
	latestCriteria(st, ats, func(i int, ms []room.MemberCriteria) {
		at := ats[i]
		if comb, ok := Combine(st.Room.Context.CombineMode, ms); ok {
			out[i].Combined = &room.CombinedVersion{RoomID: st.Room.RoomID, Timestamp: at, Combined: comb}
		}
		if comp, ok := Compatibility(ms); ok {
			out[i].Compatibility = &room.CompatibilityVersion{RoomID: st.Room.RoomID, Timestamp: at, Compatibility: comp}
		}
	})
	return out
}

// latestCriteria calls f with each of ats' index i and, at ats[i], each
// current member who joined at or before it with their latest criteria
// version at or before it (of equal timestamps, the last in st.Criteria),
// sorted by user: ms is valid until f returns (Combine and Compatibility
// keep none of it). It sweeps the room's criteria once in time order, the timestamps
// in ascending order beside them. Rooms have few members: a linear search
// over them costs less than hashing each criteria version.
func latestCriteria(st room.State, ats []string, f func(i int, ms []room.MemberCriteria)) {
	type pick struct {
		user   string
		joined string // the earliest JoinedAt of the user's member items
		c      *room.StoredCriteria
	}
	var stack [16]pick // a room's members, mostly: no allocation
	picks := stack[:0]
	for _, m := range st.Members {
		if k := slices.IndexFunc(picks, func(p pick) bool { return p.user == m.UserID }); k < 0 {
			picks = append(picks, pick{user: m.UserID, joined: m.JoinedAt})
		} else if m.JoinedAt < picks[k].joined {
			picks[k].joined = m.JoinedAt
		}
	}
	slices.SortFunc(picks, func(a, b pick) int { return strings.Compare(a.user, b.user) })
	// The members' criteria versions, in time order (stable: of equal
	// timestamps, the later in st.Criteria comes later and wins).
	type version struct{ i, pick int }
	vs := make([]version, 0, len(st.Criteria))
	for i := range st.Criteria {
		if k := slices.IndexFunc(picks, func(p pick) bool { return p.user == st.Criteria[i].UserID }); k >= 0 {
			vs = append(vs, version{i, k})
		}
	}
	slices.SortStableFunc(vs, func(a, b version) int {
		return strings.Compare(st.Criteria[a.i].Timestamp, st.Criteria[b.i].Timestamp)
	})
	order := make([]int, len(ats))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ats[a], ats[b]) })
	ms := make([]room.MemberCriteria, 0, len(picks))
	next := 0
	for _, i := range order {
		at := ats[i]
		for ; next < len(vs) && st.Criteria[vs[next].i].Timestamp <= at; next++ {
			picks[vs[next].pick].c = &st.Criteria[vs[next].i]
		}
		ms = ms[:0]
		for _, p := range picks {
			if p.c != nil && p.joined <= at {
				ms = append(ms, room.MemberCriteria{UserID: p.user, SK: p.c.SK, Criteria: p.c.Criteria, Weights: p.c.Weights})
			}
		}
		f(i, ms)
	}
}
