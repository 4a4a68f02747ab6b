package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/events"
)

var at = time.Date(2025, 3, 14, 15, 9, 26, 0, time.FixedZone("CET", 3600))

func TestMap(t *testing.T) {
	tests := []struct {
		itemType string
		derived  bool
		kind     events.Kind
		want     string // "" = no event
	}{
		{"Room", false, events.Insert, "RoomCreated"},
		{"Room", false, events.Modify, "RoomUpdated"},
		{"Room", false, events.Remove, "RoomDeleted"},
		{"Member", false, events.Insert, "MemberJoined"},
		{"Member", false, events.Remove, "MemberLeft"},
		{"Member", false, events.TTLRemove, "MemberLeft"},
		{"Criteria", false, events.Insert, "CriteriaUpdated"},
		{"Listing", false, events.Insert, "ListingPinned"},
		{"Listing", false, events.Modify, "ListingUpdated"},
		{"Listing", false, events.Remove, "ListingDeleted"},
		// The source lookup is internal to the uniqueness rule.
		{"ListingSourceLookup", false, events.Insert, ""},
		{"CombinedCriteria", true, events.Insert, "CombinedCriteriaUpdated"},
		{"Compatibility", true, events.Insert, "CompatibilityUpdated"},
		// A snapshot rewritten by a replay, or removed with its room, is no news.
		{"CombinedCriteria", true, events.Modify, ""},
		{"CombinedCriteria", true, events.Remove, ""},
		{"Compatibility", true, events.Modify, ""},
		{"Compatibility", true, events.TTLRemove, ""},
		// UserRoom mirrors Member: MemberJoined/MemberLeft say it already.
		{"UserRoom", false, events.Insert, ""},
		{"UserRoom", false, events.Modify, ""},
		{"UserRoom", false, events.Remove, ""},
		{"UserRoom", false, events.TTLRemove, ""},
		// Unknown, missing or unmarked item types, and other derived items.
		{"", false, events.Insert, ""},
		{"", true, events.Insert, ""},
		{"Gadget", false, events.Insert, ""},
		{"Gadget", false, events.Remove, ""},
		{"Activity", true, events.Insert, ""},
		{"Activity", true, events.TTLRemove, ""},
		{"Room", false, events.Kind("UNKNOWN"), ""},
	}
	for _, tt := range tests {
		name := tt.itemType + "/" + string(tt.kind)
		t.Run(name, func(t *testing.T) {
			img := map[string]any{"roomId": "r1", "n": 3.0}
			c := events.Change{EventID: "e-42", SequenceNumber: "000100", Kind: tt.kind, At: at, ItemType: tt.itemType, Derived: tt.derived, Image: img}
			got := events.Map(c)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("Map = %+v, want no event", got)
				}
				return
			}
			want := []events.Event{{
				ID: "e-42-0", Source: "dynastream.rooms", DetailType: tt.want, Version: 1,
				OccurredAt: "2025-03-14T14:09:26Z", SequenceNumber: "000100", Data: img,
			}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Map (-want +got):\n%s", diff)
			}
			// A redelivered record maps to the very same event.
			if diff := cmp.Diff(got, events.Map(c)); diff != "" {
				t.Errorf("Map is not deterministic (-first +second):\n%s", diff)
			}
		})
	}
}

// TestEventJSON pins the envelope's wire names (consumers read them).
func TestEventJSON(t *testing.T) {
	ev := events.Map(events.Change{EventID: "abc", SequenceNumber: "7", Kind: events.Insert, At: at, ItemType: "Room", Image: map[string]any{"roomId": "r1"}})
	if len(ev) != 1 {
		t.Fatalf("Map = %v", ev)
	}
	b, err := json.Marshal(ev[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": "abc-0", "source": "dynastream.rooms", "detailType": "RoomCreated", "version": 1.0,
		"occurredAt": "2025-03-14T14:09:26Z", "sequenceNumber": "7", "data": map[string]any{"roomId": "r1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestCollaborationEvents(t *testing.T) {
	for _, tc := range []struct {
		itemType string
		kind     events.Kind
		image    map[string]any
		want     string
	}{
		{"CollaborationInvite", events.Insert, map[string]any{"status": "pending"}, "InviteCreated"},
		{"CollaborationInvite", events.Modify, map[string]any{"status": "accepted"}, "InviteAccepted"},
		{"CollaborationInvite", events.Modify, map[string]any{"status": "declined"}, "InviteDeclined"},
		{"CollaborationInvite", events.TTLRemove, map[string]any{"status": "pending"}, "InviteExpired"},
		{"CollaborationInvite", events.TTLRemove, map[string]any{"status": "declined"}, ""},
		{"Comment", events.Insert, map[string]any{}, "CommentCreated"},
		{"Comment", events.Modify, map[string]any{"text": "x"}, "CommentEdited"},
		{"Comment", events.Modify, map[string]any{"deletedAt": "2026-01-01T00:00:00.000Z"}, "CommentDeleted"},
		{"Reaction", events.Insert, nil, "ReactionAdded"},
		{"Reaction", events.Remove, nil, "ReactionRemoved"},
		{"Collaborator", events.Insert, nil, "CollaboratorAdded"},
		{"UserProfile", events.Insert, nil, ""},
		{"IdempotencyRecord", events.Insert, nil, ""},
	} {
		evs := events.Map(events.Change{EventID: "e", ItemType: tc.itemType, Kind: tc.kind, Image: tc.image})
		got := ""
		if len(evs) == 1 {
			got = evs[0].DetailType
			if evs[0].Source != events.SourceCollaboration {
				t.Errorf("%s %s: source %s", tc.itemType, tc.kind, evs[0].Source)
			}
		}
		if got != tc.want {
			t.Errorf("%s %s %v: %q, want %q", tc.itemType, tc.kind, tc.image, got, tc.want)
		}
	}
}
