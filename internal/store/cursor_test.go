package store_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

func cursorOf(t *testing.T, m map[string]string) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Cursors crafted or carried to a list whose query they do not fit are
// invalid input (400 naming the cursor), never a DynamoDB error (500): a
// sort key outside the query's range, a missing or unknown key attribute,
// a key too long for DynamoDB.
func TestCursorsOutsideTheirQueryAreInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var acts []room.Activity
	for i, at := range []string{"2000-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z", "2026-02-02T00:00:00.000Z"} {
		acts = append(acts, room.Activity{RoomID: "r", ActivityID: "a" + string(rune('0'+i)), Type: "MemberJoined", CreatedAt: at, TTL: now.Add(time.Hour).Unix()})
	}
	if err := f.st.Rooms.PutDerived(f.ctx, store.Derived{Activities: acts}); err != nil {
		t.Fatal(err)
	}
	// A genuine cursor of the newest-first list, pointing at 2026-02-01.
	_, next, err := f.st.Rooms.ListActivities(f.ctx, "r", now, store.Page{Limit: 2})
	if err != nil || next == "" {
		t.Fatalf("newest-first page: %q %v", next, err)
	}
	old := cursorOf(t, map[string]string{"PK": "ROOM#r", "SK": "ACTIVITY#2000-01-01T00:00:00.000Z#a0"})
	for name, c := range map[string]string{"a real cursor before the range": next, "a crafted one far before": old} {
		if _, _, err := f.st.Rooms.ActivitiesAfter(f.ctx, "r", "2026-02-01T12:00:00.000Z", now, store.Page{Cursor: c}); !errs.Is(err, errs.Invalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	// In range it pages as before.
	inRange := cursorOf(t, map[string]string{"PK": "ROOM#r", "SK": "ACTIVITY#2026-02-01T00:00:00.000Z#a1"})
	got, _, err := f.st.Rooms.ActivitiesAfter(f.ctx, "r", "2026-01-15T00:00:00.000Z", now, store.Page{Cursor: inRange})
	if err != nil || len(got) != 1 || got[0].ActivityID != "a2" {
		t.Errorf("in-range cursor: %v %v", got, err)
	}

	long := string(make([]byte, 3000))
	for name, m := range map[string]map[string]string{
		"no GSI1SK":         {"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "LOCATION"},
		"an unknown name":   {"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "LOCATION", "nope": "1"},
		"a renamed GSI1SK":  {"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "LOCATION", "GSI1sk": "1"},
		"an empty GSI1SK":   {"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "LOCATION", "GSI1SK": ""},
		"a key too long":    {"PK": "LOCATION#" + long, "SK": "METADATA", "GSI1PK": "LOCATION", "GSI1SK": "x"},
		"another partition": {"PK": "LOCATION#x", "SK": "METADATA", "GSI1PK": "ROOM#r", "GSI1SK": "x"},
	} {
		if _, _, err := f.st.Locations.ListLocations(f.ctx, "", store.NewestFirst, store.Page{Cursor: cursorOf(t, m)}); !errs.Is(err, errs.Invalid) {
			t.Errorf("locations cursor with %s: %v, want invalid", name, err)
		}
	}
}
