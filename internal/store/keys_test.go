package store_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// TestSeedKeys writes every search-room entity through the store and reads
// the raw items back: keys, itemType and derived marker are exactly the
// seed's (docs/design.md §2).
func TestSeedKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := store.Timestamp(t0)
	r := room.Room{RoomID: "r1", Name: "Flat", CreatedByUserID: "alice", CreatedAt: ts, SearchType: room.SearchRent,
		Context: room.Context{Description: "d", FamilySize: ip(3), CombineMode: room.ModeStrict}}
	owner, err := f.st.Rooms.CreateRoom(f.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if owner != (room.Member{RoomID: "r1", UserID: "alice", Role: room.RoleOwner, JoinedAt: ts}) {
		t.Errorf("owner = %+v", owner)
	}
	bob := room.Member{RoomID: "r1", UserID: "bob", Role: room.RoleMember, JoinedAt: store.Timestamp(t0.Add(time.Second))}
	if err := f.st.Rooms.AddMember(f.ctx, bob); err != nil {
		t.Fatal(err)
	}
	cv, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: "alice", Timestamp: ts,
		Criteria: room.Criteria{Locations: []string{"Zurich"}, PriceMin: fp(1000), PriceMax: fp(2000)},
		Weights:  room.Weights{Price: ip(5)}, Source: room.SourceManual})
	if err != nil {
		t.Fatal(err)
	}
	comb := room.CombinedVersion{RoomID: "r1", Timestamp: "2025-03-14T15:09:27.000Z", Combined: room.Combined{
		Criteria: room.Criteria{Locations: []string{"Zurich"}}, Weights: map[string]float64{"locations": 1},
		FromUserIDs: []string{"alice"}, CombineMode: room.ModeStrict, Conflicts: []string{}}}
	compat := room.CompatibilityVersion{RoomID: "r1", Timestamp: "2025-03-14T15:09:27.000Z", Compatibility: room.Compatibility{
		ScorePercent: 50, Level: room.LevelMedium, Comment: "c", CriteriaRefs: []string{"CRITERIA#alice#" + ts},
		Pairs: map[string]float64{"alice|bob": 0.5}}}
	if err := f.st.Rooms.PutDerived(f.ctx, store.Derived{Combined: []room.CombinedVersion{comb}, Compatibility: []room.CompatibilityVersion{compat}}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		pk, sk, itemType string
		derived          bool
		attrs            map[string]string // string attributes the item must carry
	}{
		{"ROOM#r1", "ROOM", "Room", false, map[string]string{"roomId": "r1", "name": "Flat", "createdByUserId": "alice", "createdAt": ts, "searchType": "rent"}},
		{"ROOM#r1", "MEMBER#alice", "Member", false, map[string]string{"roomId": "r1", "userId": "alice", "role": "owner", "joinedAt": ts}},
		{"USER#alice", "ROOM#r1", "UserRoom", false, map[string]string{"roomId": "r1", "userId": "alice", "role": "owner"}},
		{"ROOM#r1", "MEMBER#bob", "Member", false, map[string]string{"userId": "bob", "role": "member", "joinedAt": bob.JoinedAt}},
		{"USER#bob", "ROOM#r1", "UserRoom", false, map[string]string{"userId": "bob", "role": "member", "joinedAt": bob.JoinedAt}},
		{"ROOM#r1", "CRITERIA#alice#2025-03-14T15:09:26.535Z", "Criteria", false, map[string]string{"userId": "alice", "timestamp": ts, "source": "manual"}},
		{"ROOM#r1", "CRITERIA_COMBINED#2025-03-14T15:09:27.000Z", "CombinedCriteria", true, map[string]string{"roomId": "r1", "combineMode": "strict"}},
		{"ROOM#r1", "COMPATIBILITY#2025-03-14T15:09:27.000Z", "Compatibility", true, map[string]string{"roomId": "r1", "level": "medium"}},
	}
	for _, tt := range tests {
		it := f.getRaw(tt.pk, tt.sk)
		assertHead(t, it, tt.pk, tt.sk, tt.itemType, tt.derived)
		for k, want := range tt.attrs {
			if got := str(it, k); got != want {
				t.Errorf("%s/%s: %s = %q, want %q", tt.pk, tt.sk, k, got, want)
			}
		}
		for _, gsi := range []string{"GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK", "ttl"} {
			if _, ok := it[gsi]; ok {
				t.Errorf("%s/%s carries %s, which its entity has no use for", tt.pk, tt.sk, gsi)
			}
		}
	}
	if cv.Timestamp != ts {
		t.Errorf("PutCriteria moved the timestamp to %s with no clash", cv.Timestamp)
	}

	// Nothing else was written.
	var all []string
	for _, it := range f.scanAll() {
		all = append(all, str(it, "PK")+" "+str(it, "SK"))
	}
	var want []string
	for _, tt := range tests {
		want = append(want, tt.pk+" "+tt.sk)
	}
	sort.Strings(all)
	sort.Strings(want)
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("table contents (-want +got):\n%s", diff)
	}

	// The store reads back what it wrote.
	gotComb, err := f.st.Rooms.LatestCombined(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(comb, gotComb); diff != "" {
		t.Errorf("LatestCombined (-want +got):\n%s", diff)
	}
	gotCompat, err := f.st.Rooms.LatestCompatibility(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(compat, gotCompat); diff != "" {
		t.Errorf("LatestCompatibility (-want +got):\n%s", diff)
	}
	gotRoom, err := f.st.Rooms.GetRoom(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, gotRoom); diff != "" {
		t.Errorf("GetRoom (-want +got):\n%s", diff)
	}

	// Writing the snapshots again (a replayed record) changes nothing.
	if err := f.st.Rooms.PutDerived(f.ctx, store.Derived{Combined: []room.CombinedVersion{comb}, Compatibility: []room.CompatibilityVersion{compat}}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.scanAll()); n != len(tests) {
		t.Errorf("after rewriting the snapshots the table holds %d items, want %d", n, len(tests))
	}
}

func TestKeyBuilders(t *testing.T) {
	for _, tt := range []struct {
		got  store.Key
		want store.Key
	}{
		{store.RoomKey("r"), store.Key{PK: "ROOM#r", SK: "ROOM"}},
		{store.MemberKey("r", "u"), store.Key{PK: "ROOM#r", SK: "MEMBER#u"}},
		{store.UserRoomKey("u", "r"), store.Key{PK: "USER#u", SK: "ROOM#r"}},
		{store.CriteriaKey("r", "u", "T"), store.Key{PK: "ROOM#r", SK: "CRITERIA#u#T"}},
		{store.CombinedKey("r", "T"), store.Key{PK: "ROOM#r", SK: "CRITERIA_COMBINED#T"}},
		{store.CompatibilityKey("r", "T"), store.Key{PK: "ROOM#r", SK: "COMPATIBILITY#T"}},
	} {
		if tt.got != tt.want {
			t.Errorf("key = %+v, want %+v", tt.got, tt.want)
		}
	}
	// Timestamps are fixed width and sort as text.
	a := store.Timestamp(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	b := store.Timestamp(time.Date(2025, 1, 1, 0, 0, 0, 1_000_000, time.UTC))
	c := store.Timestamp(time.Date(2025, 1, 1, 0, 0, 1, 0, time.FixedZone("x", 3600)))
	if a != "2025-01-01T00:00:00.000Z" || !(a < b) || !(c < a) || len(a) != len(b) || len(b) != len(c) {
		t.Errorf("timestamps %q %q %q", a, b, c)
	}
	if p, err := store.ParseTimestamp(b); err != nil || !p.Equal(time.Date(2025, 1, 1, 0, 0, 0, 1_000_000, time.UTC)) {
		t.Errorf("ParseTimestamp(%q) = %v, %v", b, p, err)
	}
}

// TestMemberAtomic: Member and UserRoom are written together or not at all.
func TestMemberAtomic(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	carol := room.Member{RoomID: "missing", UserID: "carol", Role: room.RoleMember, JoinedAt: store.Timestamp(t0)}
	if err := f.st.Rooms.AddMember(f.ctx, carol); !errs.Is(err, errs.NotFound) {
		t.Fatalf("AddMember on a missing room: err = %v, want not found", err)
	}
	if n := len(f.scanAll()); n != 0 {
		t.Fatalf("AddMember on a missing room wrote %d items", n)
	}

	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: store.Timestamp(t0), SearchType: room.SearchBuy}); err != nil {
		t.Fatal(err)
	}
	carol.RoomID = "r1"
	if err := f.st.Rooms.AddMember(f.ctx, carol); err != nil {
		t.Fatal(err)
	}
	again := carol
	again.Role, again.JoinedAt = room.RoleOwner, store.Timestamp(t0.Add(time.Hour))
	if err := f.st.Rooms.AddMember(f.ctx, again); !errs.Is(err, errs.Conflict) {
		t.Fatalf("adding carol twice: err = %v, want conflict", err)
	}
	if got := str(f.getRaw("ROOM#r1", "MEMBER#carol"), "role"); got != room.RoleMember {
		t.Errorf("second AddMember changed the Member item: role %q", got)
	}
	if got := str(f.getRaw("USER#carol", "ROOM#r1"), "role"); got != room.RoleMember {
		t.Errorf("second AddMember changed the UserRoom item: role %q", got)
	}

	// A stray UserRoom item (no Member) blocks the pair: no Member alone.
	_, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "USER#dave"}, "SK": &types.AttributeValueMemberS{Value: "ROOM#r1"},
		"itemType": &types.AttributeValueMemberS{Value: "UserRoom"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	dave := room.Member{RoomID: "r1", UserID: "dave", Role: room.RoleMember, JoinedAt: store.Timestamp(t0)}
	if err := f.st.Rooms.AddMember(f.ctx, dave); !errs.Is(err, errs.Conflict) {
		t.Fatalf("AddMember with a stray UserRoom: err = %v, want conflict", err)
	}
	if f.getRaw("ROOM#r1", "MEMBER#dave") != nil {
		t.Error("Member item written without its UserRoom")
	}

	ms, next, err := f.st.Rooms.ListMembers(f.ctx, "r1", store.Page{})
	if err != nil || next != "" {
		t.Fatalf("ListMembers: next=%q err=%v", next, err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.UserID+":"+m.Role)
	}
	if diff := cmp.Diff([]string{"alice:owner", "carol:member"}, ids); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
}

