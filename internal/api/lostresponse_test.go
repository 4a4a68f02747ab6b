package api_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/store"
)

// A write whose response was lost (the connection reset after DynamoDB
// executed it) and that the SDK sent again recognises its own success:
// the client gets the success it would have got, never a 409 about what
// it just did itself, and nothing is written twice. Every creating and
// changing route of the scenarios, with a third of the writer's DynamoDB
// responses lost.
func TestLostResponsesAreNotConflicts(t *testing.T) {
	t.Parallel()
	clean, table, _ := ddbtest.Table(t)
	faults := &ddb.Faults{Rate: 0.3, Seed: 27, Kinds: []int{ddb.FaultResetAfter}}
	c := ddbtest.ClientsWith(t, ddb.Config{Faults: faults, MaxAttempts: 10, OwnWrites: true})
	st := store.New(c.DB, table)
	st.Bookkeeping = ddbtest.Bookkeeping(t, clean, table)
	dev := &auth.DevTokens{Secret: []byte("test secret, 32 bytes long......"), Issuer: "dynastream-test", Now: time.Now}
	n := 0
	srv := &api.Server{Store: st, Auth: dev, DevTokens: dev, Tokens: dev, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		NewID: func() string { n++; return fmt.Sprintf("lr%04d", n) }}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	e := &env{t: t, url: ts.URL, db: c.DB, table: table, st: st, srv: srv}
	alice, _ := dev.Mint("alice", nil, time.Now(), time.Hour)
	bob, _ := dev.Mint("bob", nil, time.Now(), time.Hour)
	admin, _ := dev.Mint("root", []string{"admins"}, time.Now(), time.Hour)
	for i := range 5 {
		var rm struct{ RoomID string }
		e.ok(201, "POST", "/rooms", alice, map[string]any{"name": "Flat", "searchType": "rent"}, &rm)
		e.ok(201, "POST", "/rooms/"+rm.RoomID+"/members", alice, map[string]any{"userId": "bob"}, nil)
		e.ok(201, "PUT", "/rooms/"+rm.RoomID+"/criteria", bob, map[string]any{"criteria": map[string]any{"locations": []string{"Bern"}}}, nil)
		var l struct{ ListingID string }
		e.ok(201, "POST", "/rooms/"+rm.RoomID+"/listings", bob, map[string]any{"sourceBrand": "b", "externalId": fmt.Sprint("x", i), "title": "t", "location": "l"}, &l)
		e.ok(200, "POST", "/rooms/"+rm.RoomID+"/listings/"+l.ListingID+"/seen", alice, nil, nil)
		e.ok(200, "PUT", "/rooms/"+rm.RoomID+"/listings/"+l.ListingID+"/status", alice, map[string]any{"status": "SHORTLISTED"}, nil)
		var g struct{ ResourceID string }
		e.ok(201, "POST", "/resources", alice, map[string]any{"resourceType": "goal", "title": "Run"}, &g)
		var inv struct{ InviteID string }
		e.ok(201, "POST", "/resources/goal/"+g.ResourceID+"/invites", alice, map[string]any{"inviteeId": "bob"}, &inv)
		e.ok(200, "POST", "/resources/goal/"+g.ResourceID+"/invites/"+inv.InviteID+"/accept", bob, nil, nil)
		var cm struct{ CommentID string }
		e.ok(201, "POST", "/resources/goal/"+g.ResourceID+"/comments", bob, map[string]any{"text": "hi"}, &cm)
		e.ok(201, "PUT", "/comments/"+cm.CommentID+"/reactions/%F0%9F%91%8D", alice, nil, nil)
		e.ok(200, "PATCH", "/comments/"+cm.CommentID, bob, map[string]any{"text": "hi again"}, nil)
		e.ok(204, "DELETE", "/comments/"+cm.CommentID, bob, nil, nil)
		var loc struct{ LocationID string }
		e.ok(201, "POST", "/locations", admin, map[string]any{"locationCode": fmt.Sprintf("lost-%02d", i), "name": "n", "placeId": "p", "formattedAddress": "a", "lat": 1, "lng": 1}, &loc)
		e.ok(200, "PATCH", "/locations/"+loc.LocationID, admin, map[string]any{"name": "renamed"}, nil)
		e.ok(200, "PUT", "/locations/"+loc.LocationID+"/code", admin, map[string]any{"locationCode": fmt.Sprintf("lost-moved-%02d", i)}, nil)
		var in struct{ IngredientID string }
		e.ok(201, "POST", "/ingredients", alice, map[string]any{"name": fmt.Sprint("Rice ", i)}, &in)
		var rc struct{ RecipeID string }
		e.ok(201, "POST", "/recipes", alice, map[string]any{"title": "Pho", "method": "boil", "servings": 2, "steps": []string{"Boil"},
			"ingredients": []map[string]any{{"ingredientId": in.IngredientID, "quantity": 1}}}, &rc)
		e.ok(201, "POST", "/me/cooking-history", bob, map[string]any{"recipeId": rc.RecipeID, "rating": 4}, nil)
		var ss struct{ SessionID string }
		e.ok(201, "POST", "/me/cooking-sessions", bob, map[string]any{"recipeId": rc.RecipeID}, &ss)
		e.ok(200, "PUT", "/me/cooking-sessions/"+ss.SessionID+"/step", bob, map[string]any{"step": 0}, nil)
		var h struct{ HistoryID string }
		e.ok(201, "POST", "/me/cooking-sessions/"+ss.SessionID+"/complete", bob, map[string]any{"rating": 5}, &h)
		e.ok(200, "PATCH", "/me/cooking-history/"+h.HistoryID, bob, map[string]any{"rating": 3, "favorite": true}, nil)
		e.ok(201, "POST", "/me/cooking-sessions", bob, map[string]any{"recipeId": rc.RecipeID}, &ss)
		e.ok(200, "POST", "/me/cooking-sessions/"+ss.SessionID+"/abandon", bob, nil, nil)
		e.ok(200, "PUT", "/me/profile", bob, map[string]any{"name": "Bob"}, nil)
		e.ok(200, "PUT", "/me/notification-preferences", bob, map[string]any{"emailOnInvite": false}, nil)
		e.ok(200, "PATCH", "/rooms/"+rm.RoomID, alice, map[string]any{"context": map[string]any{"description": "d"}}, nil)
		e.ok(202, "DELETE", "/rooms/"+rm.RoomID, alice, nil, nil)
	}
	// Nothing twice: five recipes, ten cookings (five direct, five from
	// sessions), five locations.
	var page struct{ Items []map[string]any }
	e.ok(200, "GET", "/recipes?authorId=alice&limit=100", alice, nil, &page)
	if len(page.Items) != 5 {
		t.Errorf("%d recipes, want 5", len(page.Items))
	}
	e.ok(200, "GET", "/me/cooking-history?limit=100", bob, nil, &page)
	if len(page.Items) != 10 {
		t.Errorf("%d cookings, want 10", len(page.Items))
	}
	e.ok(200, "GET", "/locations?limit=100", alice, nil, &page)
	if len(page.Items) != 5 {
		t.Errorf("%d locations, want 5", len(page.Items))
	}
	t.Logf("faults: %+v", faults.Counts())
}
