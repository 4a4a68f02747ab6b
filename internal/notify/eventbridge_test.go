package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynastream/dynastream/eventbus"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/location"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// bus is an httptest server speaking EventBridge's PutEvents (JSON 1.1):
// it records what it accepts and fails a share of entries on demand
// (InternalFailure), as the service does under partial failure.
type bus struct {
	mu       sync.Mutex
	received []received
	rng      *rand.Rand
	failRate float64
}

type received struct {
	Source, DetailType string
	Detail             struct {
		ID             string          `json:"id"`
		SequenceNumber string          `json:"sequenceNumber"`
		ChangedAt      string          `json:"changedAt"`
		Version        int             `json:"version"`
		OccurredAt     string          `json:"occurredAt"`
		Data           json.RawMessage `json:"data"`
	}
}

func (b *bus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
		http.Error(w, `{"__type":"ValidationException","message":"not PutEvents"}`, http.StatusBadRequest)
		return
	}
	var in struct {
		Entries []struct {
			Source, DetailType, Detail, EventBusName string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Entries) == 0 || len(in.Entries) > 10 {
		http.Error(w, `{"__type":"ValidationException","message":"bad entries"}`, http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	type result struct {
		EventID      string `json:",omitempty"`
		ErrorCode    string `json:",omitempty"`
		ErrorMessage string `json:",omitempty"`
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	for _, e := range in.Entries {
		if e.EventBusName != "test-bus" {
			http.Error(w, `{"__type":"ValidationException","message":"wrong bus"}`, http.StatusBadRequest)
			return
		}
		if b.rng.Float64() < b.failRate {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: "InternalFailure", ErrorMessage: "injected"})
			continue
		}
		var rc received
		rc.Source, rc.DetailType = e.Source, e.DetailType
		if err := json.Unmarshal([]byte(e.Detail), &rc.Detail); err != nil {
			http.Error(w, `{"__type":"ValidationException","message":"detail"}`, http.StatusBadRequest)
			return
		}
		b.received = append(b.received, rc)
		out.Entries = append(out.Entries, result{EventID: fmt.Sprint(len(b.received))})
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// deduped returns the events received, one per id, as "source detailType
// id seq data", sorted by id.
// deduped returns the events received, once per id, and per item their
// names in order: by sequence number, as on a DynamoDB stream; or, with
// kinesis, by changedAt, as on a Kinesis data stream for DynamoDB, where a
// repeated record has another sequence number (left out of the lines).
func (b *bus) deduped(kinesis bool) (lines []string, perItem map[string][]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	byID := map[string]received{}
	for _, r := range b.received {
		byID[r.Detail.ID] = r
	}
	type ev struct {
		seq, id, name string
	}
	items := map[string][]ev{}
	for id, r := range byID {
		order := r.Detail.SequenceNumber
		if kinesis {
			order = r.Detail.ChangedAt
		}
		line := fmt.Sprintf("%s %s %s %s %s", r.Source, r.DetailType, id, order, r.Detail.Data)
		lines = append(lines, line)
		// The item: what the event is about, for per-item order.
		var d map[string]any
		_ = json.Unmarshal(r.Detail.Data, &d)
		var parts []string
		for _, k := range []string{"roomId", "listingId", "inviteId", "commentId", "locationId", "resourceId"} {
			if v, ok := d[k].(string); ok {
				parts = append(parts, k+"="+v)
			}
		}
		key := strings.Join(parts, ",")
		items[key] = append(items[key], ev{order, id, r.DetailType})

	}
	sort.Strings(lines)
	perItem = map[string][]string{}
	for k, evs := range items {
		// By sequence number (changedAt), then by index within one change
		// (ids end in -<n>).
		sort.Slice(evs, func(i, j int) bool {
			if evs[i].seq != evs[j].seq {
				return evs[i].seq < evs[j].seq
			}
			return evs[i].id < evs[j].id
		})
		for _, e := range evs {
			perItem[k] = append(perItem[k], e.name)
		}
	}
	return lines, perItem
}

// allEntities writes a scenario over every entity: rooms (members, criteria,
// listings and their lifecycle, a member leaving, a deleted room),
// collaboration, locations.
func allEntities(t *testing.T, st *store.Store) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	ts := func() string { at = at.Add(time.Second); return store.Timestamp(at) }
	f := func(v float64) *float64 { return &v }
	for _, id := range []string{"r1", "r2"} {
		_, err := st.Rooms.CreateRoom(ctx, room.Room{RoomID: id, Name: "Flat", CreatedByUserID: "alice", CreatedAt: ts(), SearchType: room.SearchRent, Context: room.Context{CombineMode: room.ModeStrict}})
		must(err)
		must(st.Rooms.AddMember(ctx, room.Member{RoomID: id, UserID: "bob", Role: room.RoleMember, JoinedAt: ts()}))
		_, err = st.Rooms.PutCriteria(ctx, room.CriteriaVersion{RoomID: id, UserID: "alice", Timestamp: ts(), Criteria: room.Criteria{Locations: []string{"Zurich"}, PriceMax: f(3000)}, Source: room.SourceManual})
		must(err)
		_, err = st.Rooms.PutCriteria(ctx, room.CriteriaVersion{RoomID: id, UserID: "bob", Timestamp: ts(), Criteria: room.Criteria{Locations: []string{"Zurich", "Basel"}, PriceMax: f(2500)}, Source: room.SourceManual})
		must(err)
		added := ts()
		l := room.Listing{ListingID: "l-" + id, RoomID: id, SourceBrand: "homegate", ExternalID: "HG-1", Title: "t", Location: "Zurich", Status: room.StatusUnseen,
			AddedAt: added, AddedByUserID: "bob", UpdatedAt: added, UpdatedByUserID: "bob"}
		must(st.Rooms.AddListing(ctx, l))
		l, err = st.Rooms.MarkSeen(ctx, l, "alice", ts())
		must(err)
		_, err = st.Rooms.SetListingStatus(ctx, l, room.StatusVisitPlanned, "bob", ts(), "")
		must(err)
	}
	must(st.Rooms.AddMember(ctx, room.Member{RoomID: "r1", UserID: "carol", Role: room.RoleMember, JoinedAt: ts()}))
	must(st.Rooms.RemoveMember(ctx, "r1", "carol"))
	must(st.Rooms.DeleteRoom(ctx, "r2", ts()))
	collabScenario(t, st)
	loc := location.Location{LocationID: "01LOC1", LocationCode: "austin-main-01", Name: "Austin", PlaceID: "p", FormattedAddress: "1 Main",
		Lat: 30.2, Lng: -97.7, Status: location.Active, CreatedAt: ts(), UpdatedAt: ts()}
	must(st.Locations.CreateLocation(ctx, loc))
	prev := loc.UpdatedAt
	loc.Name, loc.UpdatedAt = "Austin Main", ts()
	loc, err := st.Locations.UpdateLocation(ctx, loc, prev)
	must(err)
	loc, err = st.Locations.ChangeLocationCode(ctx, loc, "austin-main-02", ts())
	must(err)
	_, err = st.Locations.DeactivateLocation(ctx, loc.LocationID, ts())
	must(err)
}

// Issue 5's check: a scenario over all entities yields exactly the
// expected events, each once after dedupe by id, in per-item order (by
// sequence number), with duplicate delivery, shuffles, injected handler
// failures and EventBridge partial failures.
func TestDomainEventsToEventBridge(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	allEntities(t, st)
	ctx := context.Background()

	// The projector runs first, so its snapshots are on the stream too.
	core, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Deliver(ctx, core, replay.Target{Handler: (&projections.Projector{Store: st}).Handle}, replay.AsCaptured); err != nil {
		t.Fatal(err)
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}

	b := &bus{}
	srv := httptest.NewServer(b)
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		APIOptions: []func(*middleware.Stack) error{replay.APIOption}} // so the kit can crash between two PutEvents
	var rejected []string
	n := &notify.Notifier{Publisher: &notify.EventBridge{
		Bus: &eventbus.Publisher{Client: eventbus.NewClient(cfg, srv.URL), BusName: "test-bus", MaxAttempts: 2,
			Sleep: func(context.Context, time.Duration) error { return nil }},
		Rejected: func(_ context.Context, e events.Event, _ error) error { rejected = append(rejected, e.ID); return nil },
	}}
	var perItem map[string][]string
	target := replay.Target{
		Handler: n.Handle,
		// the bus fails 15% of calls: faults a retry cures, so nothing may
		// be dead-lettered for them
		OnFailure: replay.OnFailure{MaxRetries: stream.Retries(stream.Forever)},
		Reset: func(context.Context) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.received, b.rng, b.failRate = nil, rand.New(rand.NewPCG(uint64(len(rejected)), 9)), 0.15
			return nil
		},
		State: func(ctx context.Context) (any, error) {
			lines, items := b.deduped(replay.Delivered(ctx).Schedule.Kinesis())
			if perItem == nil {
				perItem = items
			} else if fmt.Sprint(items) != fmt.Sprint(perItem) {
				return nil, fmt.Errorf("per-item order differs:\n%v\n%v", items, perItem)
			}
			return lines, nil
		},
	}
	rep, err := replay.Check(ctx, ev, target, slices.Concat(replay.Schedules(5, schedules(10, 4)), replay.Parallel(replay.Schedules(6, schedules(10, 4)), 10),
		// as a Kinesis data stream for DynamoDB delivers: records repeated,
		// one item's out of order; the same events, each once by id, and
		// changedAt (the record's time to the microsecond) orders each item's
		replay.KinesisSchedules(7, schedules(4, 2)), replay.Parallel(replay.KinesisSchedules(8, schedules(4, 2)), 10)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 0 {
		t.Fatalf("events rejected: %v", rejected)
	}
	names := map[string]int{}
	for _, l := range rep.Baseline.([]string) {
		names[strings.Fields(l)[1]]++
	}
	for _, want := range []string{"RoomCreated", "MemberJoined", "MemberLeft", "CriteriaUpdated", "ListingPinned", "ListingStatusChanged", "ListingSeen",
		"RoomDeleted", "CombinedCriteriaUpdated", "CompatibilityUpdated", "ResourceCreated", "InviteCreated", "InviteAccepted",
		"CollaboratorAdded", "CommentCreated", "ReactionAdded", "ReactionRemoved", "NotificationPreferencesUpdated", "ProfileUpdated",
		"LocationCreated", "LocationUpdated", "LocationCodeChanged", "LocationDeactivated"} {
		if names[want] == 0 {
			t.Errorf("no %s among the events: %v", want, names)
		}
	}
	// Per item, in sequence order: the listing of r1 was pinned, seen, then moved.
	if got := perItem["roomId=r1,listingId=l-r1"]; fmt.Sprint(got) != "[ListingPinned ListingStatusChanged ListingSeen ListingStatusChanged]" {
		t.Errorf("r1's listing events in order: %v", got)
	}
	repeated, reordered := 0, 0
	for _, r := range rep.Runs {
		repeated += r.Stats.Repeated
		reordered += r.Stats.Reordered
	}
	if repeated == 0 || reordered == 0 {
		t.Fatalf("the Kinesis schedules repeated %d records and reordered %d: want both", repeated, reordered)
	}
}

// An event too large for any PutEvents call is dead-lettered with a clear
// log and counts as done: its record is not retried for ever; the others
// of the batch are published.
func TestOversizeEventDeadLettered(t *testing.T) {
	b := &bus{rng: rand.New(rand.NewPCG(1, 1))}
	srv := httptest.NewServer(b)
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		APIOptions: []func(*middleware.Stack) error{replay.APIOption}} // so the kit can crash between two PutEvents
	var rejected []string
	pub := &notify.EventBridge{
		Bus: &eventbus.Publisher{Client: eventbus.NewClient(cfg, srv.URL), BusName: "test-bus", MaxBytes: 400},
		Rejected: func(_ context.Context, e events.Event, cause error) error {
			rejected = append(rejected, e.ID)
			return nil
		},
	}
	small := events.Event{ID: "a-0", Source: events.SourceRooms, DetailType: "RoomDeleted", Version: 1, OccurredAt: "2026-01-01T00:00:00.000Z", Data: events.RoomDeleted{RoomID: "r1"}}
	big := events.Event{ID: "b-0", Source: events.SourceCollaboration, DetailType: "CommentCreated", Version: 1, OccurredAt: "2026-01-01T00:00:00.000Z",
		Data: events.CommentCreated{CommentID: "c", Text: strings.Repeat("x", 2000), Mentions: []string{}}}
	errs := pub.Publish(context.Background(), []events.Event{small, big})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("errors %v: the oversize event must count as done (dead-lettered)", errs)
	}
	if fmt.Sprint(rejected) != "[b-0]" {
		t.Fatalf("rejected %v", rejected)
	}
	if lines, _ := b.deduped(false); len(lines) != 1 || !strings.Contains(lines[0], "RoomDeleted a-0") {
		t.Fatalf("published %v", lines)
	}
}
