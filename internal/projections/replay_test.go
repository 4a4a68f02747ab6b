package projections_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) { ddbtest.MainLimited(m) }

func f(v float64) *float64 { return &v }
func w(v int) *int         { return &v }

// scenario writes a multi-user scenario through the store: three rooms (one
// per combine mode), members joining before and after criteria are put,
// several versions per user. It returns the clock's last time.
type scenario struct {
	st  *store.Store
	now time.Time
	t   *testing.T
}

// schedules is how many replay schedules of each kind (sequential,
// parallel) a sweep runs: n, or 4 under -short, as make test runs them
// (make test-long runs this package whole under the race detector,
// without -short). Four of each still shuffle, duplicate, fail and crash.
func schedules(n int) int {
	if testing.Short() {
		return min(n, 4)
	}
	return n
}

// kinesisSchedules are Kinesis's deliveries (replay.KinesisSchedules: one
// item's records repeated and out of order) at ParallelizationFactor 1 and
// 10, three of each; none with -short (make test), whose time they would
// pass: make test-long runs them, and TestProjectorKinesisReplay.
func kinesisSchedules(seed uint64) []replay.Schedule {
	if testing.Short() {
		return nil
	}
	return append(replay.KinesisSchedules(seed, 3), replay.Parallel(replay.KinesisSchedules(seed+1, 3), 10)...)
}

func (s *scenario) tick() string {
	s.now = s.now.Add(time.Second)
	return store.Timestamp(s.now)
}

