package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/push"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// management is API Gateway's management endpoint as the real client
// meets it: it checks each request (POST /@connections/{id}, SigV4-signed
// for execute-api, a message frame), records the frames per connection,
// answers 410 GoneException for gone connections and 500 for failing ones.
type management struct {
	t       *testing.T
	mu      sync.Mutex
	frames  map[string][]chat.Message // connection → messages pushed, in order
	gone    map[string]bool
	failing map[string]int // connection → 500s still to give
	closed  map[string]int // connection → DELETEs that closed it (it is gone after)
}

func (m *management) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/@connections/")
	auth := r.Header.Get("Authorization")
	if (r.Method != http.MethodPost && r.Method != http.MethodDelete) || !ok || id == "" || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "/execute-api/aws4_request") {
		m.t.Errorf("unexpected request %s %s (Authorization %q)", r.Method, r.URL.Path, auth)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodDelete {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.gone[id] {
			w.Header().Set("X-Amzn-ErrorType", "GoneException")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"message":"gone"}`))
			return
		}
		m.gone[id] = true
		m.closed[id]++
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var f chat.Outbound
	if err := json.Unmarshal(body, &f); err != nil || f.Type != chat.FrameMessage || f.Message == nil || f.Message.MessageID == "" {
		m.t.Errorf("push to %s: not a message frame: %s", id, body)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.gone[id]:
		w.Header().Set("X-Amzn-ErrorType", "GoneException")
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write([]byte(`{"message":"gone"}`))
	case m.failing[id] > 0:
		m.failing[id]--
		w.Header().Set("X-Amzn-ErrorType", "InternalServerErrorException")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"message":"injected"}`))
	default:
		m.frames[id] = append(m.frames[id], *f.Message)
	}
}

// received lists each connection's message ids, duplicates dropped as a
// client drops them, sorted.
func (m *management) received() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for id, ms := range m.frames {
		var ids []string
		for _, msg := range ms {
			if !slices.Contains(ids, msg.MessageID) {
				ids = append(ids, msg.MessageID)
			}
		}
		sort.Strings(ids)
		out[id] = ids
	}
	return out
}

func newManagement(t *testing.T) (*management, *push.Client) {
	m := &management{t: t, frames: map[string][]chat.Message{}, gone: map[string]bool{}, failing: map[string]int{}, closed: map[string]int{}}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	return m, push.New(cfg, srv.URL)
}

