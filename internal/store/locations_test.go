package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/location"
	"github.com/dynastream/dynastream/internal/store"
)

func newLocation(i int, code string) location.Location {
	at := store.Timestamp(t0.Add(time.Duration(i) * time.Second))
	return location.Location{LocationID: fmt.Sprintf("01LOC%021d", i), LocationCode: code, Name: "Center " + code,
		PlaceID: "ChIJ" + code, FormattedAddress: "1 Main St", AddressComponents: map[string]string{"city": "Austin"},
		Lat: 30.2672, Lng: -97.7431, Status: location.Active, CreatedAt: at, UpdatedAt: at}
}

func TestLocationsSeed001(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLocation(1, "austin-main-01")
	if err := f.st.Locations.CreateLocation(f.ctx, l); err != nil {
		t.Fatal(err)
	}
	// The seed's keys: the location and its lookup.
	raw := f.getRaw("LOCATION#"+l.LocationID, "META")
	if raw == nil || raw["itemType"].(*types.AttributeValueMemberS).Value != "Location" {
		t.Fatalf("location item: %v", raw)
	}
	lk := f.getRaw("LOCATION_CODE#austin-main-01", "META")
	if lk == nil || lk["locationId"].(*types.AttributeValueMemberS).Value != l.LocationID || lk["itemType"].(*types.AttributeValueMemberS).Value != "LocationCodeLookup" {
		t.Fatalf("lookup item: %v", lk)
	}
	// Duplicate code: "code already taken", nothing written.
	dup := newLocation(2, "austin-main-01")
	err := f.st.Locations.CreateLocation(f.ctx, dup)
	if !errs.Is(err, errs.Conflict) || err.Error() != "conflict: code already taken: austin-main-01" {
		t.Fatalf("duplicate code: %v", err)
	}
	if f.getRaw("LOCATION#"+dup.LocationID, "META") != nil {
		t.Fatal("a partial location was written")
	}
	if got, err := f.st.Locations.GetLocation(f.ctx, l.LocationID); err != nil || got.LocationCode != l.LocationCode || got.AddressComponents["city"] != "Austin" {
		t.Fatalf("by id: %+v %v", got, err)
	}
	if got, err := f.st.Locations.GetLocationByCode(f.ctx, "austin-main-01"); err != nil || got.LocationID != l.LocationID {
		t.Fatalf("by code: %+v %v", got, err)
	}
	if _, err := f.st.Locations.GetLocationByCode(f.ctx, "nowhere"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown code: %v", err)
	}

	// Soft delete keeps the lookup: the code is never reused.
	if got, err := f.st.Locations.DeactivateLocation(f.ctx, l.LocationID, store.Timestamp(t0.Add(time.Hour))); err != nil || got.Status != location.Inactive {
		t.Fatalf("deactivate: %+v %v", got, err)
	}
	if err := f.st.Locations.CreateLocation(f.ctx, newLocation(3, "austin-main-01")); !errs.Is(err, errs.Conflict) {
		t.Fatalf("reuse of a deactivated code: %v", err)
	}

	// Change of code: one transaction; the old code becomes free.
	l2 := newLocation(4, "dallas-01")
	if err := f.st.Locations.CreateLocation(f.ctx, l2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Locations.ChangeLocationCode(f.ctx, l2, "austin-main-01", store.Timestamp(t0)); !errs.Is(err, errs.Conflict) {
		t.Fatalf("change to a taken code: %v", err)
	}
	if f.getRaw("LOCATION_CODE#dallas-01", "META") == nil {
		t.Fatal("a refused change removed the old lookup")
	}
	moved, err := f.st.Locations.ChangeLocationCode(f.ctx, l2, "dallas-02", store.Timestamp(t0.Add(2*time.Hour)))
	if err != nil || moved.LocationCode != "dallas-02" {
		t.Fatalf("change code: %+v %v", moved, err)
	}
	if f.getRaw("LOCATION_CODE#dallas-01", "META") != nil {
		t.Fatal("old lookup still there")
	}
	if got, err := f.st.Locations.GetLocationByCode(f.ctx, "dallas-02"); err != nil || got.LocationID != l2.LocationID {
		t.Fatalf("by new code: %+v %v", got, err)
	}
	if err := f.st.Locations.CreateLocation(f.ctx, newLocation(5, "dallas-01")); err != nil {
		t.Fatalf("the freed code: %v", err)
	}
}

func TestListLocations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	codes := []string{"c-03", "a-01", "e-05", "b-02", "d-04"}
	for i, c := range codes {
		if err := f.st.Locations.CreateLocation(f.ctx, newLocation(i, c)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.Locations.DeactivateLocation(f.ctx, newLocation(3, "b-02").LocationID, store.Timestamp(t0)); err != nil {
		t.Fatal(err)
	}
	collect := func(status string, order store.LocationOrder) []string {
		var out []string
		p := store.Page{Limit: 2}
		for {
			ls, next, err := f.st.Locations.ListLocations(f.ctx, status, order, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				out = append(out, l.LocationCode)
			}
			if next == "" {
				return out
			}
			p.Cursor = next
		}
	}
	for _, tc := range []struct {
		status string
		order  store.LocationOrder
		want   string
	}{
		{"", store.NewestFirst, "[d-04 b-02 e-05 a-01 c-03]"},
		{"", store.ByCode, "[a-01 b-02 c-03 d-04 e-05]"},
		{location.Active, store.ByCode, "[a-01 c-03 d-04 e-05]"},
		{location.Inactive, store.NewestFirst, "[b-02]"},
	} {
		if got := fmt.Sprint(collect(tc.status, tc.order)); got != tc.want {
			t.Errorf("status %q order %d: %s, want %s", tc.status, tc.order, got, tc.want)
		}
	}
}

// Concurrent creates of one code: exactly one wins, the others are told
// the code is taken, and no partial state exists.
func TestConcurrentCreateSameCode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 12
	var wg sync.WaitGroup
	errsOut := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errsOut[i] = f.st.Locations.CreateLocation(f.ctx, newLocation(100+i, "race-01"))
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errsOut {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("two winners: %d and %d", won, i)
			}
			won = i
		case !errs.Is(err, errs.Conflict):
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no winner")
	}
	for i := range n {
		exists := f.getRaw("LOCATION#"+newLocation(100+i, "").LocationID, "META") != nil
		if exists != (i == won) {
			t.Errorf("location %d exists=%v, winner %d", i, exists, won)
		}
	}
	lk := f.getRaw("LOCATION_CODE#race-01", "META")
	if lk["locationId"].(*types.AttributeValueMemberS).Value != newLocation(100+won, "").LocationID {
		t.Errorf("lookup points at %v", lk["locationId"])
	}
}

