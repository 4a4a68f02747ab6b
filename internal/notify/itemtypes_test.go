package notify_test

import (
	"slices"
	"testing"

	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/notify"
)

// ItemTypes holds every announced type and the side-effect types, and
// none of the types that mean nothing outside (the notifier's own
// notifications above all: they would wake it for nothing).
func TestItemTypes(t *testing.T) {
	got := notify.ItemTypes()
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("ItemTypes not sorted and unique: %v", got)
	}
	for _, it := range append(events.Announced(), "CollaborationInvite", "Comment", "Reaction", "Message") {
		if !slices.Contains(got, it) {
			t.Errorf("ItemTypes lacks %s", it)
		}
	}
	for _, it := range []string{"Notification", "Activity", "Connection", "ReactionCounts", "UserRoom", "Trending"} {
		if slices.Contains(got, it) {
			t.Errorf("ItemTypes has %s, which means nothing to the notifier", it)
		}
	}
}
