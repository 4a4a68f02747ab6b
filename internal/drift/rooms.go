package drift

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dynastream/dynastream/internal/room"
)

// Kinds of a room's derived items Check compares (when Facts.Snapshot is
// set).
const (
	KindRoomCombined      = "room combined criteria"
	KindRoomCompatibility = "room compatibility"
	KindRoomCascade       = "deleted room's items"
	KindRoomActivity      = "room activity"
)

// SnapshotFunc derives a room's combined criteria and compatibility as of
// a timestamp from its state (projections.Snapshot).
type SnapshotFunc func(st room.State, at string) (*room.CombinedVersion, *room.CompatibilityVersion)

// Key is an item's key.
type Key struct{ PK, SK string }

// Room is what a scan found of one room: its state as the derivation
// reads it (the Room item, its Member items, every Criteria version), the
// newest stored version of each derived snapshot, and the key of every item
// of its partition and of every UserRoom item naming it.
type Room struct {
	State         room.State
	Combined      *room.CombinedVersion
	Compatibility *room.CompatibilityVersion
	Items         []Key
	// Activities are the feed entries stored; Expected those the room's
	// core items call for (Facts.ExpectActivities).
	Activities, Expected []room.Activity
}

// room returns f's facts of roomID, created on first use.
func (f *Facts) room(roomID string) *Room {
	r := f.Rooms[roomID]
	if r == nil {
		r = &Room{}
		f.Rooms[roomID] = r
	}
	return r
}

// AddRoomItem records a key of roomID's partition or a UserRoom item
// naming it.
func (f *Facts) AddRoomItem(roomID string, k Key) {
	r := f.room(roomID)
	r.Items = append(r.Items, k)
}

// SetRoom records roomID's Room item.
func (f *Facts) SetRoom(rm room.Room) {
	r := f.room(rm.RoomID)
	r.State.Room, r.State.Exists = rm, true
}

// AddMember records a Member item.
func (f *Facts) AddMember(m room.Member) {
	r := f.room(m.RoomID)
	r.State.Members = append(r.State.Members, m)
}

// AddCriteria records a Criteria version.
func (f *Facts) AddCriteria(c room.StoredCriteria) {
	r := f.room(c.RoomID)
	r.State.Criteria = append(r.State.Criteria, c)
}

// AddActivity records a stored feed entry.
func (f *Facts) AddActivity(a room.Activity) {
	r := f.room(a.RoomID)
	r.Activities = append(r.Activities, a)
}

// AddExpected records a feed entry a core item calls for.
func (f *Facts) AddExpected(a room.Activity) {
	r := f.room(a.RoomID)
	r.Expected = append(r.Expected, a)
}

// AddCombined records a stored combined-criteria version; the newest is
// kept.
func (f *Facts) AddCombined(v room.CombinedVersion) {
	r := f.room(v.RoomID)
	if r.Combined == nil || v.Timestamp > r.Combined.Timestamp {
		r.Combined = &v
	}
}

// AddCompatibility records a stored compatibility version; the newest is
// kept.
func (f *Facts) AddCompatibility(v room.CompatibilityVersion) {
	r := f.room(v.RoomID)
	if r.Compatibility == nil || v.Timestamp > r.Compatibility.Timestamp {
		r.Compatibility = &v
	}
}

func (f *Facts) mergeRooms(o *Facts) {
	for id, or := range o.Rooms {
		r := f.room(id)
		if or.State.Exists {
			r.State.Room, r.State.Exists = or.State.Room, true
		}
		r.State.Members = append(r.State.Members, or.State.Members...)
		r.State.Criteria = append(r.State.Criteria, or.State.Criteria...)
		r.Items = append(r.Items, or.Items...)
		r.Activities = append(r.Activities, or.Activities...)
		r.Expected = append(r.Expected, or.Expected...)
		if or.Combined != nil {
			f.AddCombined(*or.Combined)
		}
		if or.Compatibility != nil {
			f.AddCompatibility(*or.Compatibility)
		}
	}
}

// end is later than every timestamp: a snapshot as of now.
const end = "\uffff"

