package outbox_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/outbox"
)

func readLines(t *testing.T, path string) []events.Event {
	t.Helper()
	evs, err := outbox.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestOutbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "events.jsonl")
	ob := &outbox.Outbox{Path: path}
	evs := []events.Event{
		{ID: "a-0", Source: events.SourceRooms, DetailType: "RoomCreated", Version: 1, OccurredAt: "2025-03-14T15:09:26Z", SequenceNumber: "1", Data: map[string]any{"roomId": "r1"}},
		{ID: "b-0", Source: events.SourceRooms, DetailType: "MemberJoined", Version: 1, OccurredAt: "2025-03-14T15:09:27Z", SequenceNumber: "2", Data: map[string]any{"userId": "bob", "n": 2.5}},
	}
	for _, err := range ob.Publish(context.Background(), evs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(evs, readLines(t, path)); diff != "" {
		t.Errorf("outbox lines (-want +got):\n%s", diff)
	}
	// A redelivery appends (consumers dedupe by id).
	ob.Publish(context.Background(), evs[:1])
	if got := readLines(t, path); len(got) != 3 || got[2].ID != "a-0" {
		t.Errorf("after a second publish: %d lines, last %+v", len(got), got[len(got)-1])
	}

	// Concurrent publishes never interleave within a line.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ob.Publish(context.Background(), evs)
		}()
	}
	wg.Wait()
	if got := readLines(t, path); len(got) != 3+16 {
		t.Errorf("after concurrent publishes: %d lines, want %d", len(got), 3+16)
	}

	// Unwritable: every event gets the error.
	dir := t.TempDir()
	bad := &outbox.Outbox{Path: dir} // a directory, not a file
	errs := bad.Publish(context.Background(), evs)
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil {
		t.Errorf("publish to a directory: %v, want an error per event", errs)
	}
	// An unencodable event fails the whole publish: all or none.
	path2 := filepath.Join(t.TempDir(), "e.jsonl")
	errs = (&outbox.Outbox{Path: path2}).Publish(context.Background(), []events.Event{evs[0], {ID: "x", Data: map[string]any{"f": func() {}}}})
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil {
		t.Errorf("unencodable event: %v, want an error per event", errs)
	}
	if _, err := os.Stat(path2); err == nil {
		if b, _ := os.ReadFile(path2); len(b) != 0 {
			t.Errorf("a failed publish wrote %q", b)
		}
	}
}
