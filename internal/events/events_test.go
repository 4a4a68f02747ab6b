package events_test

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/store"
)

var update = flag.Bool("update", false, "rewrite docs/events.md")

// Adding an entity means saying what its changes mean: a type of the table
// without an entry in the catalogue's mappers fails here.
func TestEveryItemTypeIsMapped(t *testing.T) {
	for _, it := range store.ItemTypes {
		if !events.Mapped(it) {
			t.Errorf("item type %s has no event mapping (register it in internal/events, with nil if its changes mean nothing outside)", it)
		}
	}
}

// The catalogue document is generated from the Go types: stale is a failure.
func TestCatalogueDocument(t *testing.T) {
	const path = "../../docs/events.md"
	doc := events.Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/events -run TestCatalogueDocument -update)", err)
	}
	if string(got) != doc {
		t.Fatal("docs/events.md is stale: run go test ./internal/events -run TestCatalogueDocument -update")
	}
}

// Every example fits its own schema: the required fields are there and no
// field is unknown.
func TestExamplesMatchSchemas(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range events.Catalogue() {
		if seen[d.Name] {
			t.Errorf("%s defined twice", d.Name)
		}
		seen[d.Name] = true
		b, _ := json.Marshal(d.Example)
		var ex map[string]any
		if err := json.Unmarshal(b, &ex); err != nil {
			t.Fatal(err)
		}
		s := d.Schema()
		props := s["properties"].(map[string]any)
		for k := range ex {
			if _, ok := props[k]; !ok {
				t.Errorf("%s: example field %s not in the schema", d.Name, k)
			}
		}
		if req, ok := s["required"].([]string); ok {
			for _, k := range req {
				if _, ok := ex[k]; !ok {
					t.Errorf("%s: required %s missing from the example", d.Name, k)
				}
			}
		}
	}
}

var at = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func change(itemType string, kind events.Kind, old, cur map[string]any) events.Change {
	return events.Change{EventID: "ev", SequenceNumber: "000042", Kind: kind, At: at, ItemType: itemType, Old: old, New: cur}
}