// rooms compares each room's newest snapshots with what its current state
// derives, and finds the items a deleted room left.
//
// A room's versions are a history: only the newest is compared, with the
// room as it is now (the state of an older version cannot be rebuilt: a
// member who left is gone). When the current state derives nothing (no
// criteria; fewer than two members with criteria) the projector writes no
// version, so the newest stored one is not compared.
func rooms(f *Facts) []Difference {
	if f.Snapshot == nil {
		return nil
	}
	var out []Difference
	for id, r := range f.Rooms {
		if !r.State.Exists {
			if len(r.Items) > 0 {
				keys := slices.Clone(r.Items)
				slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.PK+"\x00"+a.SK, b.PK+"\x00"+b.SK) })
				out = append(out, Difference{Kind: KindRoomCascade, Key: "room " + id, Want: "no items",
					Got: fmt.Sprintf("%d item(s), e.g. %s / %s", len(keys), keys[0].PK, keys[0].SK), Delete: keys})
			}
			continue
		}
		out = append(out, activities(f, id, r)...)
		st := r.State
		slices.SortFunc(st.Criteria, func(a, b room.StoredCriteria) int { return strings.Compare(a.SK, b.SK) })
		cv, pv := f.Snapshot(st, end)
		trigger := latestTrigger(st)
		if cv != nil {
			var stored any
			at := trigger
			if r.Combined != nil {
				stored, at = r.Combined.Combined, r.Combined.Timestamp
			}
			if d, differs := snapshotDiff(KindRoomCombined, id, cv.Combined, stored); differs {
				v := *cv
				v.Timestamp = at
				d.Combined = &v
				out = append(out, d)
			}
		}
		if pv != nil {
			var stored any
			at := trigger
			if r.Compatibility != nil {
				stored, at = r.Compatibility.Compatibility, r.Compatibility.Timestamp
			}
			if d, differs := snapshotDiff(KindRoomCompatibility, id, pv.Compatibility, stored); differs {
				v := *pv
				v.Timestamp = at
				d.Compatibility = &v
				out = append(out, d)
			}
		}
	}
	return out
}

// snapshotDiff compares a derived snapshot with the stored one (nil:
// none); the caller adds what to write.
func snapshotDiff(kind, roomID string, want, stored any) (Difference, bool) {
	w, g := canon(want), "absent"
	if stored != nil {
		g = canon(stored)
	}
	return Difference{Kind: kind, Key: "room " + roomID, Want: w, Got: g}, w != g
}

// activityKey identifies a feed entry by what it says, not by its id
// (which comes from the stream record that made it).
func activityKey(a room.Activity) string {
	return a.Type + "|" + a.CreatedAt + "|" + a.SenderID + "|" + a.UserID + "|" + a.ListingID + "|" + a.MessageID
}

// activities finds the feed entries the room's core items call for that
// are not stored (the room's creation, each current member's joining, each
// criteria version, each listing pinned, each message of its chat; entries
// older than Facts.ActivitiesSince have expired). Entries nothing calls for
// any more (a member who left, a status change) cannot be told from stray
// ones, so none is reported as stray.
func activities(f *Facts, id string, r *Room) []Difference {
	if !f.ExpectActivities {
		return nil
	}
	have := make(map[string]bool, len(r.Activities))
	for _, a := range r.Activities {
		have[activityKey(a)] = true
	}
	var out []Difference
	for _, a := range r.Expected {
		if a.CreatedAt < f.ActivitiesSince || have[activityKey(a)] {
			continue
		}
		have[activityKey(a)] = true
		subject := cmp.Or(a.UserID, a.ListingID, a.MessageID, a.SenderID)
		e := a
		out = append(out, Difference{Kind: KindRoomActivity, Key: "room " + id + " " + a.Type + " " + subject + " at " + a.CreatedAt,
			Want: "an entry", Got: "absent", Activity: &e})
	}
	return out
}

// latestTrigger is the newest time the room's current state changed at:
// where a missing snapshot goes.
func latestTrigger(st room.State) string {
	t := max(st.Room.CreatedAt, st.Room.UpdatedAt)
	for _, m := range st.Members {
		t = max(t, m.JoinedAt)
	}
	for _, c := range st.Criteria {
		t = max(t, c.Timestamp)
	}
	return t
}

// canon is v as JSON with every null, empty list and empty object left
// out, so that a value read back from the table (where an empty list may
// be absent) compares with the one derived now.
func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return "undecodable: " + err.Error()
	}
	b, _ = json.Marshal(prune(x))
	return string(b)
}

func prune(x any) any {
	switch v := x.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e = prune(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(v) == 0 {
			return nil
		}
		for i := range v {
			v[i] = prune(v[i])
		}
		return v
	}
	return x
}