// Each new chat message reaches every live connection of its room, and
// only of its room, in order; a connection API Gateway says is gone is
// deleted, unless it is young enough to be a $connect still in progress; a
// connection that keeps failing fails its message's record only, and the
// message comes again (the same id) when the record is retried.
func TestChatBroadcast(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond) // real time: DynamoDB Local deletes expired items
	conn := func(id, user, room string, age time.Duration) {
		t.Helper()
		err := st.Chat.Connect(ctx, chat.Connection{ConnectionID: id, UserID: user, RoomID: room,
			ConnectedAt: store.Timestamp(now.Add(-age)), TTL: now.Add(chat.ConnectionTTL).Unix()})
		if err != nil && !errs.Is(err, errs.Conflict) {
			t.Fatal(err)
		}
	}
	conns := func() {
		conn("alice-1", "alice", "global", time.Minute)
		conn("bob-1", "bob", "global", time.Minute)
		conn("stale", "carol", "global", time.Hour)    // the writer lost it: gone, deleted
		conn("young", "dana", "global", 5*time.Second) // gone for now: $connect in progress, kept
		conn("kitchen-1", "erin", "kitchen", time.Minute)
	}
	conns()
	for i, m := range []chat.Message{
		{RoomID: "global", MessageID: "m1", UserID: "alice", UserName: "Alice", Content: "<i>hi</i>", CreatedAt: store.Timestamp(now)},
		{RoomID: "global", MessageID: "m2", UserID: "bob", UserName: "bob", Content: "hello", CreatedAt: store.Timestamp(now.Add(time.Millisecond))},
		{RoomID: "kitchen", MessageID: "m3", UserID: "erin", UserName: "erin", Content: "pho?", CreatedAt: store.Timestamp(now.Add(2 * time.Millisecond))},
	} {
		if err := st.Chat.PutMessage(ctx, m); err != nil {
			t.Fatal(i, err)
		}
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	mgmt, client := newManagement(t)
	mgmt.gone["stale"], mgmt.gone["young"] = true, true
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Chat:      &notify.Chat{Store: st, Pusher: client, Now: func() time.Time { return now }, Fanout: 2},
		Logger:    slog.New(slog.DiscardHandler),
	}
	res, err := n.Handle(ctx, ev)
	if err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("as captured: %+v %v", res, err)
	}
	mgmt.mu.Lock()
	var order []string
	for _, m := range mgmt.frames["alice-1"] {
		order = append(order, m.MessageID+":"+m.Content)
	}
	mgmt.mu.Unlock()
	if fmt.Sprint(order) != "[m1:<i>hi</i> m2:hello]" {
		t.Errorf("alice's frames, in order and as written: %v", order)
	}
	want := map[string][]string{"alice-1": {"m1", "m2"}, "bob-1": {"m1", "m2"}, "kitchen-1": {"m3"}}
	if got := mgmt.received(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("received %v, want %v", got, want)
	}
	if _, err := st.Chat.GetConnection(ctx, "stale", now.Unix()); !errs.Is(err, errs.NotFound) {
		t.Errorf("the stale connection is still there: %v", err)
	}
	if _, err := st.Chat.GetConnection(ctx, "young", now.Unix()); err != nil {
		t.Errorf("the young connection was deleted: %v", err)
	}
	if p, g := n.Chat.Pushed.Load(), n.Chat.Gone.Load(); p != 5 || g != 2 {
		t.Errorf("pushed %d, gone %d; want 5 and 2 (a gone connection is not tried again for the batch's later messages)", p, g)
	}

	// bob's connection fails past the client's retries: the global
	// messages' records fail (the first one stops its room's group), the
	// kitchen's does not; once bob recovers, the retry reaches everyone
	// again with the same ids.
	mgmt.failing["bob-1"] = 100
	res, _ = n.Handle(ctx, ev)
	var failed []string
	for _, f := range res.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	var m1Seq, m3Seq string
	for _, r := range ev.Records {
		if strings.Contains(fmt.Sprint(r.Change.Keys["SK"]), "#m1") {
			m1Seq = r.Change.SequenceNumber
		}
		if strings.Contains(fmt.Sprint(r.Change.Keys["SK"]), "#m3") {
			m3Seq = r.Change.SequenceNumber
		}
	}
	if len(failed) != 1 || failed[0] != m1Seq || slices.Contains(failed, m3Seq) {
		t.Errorf("failures %v: want only m1's record %s", failed, m1Seq)
	}
	mgmt.failing["bob-1"] = 0
	if res, err := n.Handle(ctx, ev); err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("after recovery: %+v %v", res, err)
	}
	if got := mgmt.received(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the retry, received %v, want %v", got, want)
	}

	// Replays: the same deliveries (duplicates dropped by id) and the same
	// connections left, whatever the batches, duplicates, failures and
	// parallelism.
	ts := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	target := replay.Target{
		Handler: n.Handle,
		Reset: func(ctx context.Context) error {
			mgmt.mu.Lock()
			mgmt.frames = map[string][]chat.Message{}
			mgmt.mu.Unlock()
			conns() // the stale connection again
			return ts.Reset(ctx)
		},
		State: func(ctx context.Context) (any, error) {
			var left []string
			for _, room := range []string{"global", "kitchen"} {
				if err := st.Chat.EachRoomConnection(ctx, room, now.Unix(), func(c chat.Connection) error {
					left = append(left, c.ConnectionID)
					return nil
				}); err != nil {
					return nil, err
				}
			}
			sort.Strings(left)
			return map[string]any{"received": fmt.Sprint(mgmt.received()), "connections": left}, nil
		},
	}
	rep, err := replay.Check(ctx, ev, target, slices.Concat(replay.Schedules(2002, schedules(10, 4)), replay.Parallel(replay.Schedules(2003, schedules(10, 4)), 10),
		replay.KinesisSchedules(2004, schedules(3, 2)), replay.Parallel(replay.KinesisSchedules(2005, schedules(3, 2)), 10)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if got := rep.Baseline.(map[string]any)["connections"]; fmt.Sprint(got) != "[alice-1 bob-1 kitchen-1 young]" {
		t.Errorf("connections left: %v", got)
	}
}

// A search room's chat on the push path: a message is pushed only to the
// connections of current members (a removed member's open socket gets
// nothing sent after the removal, even when the message's record is
// handled before the removal's); the removal closes the removed member's
// connections to the room (DeleteConnection, then the item), and the
// room's deletion everyone's; a connection of the same user elsewhere
// stays. The same under every replay schedule.
func TestChatPushAuthorization(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	ts := func(d time.Duration) string { return store.Timestamp(now.Add(d)) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.Rooms.CreateRoom(ctx, room.Room{RoomID: "r1", Name: "Flat", CreatedByUserID: "alice", CreatedAt: ts(0), SearchType: "rent"})
	must(err)
	for _, u := range []string{"bob", "dave"} {
		must(st.Rooms.AddMember(ctx, room.Member{RoomID: "r1", UserID: u, Role: room.RoleMember, JoinedAt: ts(0)}))
	}
	for _, cn := range []chat.Connection{
		{ConnectionID: "alice-1", UserID: "alice", RoomID: "r1", SearchRoom: true},
		{ConnectionID: "bob-1", UserID: "bob", RoomID: "r1", SearchRoom: true},
		{ConnectionID: "dave-1", UserID: "dave", RoomID: "r1", SearchRoom: true},
		{ConnectionID: "bob-global", UserID: "bob", RoomID: "global"},
	} {
		cn.ConnectedAt, cn.TTL = ts(-time.Minute), now.Add(chat.ConnectionTTL).Unix()
		must(st.Chat.Connect(ctx, cn))
	}
	msg := func(id string, d time.Duration) {
		t.Helper()
		must(st.Chat.PutMessage(ctx, chat.Message{RoomID: "r1", MessageID: id, UserID: "alice", UserName: "alice", Content: id, CreatedAt: ts(d), SearchRoom: true}))
	}
	msg("m1", time.Millisecond)
	before, err := replay.Capture(ctx, c.Streams, arn)
	must(err)

	mgmt, client := newManagement(t)
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Chat:      &notify.Chat{Store: st, Pusher: client, Now: func() time.Time { return now }},
		Logger:    slog.New(slog.DiscardHandler),
	}
	if res, err := n.Handle(ctx, before); err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("before the removal: %+v %v", res, err)
	}
	if got := fmt.Sprint(mgmt.received()); got != "map[alice-1:[m1] bob-1:[m1] dave-1:[m1]]" {
		t.Fatalf("before the removal, every member gets m1: %s", got)
	}

	// bob is removed, then alice posts m2: the removal's and m2's records
	// come in one batch, in different groups (their partitions differ).
	bobItem, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: store.ConnectionKey("bob-1").AV()})
	must(err)
	must(st.Rooms.RemoveMember(ctx, "r1", "bob"))
	msg("m2", 2*time.Millisecond)
	if err := st.Chat.PutMessage(ctx, chat.Message{RoomID: "r1", MessageID: "m-bob", UserID: "bob", UserName: "bob", Content: "still here?", CreatedAt: ts(3 * time.Millisecond), SearchRoom: true}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a removed member's message: %v, want NotFound", err)
	}
	all, err := replay.Capture(ctx, c.Streams, arn)
	must(err)
	removal := all
	removal.Records = all.Records[len(before.Records):]

	connections := func(ctx context.Context) ([]string, error) {
		var left []string
		for _, r := range []string{"r1", "global"} {
			if err := st.Chat.EachRoomConnection(ctx, r, now.Unix(), func(c chat.Connection) error {
				left = append(left, c.ConnectionID)
				return nil
			}); err != nil {
				return nil, err
			}
		}
		sort.Strings(left)
		return left, nil
	}
	target := replay.Target{
		Handler: n.Handle,
		Reset: func(ctx context.Context) error {
			mgmt.mu.Lock()
			mgmt.frames, mgmt.gone, mgmt.closed = map[string][]chat.Message{}, map[string]bool{}, map[string]int{}
			mgmt.mu.Unlock()
			_, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: bobItem.Item}) // bob's socket, open again
			return err
		},
		State: func(ctx context.Context) (any, error) {
			left, err := connections(ctx)
			received := fmt.Sprint(mgmt.received())
			mgmt.mu.Lock()
			defer mgmt.mu.Unlock()
			return map[string]any{"received": received, "closed": slices.Sorted(maps.Keys(mgmt.closed)), "connections": left}, err
		},
	}
	rep, err := replay.Check(ctx, removal, target, slices.Concat(replay.Schedules(2701, schedules(8, 4)), replay.Parallel(replay.Schedules(2702, schedules(8, 4)), 4),
		replay.KinesisSchedules(2703, schedules(3, 2)), replay.Parallel(replay.KinesisSchedules(2704, schedules(3, 2)), 4)))
	must(err)
	must(rep.Err())
	want := map[string]any{"received": "map[alice-1:[m2] dave-1:[m2]]", "closed": []string{"bob-1"},
		"connections": []string{"alice-1", "bob-global", "dave-1"}}
	if fmt.Sprint(rep.Baseline) != fmt.Sprint(want) {
		t.Errorf("after bob's removal: %v, want %v", rep.Baseline, want)
	}
	if n.Chat.Withheld.Load() == 0 {
		t.Error("no push was withheld from bob's connection in any run")
	}

	// The room is deleted: its chat is sealed, everyone's connections to
	// it are closed, bob's elsewhere stays.
	must(st.Rooms.DeleteRoom(ctx, "r1", ts(time.Second)))
	if err := st.Chat.PutMessage(ctx, chat.Message{RoomID: "r1", MessageID: "m3", UserID: "alice", UserName: "alice", Content: "after", CreatedAt: ts(2 * time.Second), SearchRoom: true}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a message to a deleted room's chat: %v, want NotFound", err)
	}
	last, err := replay.Capture(ctx, c.Streams, arn)
	must(err)
	deletion := last
	deletion.Records = last.Records[len(all.Records):]
	mgmt.mu.Lock()
	mgmt.closed = map[string]int{}
	mgmt.mu.Unlock()
	if res, err := n.Handle(ctx, deletion); err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("the deletion: %+v %v", res, err)
	}
	if left, err := connections(ctx); err != nil || fmt.Sprint(left) != "[bob-global]" {
		t.Errorf("after the room's deletion, connections %v %v; want only bob's elsewhere", left, err)
	}
	mgmt.mu.Lock()
	closed := slices.Sorted(maps.Keys(mgmt.closed))
	mgmt.mu.Unlock()
	if fmt.Sprint(closed) != "[alice-1 dave-1]" {
		t.Errorf("closed by the deletion: %v, want alice-1 and dave-1", closed)
	}
}