// Two read-modify-writes of one location: the second, based on a stale
// read, is a Conflict and changes nothing.
func TestUpdateLocationLostUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLocation(1, "upd-01")
	if err := f.st.Locations.CreateLocation(f.ctx, l); err != nil {
		t.Fatal(err)
	}
	a, b := l, l
	a.Name, a.UpdatedAt = "A", store.Timestamp(t0.Add(time.Hour))
	b.Name, b.UpdatedAt = "B", store.Timestamp(t0.Add(2*time.Hour))
	if _, err := f.st.Locations.UpdateLocation(f.ctx, a, l.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Locations.UpdateLocation(f.ctx, b, l.UpdatedAt); !errs.Is(err, errs.Conflict) {
		t.Fatalf("stale update: %v, want conflict", err)
	}
	if got, _ := f.st.Locations.GetLocation(f.ctx, l.LocationID); got.Name != "A" {
		t.Fatalf("name %q, want A", got.Name)
	}
	if _, err := f.st.Locations.UpdateLocation(f.ctx, b, "x"); !errs.Is(err, errs.Conflict) {
		t.Fatalf("%v", err)
	}
	ghost := newLocation(9, "ghost-01")
	if _, err := f.st.Locations.UpdateLocation(f.ctx, ghost, ghost.UpdatedAt); !errs.Is(err, errs.NotFound) {
		t.Fatalf("missing location: %v, want not found", err)
	}
}
