package room_test

import (
	"strings"
	"testing"

	"github.com/dynastream/dynastream/internal/room"
)

func TestLifecycle(t *testing.T) {
	allowed := map[[2]room.Status]bool{}
	for _, p := range [][2]room.Status{
		{"UNSEEN", "SEEN"}, {"UNSEEN", "VISIT_PLANNED"}, {"UNSEEN", "SHORTLISTED"}, {"UNSEEN", "REJECTED"},
		{"SEEN", "VISIT_PLANNED"}, {"SEEN", "SHORTLISTED"}, {"SEEN", "REJECTED"},
		{"VISIT_PLANNED", "VISITED"}, {"VISIT_PLANNED", "SEEN"}, {"VISIT_PLANNED", "REJECTED"},
		{"VISITED", "SHORTLISTED"}, {"VISITED", "REJECTED"}, {"VISITED", "VISIT_PLANNED"},
		{"SHORTLISTED", "VISIT_PLANNED"}, {"SHORTLISTED", "REJECTED"},
		{"REJECTED", "SEEN"},
	} {
		allowed[p] = true
	}
	for _, from := range room.Statuses {
		if !from.Valid() {
			t.Errorf("%s not valid", from)
		}
		for _, to := range room.Statuses {
			err := room.CanMove(from, to)
			if allowed[[2]room.Status{from, to}] != (err == nil) {
				t.Errorf("%s → %s: err %v, allowed %v", from, to, err, allowed[[2]room.Status{from, to}])
			}
			if err != nil && !strings.Contains(err.Error(), string(from)) {
				t.Errorf("%s → %s: reason %q does not name the current status", from, to, err)
			}
		}
	}
	if room.Status("SOLD").Valid() || room.Status("").Valid() {
		t.Error("unknown statuses are valid")
	}
	if err := room.CanMove("UNSEEN", "UNSEEN"); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("same status: %v", err)
	}
}