func (s *scenario) room(id string, mode room.Mode, owner string) {
	s.t.Helper()
	r := room.Room{RoomID: id, Name: "room " + id, CreatedByUserID: owner, CreatedAt: s.tick(), SearchType: room.SearchRent, Context: room.Context{CombineMode: mode}}
	if _, err := s.st.Rooms.CreateRoom(context.Background(), r); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) join(roomID, user string) {
	s.t.Helper()
	if err := s.st.Rooms.AddMember(context.Background(), room.Member{RoomID: roomID, UserID: user, Role: room.RoleMember, JoinedAt: s.tick()}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) put(roomID, user string, c room.Criteria, wt room.Weights) {
	s.t.Helper()
	if _, err := s.st.Rooms.PutCriteria(context.Background(), room.CriteriaVersion{RoomID: roomID, UserID: user, Timestamp: s.tick(), Criteria: c, Weights: wt, Source: room.SourceManual}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) listing(roomID, id, externalID, by string) room.Listing {
	s.t.Helper()
	at := s.tick()
	l := room.Listing{ListingID: id, RoomID: roomID, SourceBrand: "homegate", ExternalID: externalID, Title: "Flat " + id, Location: "Zurich",
		Status: room.StatusUnseen, AddedAt: at, AddedByUserID: by, UpdatedAt: at, UpdatedByUserID: by}
	if err := s.st.Rooms.AddListing(context.Background(), l); err != nil {
		s.t.Fatal(err)
	}
	return l
}

// runScenario writes the scenario. Its clock starts an hour ago, so that a
// member's leaving — timed by the stream record's creation time — comes
// after everything else, as it does in real use.
func runScenario(t *testing.T, st *store.Store) {
	ctx := context.Background()
	s := &scenario{st: st, now: time.Now().UTC().Add(-time.Hour).Truncate(time.Second), t: t}
	for i, mode := range []room.Mode{room.ModeStrict, room.ModeAll, room.ModeMixed} {
		id := fmt.Sprintf("r%d", i+1)
		s.room(id, mode, "alice")
		s.put(id, "alice", room.Criteria{Locations: []string{"Zurich", "Basel"}, PriceMin: f(1500), PriceMax: f(3000), RoomsMin: f(3), Features: []string{"balcony"}}, room.Weights{Price: w(5)})
		s.join(id, "bob")
		s.put(id, "bob", room.Criteria{Locations: []string{"Zurich"}, PriceMin: f(2000), PriceMax: f(3500), RoomsMin: f(2), RoomsMax: f(4), Features: []string{"lift"}}, room.Weights{})
		s.put(id, "carol", room.Criteria{Locations: []string{"Bern"}}, room.Weights{}) // not a member (yet): ignored until she joins
		s.join(id, "carol")
		s.put(id, "alice", room.Criteria{Locations: []string{"Zurich", "Bern"}, PriceMax: f(2800), AreaMin: f(70), Features: []string{"balcony", "lift"}}, room.Weights{Locations: w(4), Area: w(2)})
		s.join(id, "dave") // never puts criteria
		s.put(id, "carol", room.Criteria{Locations: []string{"Bern", "Zurich"}, PriceMin: f(1800), PriceMax: f(2600), AreaMin: f(60)}, room.Weights{Area: w(5)})
		s.put(id, "bob", room.Criteria{Locations: []string{"Zurich"}, PriceMin: f(2000), PriceMax: f(2900), RoomsMin: f(3), RoomsMax: f(4)}, room.Weights{Rooms: w(0)})
		l := s.listing(id, "l1"+id, "ext-1", "bob")
		s.listing(id, "l2"+id, "", "carol")
		l, err := st.Rooms.MarkSeen(ctx, l, "alice", s.tick()) // UNSEEN → SEEN
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Rooms.SetListingStatus(ctx, l, room.StatusVisitPlanned, "bob", s.tick(), ""); err != nil {
			t.Fatal(err)
		}
		if err := st.Rooms.RemoveMember(ctx, id, "dave"); err != nil { // dave leaves
			t.Fatal(err)
		}
	}
	// A fourth room lives and is deleted: its cascade must leave nothing.
	s.room("r4", room.ModeMixed, "alice")
	s.join("r4", "bob")
	s.put("r4", "alice", room.Criteria{Locations: []string{"Basel"}}, room.Weights{})
	s.put("r4", "bob", room.Criteria{Locations: []string{"Basel", "Bern"}}, room.Weights{})
	s.listing("r4", "l1r4", "ext-1", "bob")
	if err := st.Rooms.DeleteRoom(ctx, "r4", s.tick()); err != nil {
		t.Fatal(err)
	}
}

// projectorScenario runs the scenario on a table of its own and returns
// its store, its stream as captured, and the projector as the kit's
// target over the table's derived items.
func projectorScenario(t *testing.T) (*store.Store, events.DynamoDBEvent, replay.Target) {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	runScenario(t, st)
	ev, err := replay.Capture(context.Background(), c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	ts := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	return st, ev, replay.Target{Handler: p.Handle, Reset: ts.Reset, State: ts.State}
}

// The projector's derived state is the same when the stream comes as a
// Kinesis data stream for DynamoDB delivers it: one item's records
// repeated and out of order (DynamoDB Developer Guide, "Change data capture
// for Kinesis Data Streams with DynamoDB"), at ParallelizationFactor 1 and
// 10. Its snapshots are computed "as of" their source change from the core
// items, its activities and counts keyed by the change: none assumes one
// item's order. (A long test, as the other projector tests' Kinesis
// schedules.)
func TestProjectorKinesisReplay(t *testing.T) {
	_, ev, target := projectorScenario(t)
	rep, err := replay.Check(context.Background(), ev, target,
		append(replay.KinesisSchedules(20261207, 6), replay.Parallel(replay.KinesisSchedules(20261208, 6), 10)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	var total replay.Stats
	for _, r := range rep.Runs {
		total.Repeated += r.Stats.Repeated
		total.Reordered += r.Stats.Reordered
	}
	if total.Repeated == 0 || total.Reordered == 0 {
		t.Fatalf("the Kinesis schedules repeated %d records and reordered %d: want both", total.Repeated, total.Reordered)
	}
}

// The projector's derived state is identical however the stream is
// delivered: as captured, every record twice, random batch sizes, shuffled
// across items, and with injected failures and retries.
func TestProjectorReplayEquivalence(t *testing.T) {
	st, ev, target := projectorScenario(t)
	ctx := context.Background()
	// 3 rooms × (room + owner's member and userroom + 3 × (member + userroom)
	// + 6 criteria + 2 listings + 1 source lookup + 2 status changes + dave's
	// member and userroom removed) = 3 × 22; r4: room, 2 × (member +
	// userroom), 2 criteria, listing + lookup, room removed, its chat
	// sealed = 11.
	if got, want := len(ev.Records), 3*22+11; got != want {
		t.Fatalf("captured %d records, want %d", got, want)
	}

	rep, err := replay.Check(ctx, ev, target, append(replay.Schedules(20261121, schedules(12)), replay.Parallel(replay.Schedules(20261122, schedules(12)), 10)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	dups, failures := 0, 0
	for _, r := range rep.Runs {
		if r.Schedule.Duplicate {
			dups++
		}
		failures += r.Stats.InjectedFailures
	}
	if dups == 0 || failures == 0 {
		t.Fatalf("schedules exercised %d duplicate runs and %d injected failures; want both > 0", dups, failures)
	}
	// Per room, triggers after alice's first criteria: alice1, bob joins,
	// bob1, carol's put before she joined (a snapshot as of then: alice and
	// bob only), carol joins, alice2, dave joins, carol2, bob2 = 9 combined;
	// compatibility needs two members with criteria, so from bob1 on = 7.
	// Activities: RoomCreated, 4 × MemberJoined (owner included), 6 ×
	// CriteriaUpdated and one CompatibilityUpdated per compatibility = 18.
	// Then 2 ListingPinned, 2 ListingStatusChanged, dave's MemberLeft, and a
	// snapshot as of his leaving (combined, compatibility and its entry): 8.
	// The deleted room r4 has nothing left.
	items := rep.Baseline.([]map[string]any)
	if got, want := len(items), 3*(9+7+18+8); got != want {
		t.Fatalf("baseline has %d derived items, want %d", got, want)
	}

	// The latest snapshots of the strict room, worked out by hand from the
	// final versions: alice2, bob2, carol2 (dave has none).
	comb, err := st.Rooms.LatestCombined(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantComb := room.Combined{
		Criteria: room.Criteria{
			Locations: []string{"Zurich"},         // {Zurich,Bern} ∩ {Zurich} ∩ {Bern,Zurich}
			PriceMin:  f(2000), PriceMax: f(2600), // max(2000,1800), min(2800,2900,2600)
			RoomsMin: f(3), RoomsMax: f(4), // bob only
			AreaMin:  f(70),                       // max(70,60)
			Features: []string{"balcony", "lift"}, // alice only
		},
		Weights:     map[string]float64{"locations": 4, "price": 1, "rooms": 0, "area": 5, "features": 1},
		FromUserIDs: []string{"alice", "bob", "carol"},
		CombineMode: room.ModeStrict,
		Conflicts:   []string{},
	}
	if diff := cmp.Diff(wantComb, comb.Combined); diff != "" {
		t.Errorf("strict combined (-want +got):\n%s", diff)
	}
	for _, it := range items {
		if strings.HasPrefix(it["PK"].(string), "ROOM#r4") {
			t.Errorf("deleted room r4 still has derived item %v", it["SK"])
		}
	}
	left, err := st.DB.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(st.Table), KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "ROOM#r4"}},
	})
	if err != nil || len(left.Items) != 0 {
		t.Errorf("r4's partition after the cascade: %v items (err %v)", left, err)
	}
	for _, u := range []string{"alice", "bob"} {
		ur, err := st.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.Table), Key: store.UserRoomKey(u, "r4").AV()})
		if err != nil || ur.Item != nil {
			t.Errorf("%s's UserRoom of r4 after the cascade: %v (err %v)", u, ur.Item, err)
		}
	}
	assertNoDrift(t, st) // the newest snapshots equal what the rooms derive now
}

// A derived item on the stream (the projector's own write) triggers nothing,
// and an undecodable record is reported as a batch item failure while the
// rest of the batch is still projected.
func TestProjectorIgnoresDerivedAndReportsPoison(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	s := &scenario{st: st, now: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), t: t}
	s.room("r", room.ModeAll, "alice")
	s.put("r", "alice", room.Criteria{Locations: []string{"Zurich"}}, room.Weights{})
	ctx := context.Background()
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	poison := events.DynamoDBEventRecord{EventID: "poison", EventName: "BOGUS", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "999999999999999999999",
		Keys:           map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ROOM#r"), "SK": events.NewStringAttribute("X")},
		NewImage:       map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ROOM#r")},
		OldImage:       map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ROOM#r")},
	}}
	ev.Records = append(ev.Records, poison)
	p := &projections.Projector{Store: st}
	resp, err := p.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != poison.Change.SequenceNumber {
		t.Fatalf("failures = %+v, want only the poison record", resp.BatchItemFailures)
	}
	if _, err := st.Rooms.LatestCombined(ctx, "r"); err != nil {
		t.Fatalf("the good records were not projected: %v", err)
	}

	// The derived items the projector just wrote are on the stream now;
	// handing them back changes nothing and reports nothing.
	all, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	derived := all.Records[len(ev.Records)-1:]
	if len(derived) == 0 {
		t.Fatal("no derived records on the stream")
	}
	for _, r := range derived {
		ch, err := stream.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if !ch.Derived() {
			t.Fatalf("record %s is not derived", r.EventID)
		}
		if _, ok, _ := projections.EffectsOf(ch); ok {
			t.Fatalf("derived record %s triggered a projection", r.EventID)
		}
	}
}