func TestMap(t *testing.T) {
	listing := map[string]any{"roomId": "r1", "listingId": "l1", "status": "UNSEEN", "seenBy": []any{}, "updatedAt": "2026-03-01T08:00:00.000Z", "updatedByUserId": "bob",
		"sourceBrand": "homegate", "externalId": "HG-1", "title": "t", "location": "Zurich", "addedByUserId": "bob", "addedAt": "2026-03-01T08:00:00.000Z"}
	seenAndMoved := map[string]any{"roomId": "r1", "listingId": "l1", "status": "SEEN", "seenBy": []any{"alice"}, "updatedAt": "2026-03-01T08:30:00.000Z", "updatedByUserId": "alice"}
	seenOnly := map[string]any{"roomId": "r1", "listingId": "l1", "status": "UNSEEN", "seenBy": []any{"carol"}, "updatedAt": "2026-03-01T08:00:00.000Z", "updatedByUserId": "bob"}
	invite := map[string]any{"inviteId": "i1", "resourceType": "goal", "resourceId": "g1", "inviterId": "alice", "inviteeId": "bob",
		"inviteeEmail": "bob@example.com", "status": "pending", "expiresAt": "2026-04-01T00:00:00.000Z", "createdAt": "2026-03-01T00:00:00.000Z"}
	accepted := map[string]any{"inviteId": "i1", "resourceType": "goal", "resourceId": "g1", "inviterId": "alice", "status": "accepted", "respondedBy": "bob", "updatedAt": "2026-03-02T00:00:00.000Z"}
	loc := map[string]any{"locationId": "L1", "locationCode": "a-01", "name": "A", "placeId": "p", "formattedAddress": "1 Main", "lat": 1.5, "lng": 2.5, "status": "active", "updatedAt": "x"}
	locMoved := map[string]any{"locationId": "L1", "locationCode": "a-02", "name": "A", "placeId": "p", "formattedAddress": "1 Main", "lat": 1.5, "lng": 2.5, "status": "inactive", "updatedAt": "y"}
	for _, tc := range []struct {
		name string
		c    events.Change
		want []string // detail types
		data []string // a JSON fragment each event's data must contain
	}{
		{"room created", change("Room", events.Insert, nil, map[string]any{"roomId": "r1", "name": "n", "createdByUserId": "alice", "searchType": "rent", "createdAt": "2026-03-01T08:00:00.000Z", "context": map[string]any{"combineMode": "strict"}}),
			[]string{"RoomCreated"}, []string{`"combineMode":"strict"`}},
		{"room deleted", change("Room", events.Remove, map[string]any{"roomId": "r1"}, nil), []string{"RoomDeleted"}, []string{`"roomId":"r1"`}},
		{"listing pinned", change("Listing", events.Insert, nil, listing), []string{"ListingPinned"}, []string{`"externalId":"HG-1"`}},
		{"listing seen and moved", change("Listing", events.Modify, listing, seenAndMoved), []string{"ListingStatusChanged", "ListingSeen"},
			[]string{`"from":"UNSEEN","to":"SEEN"`, `"userIds":["alice"],"seenAt":"2026-03-01T08:30:00.000Z"`}},
		{"listing seen only", change("Listing", events.Modify, listing, seenOnly), []string{"ListingSeen"}, []string{`"seenAt":"2026-03-01T09:00:00.000Z"`}},
		{"listing backfilled", change("Listing", events.Modify, listing, listing), nil, nil},
		{"invite created hides the address", change("CollaborationInvite", events.Insert, nil, invite), []string{"InviteCreated"}, []string{`"byEmail":true`}},
		{"invite accepted", change("CollaborationInvite", events.Modify, invite, accepted), []string{"InviteAccepted"}, []string{`"userId":"bob","answeredAt":"2026-03-02T00:00:00.000Z"`}},
		{"invite expired", change("CollaborationInvite", events.TTLRemove, invite, nil), []string{"InviteExpired"}, []string{`"expiresAt":"2026-04-01T00:00:00.000Z"`}},
		{"accepted invite cleaned up", change("CollaborationInvite", events.TTLRemove, accepted, nil), nil, nil},
		{"comment deleted", change("Comment", events.Modify, map[string]any{"commentId": "c1", "resourceType": "goal", "resourceId": "g1", "userId": "bob"}, map[string]any{"commentId": "c1", "resourceType": "goal", "resourceId": "g1", "userId": "bob", "deletedAt": "z"}), []string{"CommentDeleted"}, nil},
		{"location moved and deactivated", change("Location", events.Modify, loc, locMoved), []string{"LocationCodeChanged", "LocationDeactivated"},
			[]string{`"from":"a-01","to":"a-02"`, `"locationCode":"a-02"`}},
		{"profile without e-mail", change("UserProfile", events.Insert, nil, map[string]any{"userId": "bob", "name": "Bob", "email": "bob@example.com"}), []string{"ProfileUpdated"}, []string{`"name":"Bob"`}},
		{"snapshot rewritten by a replay", change("CombinedCriteria", events.Modify, map[string]any{}, map[string]any{}), nil, nil},
		{"chat room used", change("ChatRoom", events.Insert, nil, map[string]any{"roomId": "kitchen", "name": "kitchen", "createdAt": "2026-03-01T00:00:00.000Z"}), []string{"ChatRoomCreated"}, []string{`"roomId":"kitchen"`}},
		{"unused chat of a deleted room sealed", change("ChatRoom", events.Insert, nil, map[string]any{"roomId": "r1", "name": "r1", "createdAt": "x", "sealedAt": "x"}), nil, nil},
		{"chat of a deleted room sealed", change("ChatRoom", events.Modify, map[string]any{"roomId": "r1"}, map[string]any{"roomId": "r1", "sealedAt": "x"}), nil, nil},
		{"idempotency record", change("IdempotencyRecord", events.Insert, nil, map[string]any{}), nil, nil},
		{"rating repaired by a rebuild", change("Recipe", events.Modify, recipe(2, 7, ""), recipe(3, 10, "run-1")), nil, nil},
		{"rating repaired again by another rebuild", change("Recipe", events.Modify, recipe(2, 7, "run-1"), recipe(3, 10, "run-2")), nil, nil},
		{"rating changed after a rebuild", change("Recipe", events.Modify, recipe(3, 10, "run-1"), recipe(4, 15, "run-1")), []string{"RecipeRatingChanged"}, []string{`"ratingCount":4`}},
		{"rating repaired by a rebuild that announces", change("Recipe", events.Modify, recipe(2, 7, "run-1"), recipe(3, 10, "")), []string{"RecipeRatingChanged"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := events.Map(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i, e := range evs {
				names = append(names, e.DetailType)
				if e.ID != "ev-"+string(rune('0'+i)) || e.SequenceNumber != "000042" || e.Version != 1 || e.Source == "" {
					t.Errorf("envelope %+v", e)
				}
				b, _ := json.Marshal(e.Data)
				if i < len(tc.data) && !contains(string(b), tc.data[i]) {
					t.Errorf("%s data %s lacks %s", e.DetailType, b, tc.data[i])
				}
				if contains(string(b), "@example.com") {
					t.Errorf("%s discloses an e-mail address: %s", e.DetailType, b)
				}
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// recipe is a recipe's image with its rating aggregate and the rebuild
// run that wrote it ("": none).
func recipe(count, sum int, rebuild string) map[string]any {
	m := map[string]any{"recipeId": "r1", "authorId": "alice", "title": "Pho", "method": "boil", "createdAt": "2026-03-01T00:00:00.000Z",
		"updatedAt": "2026-03-01T00:00:00.000Z", "ratingCount": float64(count), "ratingSum": float64(sum), "avgRating": float64(sum) / float64(count)}
	if rebuild != "" {
		m[events.AttrRebuild] = rebuild
	}
	return m
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestDetailEnvelope(t *testing.T) {
	evs, err := events.Map(change("Member", events.Insert, nil, map[string]any{"roomId": "r1", "userId": "bob", "role": "member", "joinedAt": "2026-03-01T08:00:00.000Z"}))
	if err != nil || len(evs) != 1 {
		t.Fatal(evs, err)
	}
	d, err := evs[0].Detail()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"ev-0","occurredAt":"2026-03-01T08:00:00.000Z","version":1,"sequenceNumber":"000042","changedAt":"2026-03-01T09:00:00.000000Z","data":{"roomId":"r1","userId":"bob","role":"member","joinedAt":"2026-03-01T08:00:00.000Z"}}`
	if string(d) != want {
		t.Fatalf("detail\n%s\nwant\n%s", d, want)
	}
}

// changedAt keeps the microseconds of a Kinesis record's time, what orders
// one item's events there ("ApproximateCreationDateTime … in microsecond
// precision", DynamoDB Developer Guide, Change data capture for Kinesis
// Data Streams with DynamoDB); a time with nanoseconds is cut, not rounded.
func TestChangedAtMicroseconds(t *testing.T) {
	c := change("Member", events.Insert, nil, map[string]any{"roomId": "r1", "userId": "bob", "role": "member", "joinedAt": "2026-03-01T08:00:00.000Z"})
	c.At = time.Date(2026, 3, 1, 9, 0, 0, 123456999, time.FixedZone("CET", 3600))
	evs, err := events.Map(c)
	if err != nil || len(evs) != 1 {
		t.Fatal(evs, err)
	}
	if got, want := evs[0].ChangedAt, "2026-03-01T08:00:00.123456Z"; got != want {
		t.Fatalf("changedAt %s, want %s", got, want)
	}
}

// An item without the ids its event names (written by someone else, or a
// record cut short) means an error, not an event about nobody.
func TestEventWithoutIDsIsAnError(t *testing.T) {
	_, err := events.Map(change("Criteria", events.Insert, nil, map[string]any{"timestamp": "2026-01-01T00:00:00.000Z", "criteria": map[string]any{}}))
	if err == nil || !strings.Contains(err.Error(), "CriteriaUpdated without roomId, userId") {
		t.Fatalf("err = %v", err)
	}
}
