package drift_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/drift"
	"github.com/dynastream/dynastream/internal/room"
)

func facts() *drift.Facts {
	f := drift.NewFacts()
	f.Reactions["c1"] = map[string]int{"👍": 2}
	f.Counts["c1"] = map[string]int{"👍": 2, "🎉": 0} // a zero entry is no difference
	f.Recipes["r1"] = drift.Recipe{RecipeID: "r1", CreatedAt: "2026-01-01T00:00:00.000Z",
		Rating: cooking.Rating{RatingCount: 2, RatingSum: 7, AvgRating: 3.5}, SortKey: "RATING#3.50#2026-01-01T00:00:00.000Z#r1"}
	f.Histories = []cooking.History{
		{UserID: "u1", HistoryID: "h1", RecipeID: "r1", RecipeTitle: "Pho", CookDate: "2026-01-05T12:00:00Z", Rating: 3},
		{UserID: "u2", HistoryID: "h2", RecipeID: "r1", RecipeTitle: "Pho", CookDate: "2026-01-06T12:00:00Z", Rating: 4},
		{UserID: "u3", HistoryID: "h3", RecipeID: "gone", RecipeTitle: "Deleted", CookDate: "2026-01-06T12:00:00Z", Rating: 5},
	}
	f.Recents = []drift.Recent{
		{RecipeID: "r1", HistoryID: "h1", UserID: "u1", CookDate: "2026-01-05T12:00:00Z", Title: "Pho"},
		{RecipeID: "r1", HistoryID: "h2", UserID: "u2", CookDate: "2026-01-06T12:00:00Z", Title: "Pho"},
	}
	f.Trending[drift.RecipeWeek{RecipeID: "r1", Week: "2026-W02"}] = 2
	// goal g1: alice owns it (and accepted an invite to her own address:
	// her Collaborator item comes first in a scan, as COLLABORATOR# sorts
	// before META), bob collaborates
	f.Members = []drift.Access{{"goal", "g1", "alice", collab.RoleCollaborator}, {"goal", "g1", "bob", collab.RoleCollaborator}, {"goal", "g1", "alice", collab.RoleOwner}}
	f.Grants = []drift.Access{{"goal", "g1", "bob", collab.RoleCollaborator}, {"goal", "g1", "alice", collab.RoleOwner}}
	return f
}

func TestCheckAgrees(t *testing.T) {
	if diffs := drift.Check(facts()); len(diffs) != 0 {
		t.Fatalf("consistent facts: %+v", diffs)
	}
	// a resource whose Resource item cannot be read is not compared
	f := facts()
	f.Unreadable["goal g1"] = true
	f.Grants = append(f.Grants, drift.Access{"goal", "g1", "mallory", ""})
	if diffs := drift.Check(f); len(diffs) != 0 {
		t.Fatalf("an unreadable resource's access: %+v", diffs)
	}
	if diffs := drift.Check(drift.NewFacts()); len(diffs) != 0 {
		t.Fatalf("empty facts: %+v", diffs)
	}
}

