package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// fixture is a store on a fresh table plus the raw client to look behind it.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *dynamodb.Client
	table string
	st    *store.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c, name, _ := ddbtest.Table(t)
	return &fixture{t: t, ctx: context.Background(), db: c.DB, table: name, st: store.New(c.DB, name)}
}

// getRaw reads an item with a raw GetItem (nil when absent).
func (f *fixture) getRaw(pk, sk string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.db.GetItem(f.ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(f.table),
		Key:            store.Key{PK: pk, SK: sk}.AV(),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		f.t.Fatalf("GetItem %s/%s: %v", pk, sk, err)
	}
	return out.Item
}

// queryRaw runs a raw Query: PK = pk AND begins_with(SK, prefix), ascending.
func (f *fixture) queryRaw(pk, prefix string) []map[string]types.AttributeValue {
	f.t.Helper()
	in := &dynamodb.QueryInput{
		TableName:              aws.String(f.table),
		KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
		},
		ConsistentRead: aws.Bool(true),
	}
	if prefix != "" {
		in.KeyConditionExpression = aws.String("PK = :pk AND begins_with(SK, :sk)")
		in.ExpressionAttributeValues[":sk"] = &types.AttributeValueMemberS{Value: prefix}
	}
	var items []map[string]types.AttributeValue
	p := dynamodb.NewQueryPaginator(f.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(f.ctx)
		if err != nil {
			f.t.Fatalf("Query %s %s*: %v", pk, prefix, err)
		}
		items = append(items, out.Items...)
	}
	return items
}

// scanAll reads the whole (small, per-test) table.
func (f *fixture) scanAll() []map[string]types.AttributeValue {
	f.t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(f.db, &dynamodb.ScanInput{TableName: aws.String(f.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(f.ctx)
		if err != nil {
			f.t.Fatalf("Scan: %v", err)
		}
		items = append(items, out.Items...)
	}
	return items
}

func str(it map[string]types.AttributeValue, name string) string {
	if s, ok := it[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func sks(items []map[string]types.AttributeValue) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, str(it, "SK"))
	}
	return out
}

// assertNoEmptyMaps fails if any map attribute, at any depth (through maps
// and lists), is empty.
func assertNoEmptyMaps(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	var walk func(path string, v types.AttributeValue)
	walk = func(path string, v types.AttributeValue) {
		switch v := v.(type) {
		case *types.AttributeValueMemberM:
			if len(v.Value) == 0 {
				t.Errorf("item %s/%s: empty map attribute at %s", str(item, "PK"), str(item, "SK"), path)
			}
			for k, e := range v.Value {
				walk(path+"."+k, e)
			}
		case *types.AttributeValueMemberL:
			for i, e := range v.Value {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	for k, v := range item {
		walk(k, v)
	}
}

// assertHead checks an item's key, itemType and derived marker.
func assertHead(t *testing.T, it map[string]types.AttributeValue, pk, sk, itemType string, derived bool) {
	t.Helper()
	if it == nil {
		t.Fatalf("item %s/%s: missing", pk, sk)
	}
	if got := str(it, "PK"); got != pk {
		t.Errorf("PK = %q, want %q", got, pk)
	}
	if got := str(it, "SK"); got != sk {
		t.Errorf("%s: SK = %q, want %q", pk, got, sk)
	}
	if got := str(it, "itemType"); got != itemType {
		t.Errorf("%s/%s: itemType = %q, want %q", pk, sk, got, itemType)
	}
	d, has := it["derived"]
	switch {
	case derived:
		b, ok := d.(*types.AttributeValueMemberBOOL)
		if !ok || !b.Value {
			t.Errorf("%s/%s: derived = %#v, want BOOL true", pk, sk, d)
		}
	case has:
		t.Errorf("%s/%s: core item carries derived = %#v", pk, sk, d)
	}
	assertNoEmptyMaps(t, it)
}

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

func TestCreateRoomConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: store.Timestamp(t0), SearchType: room.SearchBuy, Context: room.Context{CombineMode: room.ModeAll}}
	if _, err := f.st.Rooms.CreateRoom(f.ctx, r); err != nil {
		t.Fatal(err)
	}
	r2 := r
	r2.CreatedByUserID, r2.Name = "mallory", "stolen"
	if _, err := f.st.Rooms.CreateRoom(f.ctx, r2); !errs.Is(err, errs.Conflict) {
		t.Fatalf("second CreateRoom: err = %v, want conflict", err)
	}
	got, err := f.st.Rooms.GetRoom(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("room after rejected overwrite (-want +got):\n%s", diff)
	}
	if f.getRaw(store.UserPK("mallory"), "ROOM#r1") != nil || f.getRaw("ROOM#r1", "MEMBER#mallory") != nil {
		t.Error("rejected CreateRoom wrote mallory's membership")
	}
	if _, err := f.st.Rooms.GetRoom(f.ctx, "nope"); !errs.Is(err, errs.NotFound) {
		t.Errorf("GetRoom(missing): err = %v, want not found", err)
	}
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"r1", "r2", "r3"} {
		if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: id, Name: id, CreatedByUserID: "alice", CreatedAt: store.Timestamp(t0), SearchType: room.SearchRent}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		if i > 5 {
			t.Fatal("pagination does not end")
		}
		ms, next, err := f.st.Rooms.ListUserRooms(f.ctx, "alice", store.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) > 2 {
			t.Fatalf("page of %d items with limit 2", len(ms))
		}
		for _, m := range ms {
			got = append(got, m.RoomID)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"r1", "r2", "r3"}, got); diff != "" {
		t.Errorf("rooms across pages (-want +got):\n%s", diff)
	}

	// A cursor is only good for the list it came from.
	_, next, err := f.st.Rooms.ListUserRooms(f.ctx, "alice", store.Page{Limit: 1})
	if err != nil || next == "" {
		t.Fatalf("first page: next=%q err=%v", next, err)
	}
	for name, c := range map[string]string{
		"garbage":           "!!!",
		"not json":          "bm90IGpzb24",
		"other partition":   next, // used on bob's list below
		"empty json object": "e30",
	} {
		_, _, err := f.st.Rooms.ListUserRooms(f.ctx, "bob", store.Page{Limit: 1, Cursor: c})
		var e *errs.Error
		if !errs.Is(err, errs.Invalid) || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "cursor" {
			t.Errorf("%s cursor: err = %v, want invalid naming cursor", name, err)
		}
	}
	// A members cursor does not page criteria.
	_, _, err = f.st.Rooms.ListCriteria(f.ctx, "r1", "", store.Page{Cursor: encodeForTest(t, f, "r1")})
	if !errs.Is(err, errs.Invalid) {
		t.Errorf("members cursor on criteria list: err = %v, want invalid", err)
	}
}

