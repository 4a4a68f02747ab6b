package projections_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// A message in a search room's chat derives a ChatMessage entry in that
// room's feed (its id from the source change, so replays rewrite the same
// entry); a plain chat room's message, and one in the chat of a room that
// was deleted since, derive nothing. Connections derive nothing. Checked
// under 24 schedules (duplicates, shuffles, failures, parallelization 10).
func TestChatMessageActivities(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	s := &scenario{st: st, now: time.Now().UTC().Truncate(time.Second), t: t} // real time: connections have a ttl
	s.room("r1", room.ModeMixed, "alice")
	s.join("r1", "bob")
	s.room("r2", room.ModeMixed, "carol")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	connect := func(id, user, roomID string, search bool) {
		must(st.Chat.Connect(ctx, chat.Connection{ConnectionID: id, UserID: user, RoomID: roomID, ConnectedAt: s.tick(),
			TTL: s.now.Add(chat.ConnectionTTL).Unix(), SearchRoom: search}))
	}
	connect("a1", "alice", "r1", true)
	connect("b1", "bob", "r1", true)
	connect("c1", "carol", "global", false)
	connect("c2", "carol", "r2", true)
	long := strings.Repeat("ă", 200)
	var n int
	say := func(roomID, user, content string, search bool) {
		n++
		must(st.Chat.PutMessage(ctx, chat.Message{RoomID: roomID, MessageID: fmt.Sprintf("m%02d", n), UserID: user, UserName: user,
			Content: content, CreatedAt: s.tick(), SearchRoom: search}))
	}
	say("r1", "alice", "<b>Viewing</b> at 6?", true)
	say("global", "carol", "hello world", false)
	say("r1", "bob", long, true)
	say("r2", "carol", "gone soon", true)
	for i := range 6 {
		say("r1", []string{"alice", "bob"}[i%2], fmt.Sprint("msg ", i), true)
	}
	must(st.Rooms.DeleteRoom(ctx, "r2", s.tick()))
	must(st.Chat.Disconnect(ctx, "c1"))

	ev, err := replay.Capture(ctx, c.Streams, arn)
	must(err)
	p := &projections.Projector{Store: st}
	ts := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	rep, err := replay.Check(ctx, ev, replay.Target{Handler: p.Handle, Reset: ts.Reset, State: ts.State},
		slices.Concat(replay.Schedules(2002, schedules(12)), replay.Parallel(replay.Schedules(2003, schedules(12)), 10), kinesisSchedules(2004)))
	must(err)
	must(rep.Err())

	var got []string
	for _, it := range rep.Baseline.([]map[string]any) {
		if it["type"] == room.ActivityChatMessage {
			got = append(got, fmt.Sprintf("%s %s %s %d", it["roomId"], it["messageId"], it["userId"], len([]rune(it["excerpt"].(string)))))
			if it["messageId"] == "m01" && it["excerpt"] != "<b>Viewing</b> at 6?" {
				t.Errorf("m01's excerpt %q: want the text as written", it["excerpt"])
			}
		}
		if strings.HasPrefix(fmt.Sprint(it["PK"]), "ROOM#global") || strings.HasPrefix(fmt.Sprint(it["PK"]), "ROOM#r2") {
			t.Errorf("derived item of a plain or deleted room: %v", it)
		}
	}
	sort.Strings(got)
	want := []string{"r1 m01 alice 20", "r1 m03 bob 140"}
	for i := range 6 {
		want = append(want, fmt.Sprintf("r1 m%02d %s 5", 5+i, []string{"alice", "bob"}[i%2]))
	}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ChatMessage entries:\n got %v\nwant %v", got, want)
	}
	feed, _, err := st.Rooms.ListActivities(ctx, "r1", s.now, store.Page{Limit: 3})
	must(err)
	if len(feed) != 3 || feed[0].Type != room.ActivityChatMessage || feed[0].MessageID != "m10" {
		t.Errorf("r1's feed, newest first: %+v", feed)
	}
	// The deleted room's cascade took its chat's messages; its sealed chat
	// room stays, and nobody gets in.
	if ms, _, err := st.Chat.Messages(ctx, "r2", store.Page{}); err != nil || len(ms) != 0 {
		t.Errorf("r2's messages after its cascade: %v %v", ms, err)
	}
	if a, err := st.Chat.ChatAccess(ctx, "r2", "carol"); err != nil || !a.Sealed || a.Open() {
		t.Errorf("r2's chat after the deletion: %+v %v", a, err)
	}
	if f := assertNoDrift(t, st); len(f.Rooms["r1"].Expected) < 10 {
		t.Errorf("drift expected %d feed entries of r1, want its messages' among them", len(f.Rooms["r1"].Expected))
	}
}