func TestCheckFindsEachKind(t *testing.T) {
	for name, tc := range map[string]struct {
		corrupt func(*drift.Facts)
		want    string
	}{
		"count off":        {func(f *drift.Facts) { f.Counts["c1"]["👍"] = 3 }, "reaction counts|comment c1|👍 2|👍 3"},
		"counts missing":   {func(f *drift.Facts) { delete(f.Counts, "c1") }, "reaction counts|comment c1|👍 2|absent"},
		"counts stray":     {func(f *drift.Facts) { f.Counts["c9"] = map[string]int{"👍": 1} }, "reaction counts|comment c9|none|👍 1"},
		"rating sum":       {func(f *drift.Facts) { r := f.Recipes["r1"]; r.Rating.RatingSum = 8; f.Recipes["r1"] = r }, "recipe rating|recipe r1|2 ratings, sum 7, average 3.50, GSI2SK RATING#3.50#2026-01-01T00:00:00.000Z#r1|2 ratings, sum 8, average 3.50, GSI2SK RATING#3.50#2026-01-01T00:00:00.000Z#r1"},
		"sort key":         {func(f *drift.Facts) { r := f.Recipes["r1"]; r.SortKey = "RATING#0.00#x"; f.Recipes["r1"] = r }, "recipe rating|recipe r1|2 ratings, sum 7, average 3.50, GSI2SK RATING#3.50#2026-01-01T00:00:00.000Z#r1|2 ratings, sum 7, average 3.50, GSI2SK RATING#0.00#x"},
		"trending off":     {func(f *drift.Facts) { f.Trending[drift.RecipeWeek{"r1", "2026-W02"}] = 1 }, "trending|recipe r1 week 2026-W02|2|1"},
		"trending stray":   {func(f *drift.Facts) { f.Trending[drift.RecipeWeek{"gone", "2026-W02"}] = 1 }, "trending|recipe gone week 2026-W02|absent|1"},
		"recent missing":   {func(f *drift.Facts) { f.Recents = f.Recents[:1] }, "recent cooking|recipe r1 history h2|user u2 cooked \"Pho\" at 2026-01-06T12:00:00Z|absent"},
		"recent different": {func(f *drift.Facts) { f.Recents[1].Title = "Soup" }, "recent cooking|recipe r1 history h2|user u2 cooked \"Pho\" at 2026-01-06T12:00:00Z|user u2 cooked \"Soup\" at 2026-01-06T12:00:00Z"},
		"access missing":   {func(f *drift.Facts) { f.Grants = f.Grants[:1] }, "resource access|goal g1 user alice|owner|absent"},
		"access lowered":   {func(f *drift.Facts) { f.Grants[1].Role = collab.RoleCollaborator }, "resource access|goal g1 user alice|owner|collaborator"},
		"access unusable":  {func(f *drift.Facts) { f.Grants[0].Role = "" }, "resource access|goal g1 user bob|collaborator|an item that grants nothing"},
		"access stray": {func(f *drift.Facts) {
			f.Grants = append(f.Grants, drift.Access{"goal", "g1", "mallory", collab.RoleOwner})
		}, "resource access|goal g1 user mallory|absent|owner"},
		// a Collaborator item of a resource that is not there gives nothing
		"access without resource": {func(f *drift.Facts) {
			f.Members = append(f.Members, drift.Access{"quest", "q9", "bob", collab.RoleCollaborator})
			f.Grants = append(f.Grants, drift.Access{"quest", "q9", "bob", collab.RoleCollaborator})
		}, "resource access|quest q9 user bob|absent|collaborator"},
	} {
		t.Run(name, func(t *testing.T) {
			f := facts()
			tc.corrupt(f)
			var got []string
			for _, d := range drift.Check(f) {
				got = append(got, fmt.Sprintf("%s|%s|%s|%s", d.Kind, d.Key, d.Want, d.Got))
				if d.Kind == drift.KindAccess {
					// what the repair writes, or deletes
					a := d.Access
					if a == nil || a.Key() != d.Key || d.Stray != (d.Want == "absent") || (!d.Stray && a.Role != d.Want) {
						t.Errorf("the repair of %s: %+v stray %v", d.Key, a, d.Stray)
					}
				}
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecheckAndSummarize(t *testing.T) {
	a := []drift.Difference{{Kind: drift.KindTrending, Key: "x"}, {Kind: drift.KindTrending, Key: "y"}}
	b := []drift.Difference{{Kind: drift.KindTrending, Key: "y", Got: "later"}, {Kind: drift.KindRecentCooking, Key: "z"}}
	if got := drift.Recheck(a, b); len(got) != 1 || got[0].Key != "y" || got[0].Got != "later" {
		t.Errorf("Recheck: %+v", got)
	}
	s := drift.Summarize(append(a, b...), 1)
	if len(s) != 2 || s[0].Kind != drift.KindTrending || s[0].Count != 3 || len(s[0].Examples) != 1 || s[1].Kind != drift.KindRecentCooking || s[1].Count != 1 {
		t.Errorf("Summarize: %+v", s)
	}
}

// Check says what the stored derived items must be.
func ExampleCheck() {
	f := drift.NewFacts()
	f.Reactions["c1"] = map[string]int{"👍": 2}
	f.Counts["c1"] = map[string]int{"👍": 3}
	for _, d := range drift.Check(f) {
		fmt.Printf("%s %s: want %s, got %s\n", d.Kind, d.Key, d.Want, d.Got)
	}
	// Output:
	// reaction counts comment c1: want 👍 2, got 👍 3
}

func TestCheckRooms(t *testing.T) {
	snap := func(st room.State, at string) (*room.CombinedVersion, *room.CompatibilityVersion) {
		if len(st.Criteria) == 0 {
			return nil, nil
		}
		return &room.CombinedVersion{RoomID: st.Room.RoomID, Timestamp: at, Combined: room.Combined{FromUserIDs: []string{"alice"}, Conflicts: []string{}}}, nil
	}
	f := drift.NewFacts()
	f.SetRoom(room.Room{RoomID: "r1", CreatedAt: "t1"})
	f.AddCriteria(room.StoredCriteria{SK: "CRITERIA#alice#t2", CriteriaVersion: room.CriteriaVersion{RoomID: "r1", UserID: "alice", Timestamp: "t2"}})
	f.AddCombined(room.CombinedVersion{RoomID: "r1", Timestamp: "t2", Combined: room.Combined{FromUserIDs: []string{"alice"}}}) // no conflicts stored: the same
	f.AddCombined(room.CombinedVersion{RoomID: "r1", Timestamp: "t0", Combined: room.Combined{FromUserIDs: []string{"bob"}}})   // older: not compared
	f.SetRoom(room.Room{RoomID: "r2"})                                                                                          // nothing derived: nothing compared
	f.AddRoomItem("r9", drift.Key{PK: "USER#eve", SK: "ROOM#r9"})
	f.AddRoomItem("r9", drift.Key{PK: "ROOM#r9", SK: "ACTIVITY#x"})
	if diffs := drift.Check(f); len(diffs) != 0 {
		t.Fatalf("without Snapshot, rooms are not compared: %+v", diffs)
	}
	f.Snapshot = snap
	var got []string
	for _, d := range drift.Check(f) {
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%v", d.Kind, d.Key, d.Want, d.Got, d.Delete))
	}
	want := []string{"deleted room's items|room r9|no items|2 item(s), e.g. ROOM#r9 / ACTIVITY#x|[{ROOM#r9 ACTIVITY#x} {USER#eve ROOM#r9}]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	f.AddCombined(room.CombinedVersion{RoomID: "r1", Timestamp: "t3", Combined: room.Combined{FromUserIDs: []string{"bob"}}})
	diffs := drift.Check(f)
	if len(diffs) != 2 || diffs[0].Kind != drift.KindRoomCombined || diffs[0].Want != `{"combineMode":"","fromUserIds":["alice"]}` || diffs[0].Combined.Timestamp != "t3" {
		t.Errorf("a newest version that differs: %+v", diffs)
	}
}

func TestCheckActivities(t *testing.T) {
	f := drift.NewFacts()
	f.SetRoom(room.Room{RoomID: "r1"})
	joined := room.Activity{RoomID: "r1", ActivityID: "ev-1", Type: room.ActivityMemberJoined, CreatedAt: "2026-02-01", SenderID: "bob", UserID: "bob"}
	f.AddActivity(joined)
	rebuilt := joined
	rebuilt.ActivityID = "rebuilt-x" // the same entry under another id: found
	f.AddExpected(rebuilt)
	f.AddExpected(room.Activity{RoomID: "r1", Type: room.ActivityListingPinned, CreatedAt: "2026-02-02", SenderID: "bob", ListingID: "l1"})
	f.AddExpected(room.Activity{RoomID: "r1", Type: room.ActivityRoomCreated, CreatedAt: "2025-01-01", SenderID: "alice"}) // expired
	f.Snapshot = func(room.State, string) (*room.CombinedVersion, *room.CompatibilityVersion) { return nil, nil }
	if diffs := drift.Check(f); len(diffs) != 0 {
		t.Fatalf("entries not asked for: %+v", diffs)
	}
	f.ExpectActivities, f.ActivitiesSince = true, "2026-01-01"
	diffs := drift.Check(f)
	if len(diffs) != 1 || diffs[0].Key != "room r1 ListingPinned l1 at 2026-02-02" || diffs[0].Activity.ListingID != "l1" {
		t.Fatalf("missing entries: %+v", diffs)
	}
}