// TestPutCriteriaSameMillisecond: versions are append-only; a clash on the
// millisecond moves the later version on by 1 ms.
func TestPutCriteriaSameMillisecond(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := store.Timestamp(t0)
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: ts, SearchType: room.SearchBuy}); err != nil {
		t.Fatal(err)
	}
	var stored []string
	for i := range 3 {
		cv, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: "alice", Timestamp: ts,
			Criteria: room.Criteria{RoomsMin: fp(float64(i + 1))}, Source: room.SourceManual})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, cv.Timestamp)
	}
	want := []string{"2025-03-14T15:09:26.535Z", "2025-03-14T15:09:26.536Z", "2025-03-14T15:09:26.537Z"}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("stored timestamps (-want +got):\n%s", diff)
	}
	// Another user at the same millisecond does not clash.
	cv, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: "bob", Timestamp: ts, Source: room.SourceManual})
	if err != nil || cv.Timestamp != ts {
		t.Fatalf("bob's version: %s, %v", cv.Timestamp, err)
	}

	items := f.queryRaw("ROOM#r1", "CRITERIA#alice#")
	if diff := cmp.Diff([]string{"CRITERIA#alice#" + want[0], "CRITERIA#alice#" + want[1], "CRITERIA#alice#" + want[2]}, sks(items)); diff != "" {
		t.Fatalf("alice's versions (-want +got):\n%s", diff)
	}
	for i, it := range items {
		if got := str(it, "timestamp"); got != want[i] {
			t.Errorf("version %d: timestamp attribute %q, want %q (same as its SK)", i, got, want[i])
		}
		n, ok := it["criteria"].(*types.AttributeValueMemberM).Value["roomsMin"].(*types.AttributeValueMemberN)
		if !ok || n.Value != string(rune('1'+i)) {
			t.Errorf("version %d: criteria.roomsMin = %#v, want %d (versions overwritten?)", i, n, i+1)
		}
	}

	vs, _, err := f.st.Rooms.ListCriteria(f.ctx, "r1", "alice", store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Timestamp)
	}
	if diff := cmp.Diff([]string{want[2], want[1], want[0]}, got); diff != "" {
		t.Errorf("ListCriteria(alice), newest first (-want +got):\n%s", diff)
	}
	latest, err := f.st.Rooms.LatestCriteria(f.ctx, "r1", "alice")
	if err != nil || latest.Timestamp != want[2] || *latest.Criteria.RoomsMin != 3 {
		t.Errorf("LatestCriteria = %+v, %v", latest, err)
	}
}

