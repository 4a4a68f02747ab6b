package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) { ddbtest.MainLimited(m) }

// schedules is n, or at most short with -short (make test, whose five
// minutes they would pass); make test-long runs all n, under the race
// detector.
func schedules(n, short int) int {
	if testing.Short() {
		return min(n, short)
	}
	return n
}

var at = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// record builds a stream record as Lambda delivers it.
func record(t *testing.T, seq, eventName string, newImg, oldImg map[string]any) lambdaevents.DynamoDBEventRecord {
	t.Helper()
	conv := func(img map[string]any) map[string]lambdaevents.DynamoDBAttributeValue {
		if img == nil {
			return nil
		}
		av, err := attributevalue.MarshalMap(img)
		if err != nil {
			t.Fatal(err)
		}
		lm, err := attr.ToLambdaMap(av)
		if err != nil {
			t.Fatal(err)
		}
		return lm
	}
	img := newImg
	if img == nil {
		img = oldImg
	}
	return lambdaevents.DynamoDBEventRecord{
		EventID: "ev" + seq, EventName: eventName, EventSource: "aws:dynamodb", EventVersion: "1.1", AWSRegion: "us-east-1",
		Change: lambdaevents.DynamoDBStreamRecord{
			ApproximateCreationDateTime: lambdaevents.SecondsEpochTime{Time: at},
			Keys:                        conv(map[string]any{"PK": img["PK"], "SK": img["SK"]}),
			NewImage:                    conv(newImg), OldImage: conv(oldImg),
			SequenceNumber: seq, SizeBytes: 100, StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

func item(itemType, pk, sk string, derived bool, attrs map[string]any) map[string]any {
	m := map[string]any{"PK": pk, "SK": sk, "itemType": itemType}
	if derived {
		m["derived"] = true
	}
	for k, v := range attrs {
		m[k] = v
	}
	return m
}

// fakePublisher records what it is given and fails the event ids in fail.
type fakePublisher struct {
	mu    sync.Mutex
	fail  map[string]bool
	calls [][]events.Event
	short bool // return fewer results than events (a broken publisher)
	seen  func(context.Context, []events.Event)
}

// published returns every event published, call after call, and fails t
// when one key's events (keyOf their sequence number) are out of stream
// order: calls may split a batch, never reorder a key.
func (p *fakePublisher) published(t *testing.T, keyOf func(seq string) string) []events.Event {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var all []events.Event
	last := map[string]string{}
	for _, call := range p.calls {
		for _, e := range call {
			k := keyOf(e.SequenceNumber)
			if e.SequenceNumber < last[k] {
				t.Errorf("event %s (seq %s) published after seq %s of its key %s", e.ID, e.SequenceNumber, last[k], k)
			}
			last[k] = e.SequenceNumber
			all = append(all, e)
		}
	}
	return all
}

// batchKey is the key of batch's records by sequence number: room r2's
// 009, room r1's or bob's the rest (bob's UserRoom has no events).
func batchKey(seq string) string {
	if seq == "009" {
		return "ROOM#r2"
	}
	return "ROOM#r1"
}

func (p *fakePublisher) Publish(ctx context.Context, evs []events.Event) []error {
	if p.seen != nil {
		p.seen(ctx, evs)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, evs)
	if p.short {
		return nil
	}
	out := make([]error, len(evs))
	for i, e := range evs {
		if p.fail[e.ID] {
			out[i] = errors.New("boom")
		}
	}
	return out
}

func failures(resp lambdaevents.DynamoDBEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	sort.Strings(ids)
	return ids
}

func batch(t *testing.T) lambdaevents.DynamoDBEvent {
	room1 := item("Room", "ROOM#r1", "ROOM", false, map[string]any{"roomId": "r1", "name": "Flat", "createdByUserId": "alice"})
	member := item("Member", "ROOM#r1", "MEMBER#bob", false, map[string]any{"roomId": "r1", "userId": "bob", "role": "member"})
	userRoom := item("UserRoom", "USER#bob", "ROOM#r1", false, map[string]any{"roomId": "r1", "userId": "bob"})
	crit := item("Criteria", "ROOM#r1", "CRITERIA#bob#T", false, map[string]any{"roomId": "r1", "userId": "bob", "criteria": map[string]any{"priceMax": 2000}})
	comb := item("CombinedCriteria", "ROOM#r1", "CRITERIA_COMBINED#T", true, map[string]any{"roomId": "r1", "fromUserIds": []string{"bob"}})
	activity := item("Activity", "ROOM#r1", "ACTIVITY#T#a1", true, map[string]any{"roomId": "r1", "GSI1PK": "x", "ttl": 1})
	return lambdaevents.DynamoDBEvent{Records: []lambdaevents.DynamoDBEventRecord{
		record(t, "001", "INSERT", room1, nil),
		record(t, "002", "INSERT", member, nil),
		record(t, "003", "INSERT", userRoom, nil),
		record(t, "004", "INSERT", crit, nil),
		record(t, "005", "INSERT", comb, nil),
		record(t, "006", "INSERT", activity, nil),
		record(t, "007", "WHATEVER", member, member), // undecodable: unknown event name, both images
		record(t, "008", "REMOVE", nil, member),
		record(t, "009", "INSERT", item("Room", "ROOM#r2", "ROOM", false, map[string]any{"roomId": "r2", "name": "Loft", "createdByUserId": "alice"}), nil),
	}}
}

// Records are handled by partition key, each key in stream order and
// stopped at its first failure: room r1's undecodable 007 holds back r1's
// later 008 (its MemberLeft is not published before 007 is done), while
// r2's 009, later in the batch, is published. Each key reports its first
// unfinished record — r1's is 002, whose event failed — and Lambda delivers
// again from the lowest.
func TestHandleStopsEachKeyAtItsFirstFailure(t *testing.T) {
	pub := &fakePublisher{fail: map[string]bool{"ev002-0": true, "ev005-0": true}}
	n := &notify.Notifier{Publisher: pub}
	resp, err := n.Handle(context.Background(), batch(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"002"}, failures(resp)); diff != "" {
		t.Errorf("batch item failures (-want +got):\n%s", diff)
	}
	all := pub.published(t, batchKey)
	// r1's later events go out in 002's call, or not at all: once its
	// event has failed, they are held back (their records come again)
	var failedCall int
	for i, call := range pub.calls {
		if slices.ContainsFunc(call, func(e events.Event) bool { return e.ID == "ev002-0" }) {
			failedCall = i
		}
	}
	var heldBack []string
	for _, seq := range []string{"004", "005"} {
		if !slices.ContainsFunc(pub.calls[failedCall], func(e events.Event) bool { return e.SequenceNumber == seq }) {
			heldBack = append(heldBack, seq)
		}
	}
	all = slices.DeleteFunc(all, func(e events.Event) bool { return slices.Contains(heldBack, e.SequenceNumber) })
	slices.SortStableFunc(all, func(a, b events.Event) int { return strings.Compare(a.SequenceNumber, b.SequenceNumber) })
	type brief struct{ ID, DetailType, Seq string }
	var got []brief
	for _, e := range all {
		got = append(got, brief{e.ID, e.DetailType, e.SequenceNumber})
	}
	want := []brief{
		{"ev001-0", "RoomCreated", "001"},
		{"ev002-0", "MemberJoined", "002"},
		{"ev004-0", "CriteriaUpdated", "004"},
		{"ev005-0", "CombinedCriteriaUpdated", "005"},
		{"ev009-0", "RoomCreated", "009"},
	}
	want = slices.DeleteFunc(want, func(b brief) bool { return slices.Contains(heldBack, b.Seq) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("published events, %v held back (-want +got):\n%s", heldBack, diff)
	}

	// Delivered again from 002 with nothing failing, r1 stops at 007 once
	// more and its later 008 still waits.
	again := &fakePublisher{}
	n.Publisher = again
	resp, err = n.Handle(context.Background(), lambdaevents.DynamoDBEvent{Records: batch(t).Records[1:]})
	if err != nil || !slices.Equal(failures(resp), []string{"007"}) {
		t.Errorf("redelivery from 002: failures %v, err %v; want 007", failures(resp), err)
	}

	// Data is the entity: no keys, index attributes or markers.
	var ev events.Event
	for _, e := range again.published(t, batchKey) {
		if e.SequenceNumber == "005" {
			ev = e
		}
	}
	wantData := map[string]any{"roomId": "r1", "fromUserIds": []any{"bob"}, // typed: every field of the schema
		"combineMode": "", "conflicts": nil, "criteria": nil, "timestamp": "", "weights": nil}
	if diff := cmp.Diff(wantData, dataMap(t, ev.Data)); diff != "" {
		t.Errorf("CombinedCriteriaUpdated data (-want +got):\n%s", diff)
	}
	if ev.OccurredAt != "2025-03-14T15:09:26.000Z" || ev.Source != events.SourceRooms || ev.Version != 1 {
		t.Errorf("envelope = %+v", ev)
	}
	// Without the undecodable record, r1's removal goes out; its data comes
	// from the old image.
	pub = &fakePublisher{}
	n.Publisher = pub
	b := batch(t)
	b.Records = slices.Delete(b.Records, 6, 7)
	if resp, err := n.Handle(context.Background(), b); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("without 007: failures %v, err %v", failures(resp), err)
	}
	var left events.Event
	for _, e := range pub.published(t, batchKey) {
		if e.SequenceNumber == "008" {
			left = e
		}
	}
	if left.DetailType != "MemberLeft" || dataMap(t, left.Data)["userId"] != "bob" {
		t.Errorf("MemberLeft data comes from the old image: %+v", left)
	}
}

func TestHandleAllPublished(t *testing.T) {
	pub := &fakePublisher{}
	n := &notify.Notifier{Publisher: pub}
	b := batch(t)
	b.Records = slices.Delete(b.Records, 6, 7) // drop the undecodable one
	resp, err := n.Handle(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v, want none", failures(resp))
	}

	// A batch without events does not call the publisher.
	pub = &fakePublisher{}
	n.Publisher = pub
	resp, err = n.Handle(context.Background(), lambdaevents.DynamoDBEvent{Records: b.Records[2:3]}) // UserRoom only
	if err != nil || len(resp.BatchItemFailures) != 0 || len(pub.calls) != 0 {
		t.Errorf("UserRoom-only batch: resp=%v err=%v publish calls=%d", failures(resp), err, len(pub.calls))
	}
}

func TestHandleTTLRemovals(t *testing.T) {
	member := item("Member", "ROOM#r1", "MEMBER#bob", false, map[string]any{"roomId": "r1", "userId": "bob"})
	service := record(t, "001", "REMOVE", nil, member)
	service.UserIdentity = &lambdaevents.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	local := record(t, "002", "UNKNOWN_TO_SDK_VERSION", nil, member) // DynamoDB Local's TTL delete
	c, err := notify.ToChange(service)
	if err != nil || c.Kind != events.TTLRemove {
		t.Errorf("service TTL delete: kind %q, err %v", c.Kind, err)
	}
	c, err = notify.ToChange(local)
	if err != nil || c.Kind != events.TTLRemove {
		t.Errorf("DynamoDB Local TTL delete: kind %q, err %v", c.Kind, err)
	}
	pub := &fakePublisher{}
	resp, err := (&notify.Notifier{Publisher: pub}).Handle(context.Background(), lambdaevents.DynamoDBEvent{Records: []lambdaevents.DynamoDBEventRecord{service, local}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp=%v err=%v", failures(resp), err)
	}
	if all := pub.published(t, batchKey); len(all) != 2 || all[0].DetailType != "MemberLeft" || all[1].DetailType != "MemberLeft" {
		t.Errorf("published %+v, want two MemberLeft", pub.calls)
	}
}

// blockingDeadLetters holds each Put until release is closed (or the test's
// budget ends).
type blockingDeadLetters struct {
	release  chan struct{}
	timedOut atomic.Bool
	stream.MemoryDeadLetters
}

func (d *blockingDeadLetters) Put(ctx context.Context, dl stream.DeadLetter) error {
	select {
	case <-d.release:
	case <-time.After(5 * time.Second):
		d.timedOut.Store(true)
	}
	return d.MemoryDeadLetters.Put(ctx, dl)
}

// A record's events go out once its own step is done, not when the
// batch's slowest group is: room r1's group is held (its undecodable record
// is being dead-lettered, and that waits for r2's event to be published)
// while room r2's event is published. Were events published after every
// group, this would wait out the dead letter's 5 s and fail.
func TestEventsDoNotWaitForTheSlowestGroup(t *testing.T) {
	dl := &blockingDeadLetters{release: make(chan struct{})}
	var once sync.Once
	pub := &fakePublisher{seen: func(_ context.Context, evs []events.Event) {
		for _, e := range evs {
			if e.SequenceNumber == "009" {
				once.Do(func() { close(dl.release) })
			}
		}
	}}
	n := &notify.Notifier{Publisher: pub, DeadLetters: dl}
	start := time.Now()
	resp, err := n.Handle(context.Background(), batch(t))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v, err %v", failures(resp), err)
	}
	if dl.timedOut.Load() {
		t.Fatalf("room r2's event was not published while room r1's group was held (%s)", time.Since(start))
	}
	if got := len(pub.published(t, batchKey)); got != 6 {
		t.Errorf("published %d events, want 6 (every record's but the dead letter's and the UserRoom's)", got)
	}
	if n := len(dl.All()); n != 1 {
		t.Errorf("%d dead letters, want the undecodable record's", n)
	}
}

// panicking is a Publisher with a bug.
type panicking struct{}

func (panicking) Publish(context.Context, []events.Event) []error { panic("publisher bug") }

// A Publisher that panics fails the records whose events it was given, as
// a group's panic fails its record: the batch answers, the process goes on.
func TestHandlePanickingPublisher(t *testing.T) {
	resp, err := (&notify.Notifier{Publisher: panicking{}}).Handle(context.Background(), batch(t))
	if err != nil {
		t.Fatal(err)
	}
	// each key with events fails at its first record (r1 at 001, r2 at 009)
	if got := failures(resp); !slices.Equal(got, []string{"001", "009"}) {
		t.Errorf("failures %v, want 001 and 009", got)
	}
}

func TestHandleBrokenPublisher(t *testing.T) {
	pub := &fakePublisher{short: true}
	b := batch(t)
	resp, err := (&notify.Notifier{Publisher: pub}).Handle(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	// No event counts as published: each key with events fails at its first
	// record (r1 at 001, r2 at 009; bob's UserRoom has none).
	if diff := cmp.Diff([]string{"001", "009"}, failures(resp)); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

func readLines(t *testing.T, path string) []events.Event {
	t.Helper()
	evs, err := outbox.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestNotifierOnRealStream runs the notifier on the records DynamoDB Local's
// stream carries for writes made through the store, into the outbox.
func TestNotifierOnRealStream(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	ctx := context.Background()
	st := store.New(c.DB, table)
	ts := store.Timestamp(at)
	if _, err := st.Rooms.CreateRoom(ctx, room.Room{RoomID: "r1", Name: "Flat", CreatedByUserID: "alice", CreatedAt: ts, SearchType: room.SearchRent, Context: room.Context{CombineMode: room.ModeMixed}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Rooms.AddMember(ctx, room.Member{RoomID: "r1", UserID: "bob", Role: room.RoleMember, JoinedAt: ts}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Rooms.PutCriteria(ctx, room.CriteriaVersion{RoomID: "r1", UserID: "bob", Timestamp: ts, Criteria: room.Criteria{Locations: []string{"Bern"}}, Source: room.SourceManual}); err != nil {
		t.Fatal(err)
	}
	if err := st.Rooms.PutDerived(ctx, store.Derived{Combined: []room.CombinedVersion{{RoomID: "r1", Timestamp: ts, Combined: room.Combined{FromUserIDs: []string{"bob"}, CombineMode: room.ModeMixed}}}, Compatibility: nil}); err != nil {
		t.Fatal(err)
	}

	recs := readStream(t, c.Streams, arn, 7)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	resp, err := (&notify.Notifier{Publisher: &outbox.Outbox{Path: path}}).Handle(ctx, lambdaevents.DynamoDBEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: failures %v, err %v", failures(resp), err)
	}
	got := readLines(t, path)
	var names []string
	byID := map[string]bool{}
	for i, e := range got {
		names = append(names, e.DetailType)
		byID[e.ID] = true
		d := dataMap(t, e.Data)
		if d["PK"] != nil || d["SK"] != nil || d["itemType"] != nil || d["derived"] != nil {
			t.Errorf("event %d carries internal attributes: %v", i, d)
		}
		if d["roomId"] != "r1" {
			t.Errorf("event %d: roomId %v", i, d["roomId"])
		}
	}
	sort.Strings(names)
	want := []string{"CombinedCriteriaUpdated", "CriteriaUpdated", "MemberJoined", "MemberJoined", "RoomCreated"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("events from the real stream (-want +got):\n%s", diff)
	}
	for _, r := range recs {
		c, err := notify.ToChange(r)
		if err != nil {
			t.Fatal(err)
		}
		if c.ItemType != store.TypeUserRoom && !byID[r.EventID+"-0"] {
			t.Errorf("no event with id %s-0 for record %s (%s)", r.EventID, r.Change.SequenceNumber, c.ItemType)
		}
	}
}

func readStream(t *testing.T, sc *dynamodbstreams.Client, arn string, want int) []lambdaevents.DynamoDBEventRecord {
	t.Helper()
	ev, err := replay.Capture(context.Background(), sc, arn)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) != want {
		t.Fatalf("read %d stream records, want %d", len(ev.Records), want)
	}
	return ev.Records
}

// dataMap returns an event's data as plain JSON values.
func dataMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
