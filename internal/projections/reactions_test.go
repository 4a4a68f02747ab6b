package projections_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// Reaction counts are exact however the stream is delivered: every record
// twice, random batches, shuffled, failures retried — each change counted
// once, removals decremented.
func TestReactionCountsExact(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ts := func() string { at = at.Add(time.Second); return store.Timestamp(at) }
	if err := st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Quest, ResourceID: "q1", Title: "t", OwnerID: "alice", CreatedAt: ts()}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c1", "c2"} {
		if err := st.Collab.CreateComment(ctx, collab.Comment{CommentID: id, ResourceType: collab.Quest, ResourceID: "q1", UserID: "alice", Text: "x", CreatedAt: ts()}); err != nil {
			t.Fatal(err)
		}
	}
	react := func(comment, user, emoji string) {
		if _, err := st.Collab.AddReaction(ctx, collab.Reaction{CommentID: comment, ResourceType: collab.Quest, ResourceID: "q1", UserID: user, Emoji: emoji, CreatedAt: ts()}); err != nil {
			t.Fatal(err)
		}
	}
	unreact := func(comment, user, emoji string) {
		if err := st.Collab.RemoveReaction(ctx, comment, user, emoji); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		react("c1", u, "👍")
	}
	react("c1", "bob", "🎉")
	react("c2", "carol", "❤️")
	unreact("c1", "dave", "👍")
	unreact("c1", "bob", "🎉")
	react("c1", "bob", "🎉") // again: a new change, counted again
	react("c2", "bob", "❤️")
	unreact("c2", "carol", "❤️")

	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	tsState := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	rep, err := replay.Check(ctx, ev, replay.Target{Handler: p.Handle, Reset: tsState.Reset, State: tsState.State}, slices.Concat(replay.Schedules(7, schedules(10)), replay.Parallel(replay.Schedules(8, schedules(10)), 10), kinesisSchedules(9)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	got, err := st.Collab.ReactionCounts(ctx, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int{"c1": {"👍": 3, "🎉": 1}, "c2": {"❤️": 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("counts (-want +got):\n%s", diff)
	}
	assertNoDrift(t, st) // and drift's own count agrees
}