// TestCriteriaPrefixExcludesDerived: CRITERIA_COMBINED# items never come back
// from a begins_with CRITERIA# query.
func TestCriteriaPrefixExcludesDerived(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := store.Timestamp(t0)
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: ts, SearchType: room.SearchBuy, Context: room.Context{CombineMode: room.ModeMixed}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: u, Timestamp: ts, Criteria: room.Criteria{AreaMin: fp(50)}, Source: room.SourceManual}); err != nil {
			t.Fatal(err)
		}
	}
	var combs []room.CombinedVersion
	for i := range 3 {
		combs = append(combs, room.CombinedVersion{RoomID: "r1", Timestamp: store.Timestamp(t0.Add(time.Duration(i) * time.Second)),
			Combined: room.Combined{FromUserIDs: []string{"alice", "bob"}, CombineMode: room.ModeMixed, Weights: map[string]float64{"area": 1}}})
	}
	compat := []room.CompatibilityVersion{{RoomID: "r1", Timestamp: ts, Compatibility: room.Compatibility{ScorePercent: 100, Level: room.LevelExcellent}}}
	if err := f.st.Rooms.PutDerived(f.ctx, store.Derived{Combined: combs, Compatibility: compat}); err != nil {
		t.Fatal(err)
	}

	items := f.queryRaw("ROOM#r1", store.SKPrefixCriteria)
	if len(items) != 2 {
		t.Errorf("begins_with CRITERIA# returned %d items (%v), want the 2 criteria versions", len(items), sks(items))
	}
	for _, it := range items {
		if str(it, "itemType") != store.TypeCriteria {
			t.Errorf("begins_with CRITERIA# returned %s (%s)", str(it, "SK"), str(it, "itemType"))
		}
	}
	if got := sks(f.queryRaw("ROOM#r1", store.SKPrefixCombined)); len(got) != 3 {
		t.Errorf("begins_with CRITERIA_COMBINED# = %v, want 3 items", got)
	}

	vs, _, err := f.st.Rooms.ListCriteria(f.ctx, "r1", "", store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, v := range vs {
		users = append(users, v.UserID)
	}
	if diff := cmp.Diff([]string{"bob", "alice"}, users); diff != "" {
		t.Errorf("ListCriteria(all) users, SK descending (-want +got):\n%s", diff)
	}

	rooms, err := f.st.Rooms.GetRooms(f.ctx, []string{"r1", "nope", "r1"})
	if err != nil || len(rooms) != 1 || rooms["r1"].CreatedByUserID != "alice" {
		t.Fatalf("GetRooms = %+v, %v; want r1 only", rooms, err)
	}
	st, err := f.st.Rooms.SnapshotState(f.ctx, rooms["r1"], ts, ts)
	if err != nil {
		t.Fatal(err)
	}
	// bob put criteria but is not a member: only alice's are read.
	if !st.Exists || len(st.Members) != 1 || len(st.Criteria) != 1 || st.Criteria[0].SK != "CRITERIA#alice#"+ts {
		t.Fatalf("SnapshotState: exists=%v members=%d criteria=%+v", st.Exists, len(st.Members), st.Criteria)
	}

	latest, err := f.st.Rooms.LatestCombined(f.ctx, "r1")
	if err != nil || latest.Timestamp != combs[2].Timestamp {
		t.Errorf("LatestCombined = %+v, %v; want the newest", latest, err)
	}
}

func TestEnsureTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c, name := f.db, f.table
	arn1, err := store.EnsureTable(f.ctx, c, name) // the table exists already (ddbtest made it)
	if err != nil {
		t.Fatalf("EnsureTable on an existing table: %v", err)
	}
	arn2, err := store.EnsureTable(f.ctx, c, name)
	if err != nil {
		t.Fatalf("EnsureTable again: %v", err)
	}
	if arn1 == "" || arn1 != arn2 {
		t.Errorf("stream ARNs %q, %q: want one, unchanged", arn1, arn2)
	}

	out, err := c.DescribeTable(f.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	td := out.Table
	if got := keySchema(td.KeySchema); got != "PK HASH, SK RANGE" {
		t.Errorf("key schema = %s", got)
	}
	if s := td.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Errorf("stream = %+v, want NEW_AND_OLD_IMAGES", s)
	}
	if aws.ToString(td.LatestStreamArn) != arn1 {
		t.Errorf("LatestStreamArn = %s, EnsureTable returned %s", aws.ToString(td.LatestStreamArn), arn1)
	}
	if td.BillingModeSummary == nil || td.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing = %+v, want PAY_PER_REQUEST", td.BillingModeSummary)
	}
	gsis := map[string]string{}
	for _, g := range td.GlobalSecondaryIndexes {
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			t.Errorf("%s: projection %+v, want ALL", aws.ToString(g.IndexName), g.Projection)
		}
		gsis[aws.ToString(g.IndexName)] = keySchema(g.KeySchema)
	}
	wantGSIs := map[string]string{
		"GSI1": "GSI1PK HASH, GSI1SK RANGE",
		"GSI2": "GSI2PK HASH, GSI2SK RANGE",
		"GSI3": "GSI3PK HASH, GSI3SK RANGE",
	}
	if diff := cmp.Diff(wantGSIs, gsis); diff != "" {
		t.Errorf("GSIs (-want +got):\n%s", diff)
	}
	var attrs []string
	for _, a := range td.AttributeDefinitions {
		attrs = append(attrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	slices.Sort(attrs)
	if diff := cmp.Diff([]string{"GSI1PK:S", "GSI1SK:S", "GSI2PK:S", "GSI2SK:S", "GSI3PK:S", "GSI3SK:S", "PK:S", "SK:S"}, attrs); diff != "" {
		t.Errorf("attribute definitions (-want +got):\n%s", diff)
	}

	ttl, err := c.DescribeTimeToLive(f.ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "ttl" {
		t.Errorf("TTL = %+v, want ENABLED on ttl", d)
	}
}

func keySchema(ks []types.KeySchemaElement) string {
	var parts []string
	for _, k := range ks {
		parts = append(parts, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return strings.Join(parts, ", ")
}

// TestNoEmptyMaps: the store never writes an empty map attribute (DynamoDB
// Local's stream mangles them); reading treats the missing map as empty.
func TestNoEmptyMaps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ts := store.Timestamp(t0)
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: ts, SearchType: room.SearchBuy}); err != nil {
		t.Fatal(err)
	}
	cv, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: "alice", Timestamp: ts,
		Criteria: room.Criteria{Locations: []string{"Bern"}}, Weights: room.Weights{}, Source: room.SourceManual})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: "bob", Timestamp: ts, Source: room.SourceAIProposed}); err != nil {
		t.Fatal(err)
	}
	err = f.st.Rooms.PutDerived(f.ctx, store.Derived{
		Combined:      []room.CombinedVersion{{RoomID: "r1", Timestamp: ts, Combined: room.Combined{Weights: map[string]float64{}, FromUserIDs: []string{}, Conflicts: []string{}}}},
		Compatibility: []room.CompatibilityVersion{{RoomID: "r1", Timestamp: ts, Compatibility: room.Compatibility{Pairs: map[string]float64{}}}}})
	if err != nil {
		t.Fatal(err)
	}

	it := f.getRaw("ROOM#r1", "CRITERIA#alice#"+ts)
	if _, ok := it["weights"]; ok {
		t.Errorf("criteria version with weights {} stored a weights attribute: %#v", it["weights"])
	}
	if _, ok := it["criteria"]; !ok {
		t.Error("non-empty criteria was dropped")
	}
	if it := f.getRaw("ROOM#r1", "CRITERIA#bob#"+ts); it == nil {
		t.Error("bob's empty version is missing")
	} else if _, ok := it["criteria"]; ok {
		t.Errorf("empty criteria stored as %#v", it["criteria"])
	}
	for _, it := range f.scanAll() {
		assertNoEmptyMaps(t, it)
	}

	got, err := f.st.Rooms.LatestCriteria(f.ctx, "r1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cv, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := f.st.Rooms.LatestCombined(f.ctx, "r1"); err != nil {
		t.Errorf("LatestCombined of a snapshot with its maps dropped: %v", err)
	}
	if _, err := f.st.Rooms.LatestCompatibility(f.ctx, "r1"); err != nil {
		t.Errorf("LatestCompatibility of a snapshot with its maps dropped: %v", err)
	}
}

