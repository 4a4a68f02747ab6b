package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// A Unit holds a transactional write until Commit, which sends it with the
// guards in one transaction: all of it or (a guard or the write's own
// condition failing) none. A second write in one unit is refused. The
// request record a commit writes is what BeginRequest finds as done.
func TestUnit(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "n", CreatedByUserID: "alice", CreatedAt: store.Timestamp(t0), SearchType: room.SearchRent}); err != nil {
		t.Fatal(err)
	}
	listing := func(id string) room.Listing {
		return room.Listing{ListingID: id, RoomID: "r1", SourceBrand: "homegate", Title: "t", Status: room.StatusUnseen, SeenBy: []string{},
			AddedAt: store.Timestamp(t0), AddedByUserID: "alice", UpdatedAt: store.Timestamp(t0), UpdatedByUserID: "alice"}
	}
	held := func(id string) *store.Unit {
		ctx, u := store.Defer(f.ctx)
		if err := f.st.Rooms.AddListing(ctx, listing(id)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.Rooms.AddListing(ctx, listing(id+"-second")); !errors.Is(err, store.ErrHeld) {
			t.Fatalf("a second write in a unit: %v, want ErrHeld", err)
		}
		if k := store.ListingKey("r1", id); f.getRaw(k.PK, k.SK) != nil {
			t.Fatal("a held write was sent")
		}
		return u
	}

	// a guard that fails: nothing written
	u := held("l1")
	ok, err := f.st.Commit(f.ctx, u, f.st.MemberCheck("r1", "mallory", false))
	if err != nil || ok {
		t.Fatalf("commit with a failing guard: %v, %v; want not written", ok, err)
	}
	if _, err := f.st.Rooms.GetListing(f.ctx, "r1", "l1"); err == nil {
		t.Error("the write of a refused commit is there")
	}

	// guards that hold: the write and the request record
	resp := store.StoredResponse{Status: 201, ContentType: "application/json", Location: "/rooms/r1/listings/l1", Body: `{"listingId":"l1"}`}
	rec, err := f.st.RequestRecord("alice", "key-1", "fp", t0, 24*time.Hour, resp)
	if err != nil {
		t.Fatal(err)
	}
	ok, err = f.st.Commit(f.ctx, held("l1"), f.st.MemberCheck("r1", "alice", false), rec)
	if err != nil || !ok {
		t.Fatalf("commit: %v, %v", ok, err)
	}
	if _, err := f.st.Rooms.GetListing(f.ctx, "r1", "l1"); err != nil {
		t.Errorf("the committed listing: %v", err)
	}
	state, _, stored, _, err := f.st.Requests.BeginRequest(f.ctx, "alice", "key-1", "fp", t0.Add(time.Second), time.Minute, 24*time.Hour)
	if err != nil || state != store.RequestDone || stored != resp {
		t.Errorf("the key after the commit: state %v, %+v, %v; want done with the response", state, stored, err)
	}
	if state, _, _, _, _ := f.st.Requests.BeginRequest(f.ctx, "alice", "key-1", "other", t0.Add(time.Second), time.Minute, 24*time.Hour); state != store.RequestMismatch {
		t.Errorf("the key with another fingerprint: state %v, want mismatch", state)
	}

	// the same key again: refused, nothing written
	rec2, _ := f.st.RequestRecord("alice", "key-1", "fp", t0.Add(time.Minute), 24*time.Hour, resp)
	if ok, err := f.st.Commit(f.ctx, held("l2"), rec2); err != nil || ok {
		t.Errorf("a second commit with the key: %v, %v; want not written", ok, err)
	}
	if _, err := f.st.Rooms.GetListing(f.ctx, "r1", "l2"); err == nil {
		t.Error("the second commit's listing is there")
	}
	// an empty unit commits nothing
	_, empty := store.Defer(f.ctx)
	if ok, err := f.st.Commit(f.ctx, empty); ok || err != nil {
		t.Errorf("an empty unit: %v, %v", ok, err)
	}
}