// encodeForTest returns a genuine cursor of the members list of roomID.
func encodeForTest(t *testing.T, f *fixture, roomID string) string {
	t.Helper()
	if err := f.st.Rooms.AddMember(f.ctx, room.Member{RoomID: roomID, UserID: "zed", Role: room.RoleMember, JoinedAt: store.Timestamp(t0)}); err != nil {
		t.Fatal(err)
	}
	_, next, err := f.st.Rooms.ListMembers(f.ctx, roomID, store.Page{Limit: 1})
	if err != nil || next == "" {
		t.Fatalf("members page: next=%q err=%v", next, err)
	}
	return next
}

func TestLatestAndMissing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.st.Rooms.LatestCriteria(f.ctx, "r1", "alice"); !errs.Is(err, errs.NotFound) {
		t.Errorf("LatestCriteria on empty table: %v, want not found", err)
	}
	if _, err := f.st.Rooms.LatestCombined(f.ctx, "r1"); !errs.Is(err, errs.NotFound) {
		t.Errorf("LatestCombined on empty table: %v, want not found", err)
	}
	if _, err := f.st.Rooms.LatestCompatibility(f.ctx, "r1"); !errs.Is(err, errs.NotFound) {
		t.Errorf("LatestCompatibility on empty table: %v, want not found", err)
	}
	if _, err := f.st.Rooms.GetMember(f.ctx, "r1", "alice"); !errs.Is(err, errs.NotFound) {
		t.Errorf("GetMember on empty table: %v, want not found", err)
	}
	// "al" is a prefix of "alice": alice's versions are not al's.
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: store.Timestamp(t0), SearchType: room.SearchBuy}); err != nil {
		t.Fatal(err)
	}
	for i, ts := range []time.Time{t0, t0.Add(time.Second)} {
		cv := room.CriteriaVersion{RoomID: "r1", UserID: "alice", Timestamp: store.Timestamp(ts), Criteria: room.Criteria{PriceMax: fp(float64(1000 * (i + 1)))}, Source: room.SourceManual}
		if _, err := f.st.Rooms.PutCriteria(f.ctx, cv); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.Rooms.LatestCriteria(f.ctx, "r1", "al"); !errs.Is(err, errs.NotFound) {
		t.Errorf("LatestCriteria(al) with only alice's versions: %v, want not found", err)
	}
	got, err := f.st.Rooms.LatestCriteria(f.ctx, "r1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Timestamp != store.Timestamp(t0.Add(time.Second)) || *got.Criteria.PriceMax != 2000 {
		t.Errorf("latest = %+v, want the second version", got)
	}
	if !strings.HasPrefix(got.Timestamp, "2025-03-14T15:09:27.535") {
		t.Errorf("timestamp %q not in TimeLayout", got.Timestamp)
	}
}