// SnapshotState reads, for each member who joined by the range's end, the
// versions from the newest at or before its start up to its end, and nothing
// older: every snapshot in the range sees each member's latest version as of
// its time, as from the whole history.
func TestSnapshotStateReadsTheRangeOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := func(s int) string { return store.Timestamp(t0.Add(time.Duration(s) * time.Second)) }
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: at(0), SearchType: room.SearchBuy, Context: room.Context{CombineMode: room.ModeMixed}}); err != nil {
		t.Fatal(err)
	}
	for u, joined := range map[string]int{"bob": 1, "carol": 100} {
		if err := f.st.Rooms.AddMember(f.ctx, room.Member{RoomID: "r1", UserID: u, Role: room.RoleMember, JoinedAt: at(joined)}); err != nil {
			t.Fatal(err)
		}
	}
	versions := map[string][]int{"alice": {}, "bob": {2, 5, 15, 25, 40}, "carol": {3, 12, 18}, "dave": {11}}
	for i := range 30 {
		versions["alice"] = append(versions["alice"], i)
	}
	full := room.State{Exists: true}
	for u, secs := range versions {
		for _, s := range secs {
			cv, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "r1", UserID: u, Timestamp: at(s), Criteria: room.Criteria{AreaMin: fp(float64(10*s + len(u)))}, Source: room.SourceManual})
			if err != nil {
				t.Fatal(err)
			}
			full.Criteria = append(full.Criteria, room.StoredCriteria{SK: store.CriteriaKey("r1", u, cv.Timestamp).SK, CriteriaVersion: cv})
		}
	}
	rooms, err := f.st.Rooms.GetRooms(f.ctx, []string{"r1"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.st.Rooms.SnapshotState(f.ctx, rooms["r1"], at(10), at(20))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range st.Criteria {
		got[c.UserID] = append(got[c.UserID], c.Timestamp)
	}
	want := map[string][]string{"bob": {at(5), at(15)}}
	for s := 10; s <= 20; s++ {
		want["alice"] = append(want["alice"], at(s))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions read (-want +got):\n%s", diff)
	}
	// A version the caller already holds at the single timestamp asked for
	// is that member's whole need: it comes back as given, and the others
	// are read.
	var bob15 room.StoredCriteria
	for _, c := range full.Criteria {
		if c.UserID == "bob" && c.Timestamp == at(15) {
			bob15 = c
		}
	}
	one, err := f.st.Rooms.SnapshotState(f.ctx, rooms["r1"], at(15), at(15), bob15)
	if err != nil {
		t.Fatal(err)
	}
	gotOne := map[string]string{}
	for _, c := range one.Criteria {
		gotOne[c.UserID] = c.Timestamp
	}
	if diff := cmp.Diff(map[string]string{"alice": at(15), "bob": at(15)}, gotOne); diff != "" {
		t.Errorf("with bob's version known (-want +got):\n%s", diff)
	}

	// The pure snapshot over this state is the one over the whole history,
	// anywhere in the range (dave is no member; carol joined later).
	full.Room, full.Members = rooms["r1"], st.Members
	for s := 10; s <= 20; s++ {
		if diff := cmp.Diff(projectionsSnapshot(full, at(s)), projectionsSnapshot(st, at(s))); diff != "" {
			t.Errorf("snapshot at %s differs from the full history's (-full +bounded):\n%s", at(s), diff)
		}
	}
}

// projectionsSnapshot is each member's latest version as of at — what the
// projector's Snapshot combines (the store cannot import projections).
func projectionsSnapshot(st room.State, at string) map[string]string {
	joined := map[string]bool{}
	for _, m := range st.Members {
		if m.JoinedAt <= at {
			joined[m.UserID] = true
		}
	}
	out := map[string]string{}
	for _, c := range st.Criteria {
		if joined[c.UserID] && c.Timestamp <= at && c.SK > out[c.UserID] {
			out[c.UserID] = c.SK
		}
	}
	return out
}