// A criteria version for a room that does not exist (or was just deleted,
// its cascade pending) is refused: nothing could clean it up later.
func TestPutCriteriaNeedsTheRoom(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.st.Rooms.PutCriteria(f.ctx, room.CriteriaVersion{RoomID: "gone", UserID: "alice", Timestamp: store.Timestamp(t0),
		Criteria: room.Criteria{Locations: []string{"Bern"}}, Source: room.SourceManual})
	if !errs.Is(err, errs.NotFound) {
		t.Fatalf("PutCriteria on a missing room: %v, want not found", err)
	}
	if _, err := f.st.Rooms.LatestCriteria(f.ctx, "gone", "alice"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a version was written: %v", err)
	}
}

// PutEach writes items in shared calls and answers for each: an item given
// twice is written once and both get its result; a call that fails fails
// only the items it held.
func TestPutEach(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	item := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk},
			"itemType": &types.AttributeValueMemberS{Value: "Test"},
		}
	}
	var items []map[string]types.AttributeValue
	for i := range 60 {
		items = append(items, item("P", fmt.Sprintf("%02d", i)))
	}
	items = append(items, item("P", "07")) // a duplicate of item 7
	items[40] = item("P", "")              // an empty sort key: DynamoDB refuses its call
	errs := f.st.PutEach(f.ctx, items)
	if len(errs) != len(items) {
		t.Fatalf("%d results for %d items", len(errs), len(items))
	}
	// The unique items go in calls of 25 in order: 0–24, 25–49, 50–59; the
	// duplicate is not sent again.
	for i, err := range errs {
		bad := i >= 25 && i < 50
		if bad != (err != nil) {
			t.Errorf("item %d: err %v, want failed=%v", i, err, bad)
		}
		if !bad && i < 60 && f.getRaw("P", fmt.Sprintf("%02d", i)) == nil {
			t.Errorf("item %d reported written but is not there", i)
		}
	}
	if errs[60] != nil || errs[7] != nil {
		t.Errorf("duplicate and original: %v, %v", errs[60], errs[7])
	}
}

// An Idempotency-Key released after a failure (a 5xx) is taken over at
// once, as of its first start; forgotten (a 429) it starts afresh; cut
// short longer ago than MaxAsOf it is stale: its outcome is unknown.
func TestRequestKeyReleaseAndStale(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	begin := func(key string, at time.Time) (store.RequestState, store.RequestClaim) {
		t.Helper()
		st, c, _, _, err := f.st.Requests.BeginRequest(f.ctx, "alice", key, "fp", at, 30*time.Second, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return st, c
	}
	st, c := begin("k1", t0)
	if st != store.RequestStarted || !c.StartedAt.Equal(t0) {
		t.Fatalf("first: %v %v", st, c.StartedAt)
	}
	if err := f.st.Requests.ReleaseRequest(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	if st, c := begin("k1", t0.Add(time.Second)); st != store.RequestStarted || !c.StartedAt.Equal(t0) {
		t.Errorf("after a release: %v as of %v, want Started as of %v", st, c.StartedAt, t0)
	}
	_, c = begin("k2", t0)
	if err := f.st.Requests.AbortRequest(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	if st, c := begin("k2", t0.Add(time.Minute)); st != store.RequestStarted || !c.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("after an abort: %v as of %v, want a fresh start", st, c.StartedAt)
	}
	begin("k3", t0) // and its run crashes: never ended
	if st, _ := begin("k3", t0.Add(time.Minute)); st != store.RequestStarted {
		t.Errorf("within MaxAsOf: %v, want a takeover", st)
	}
	begin("k4", t0)
	if st, _ := begin("k4", t0.Add(store.MaxAsOf+time.Minute)); st != store.RequestStale {
		t.Errorf("past MaxAsOf: %v, want Stale", st)
	}
}
