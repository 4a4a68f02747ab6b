package store_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// TestBackfillListingIndexes: listings written before the GSIs existed (no
// index attributes), with a stale GSI2SK, or with a GSI1 they should not
// have get exactly the seed's index attributes; other items are untouched;
// a second run changes nothing.
func TestBackfillListingIndexes(t *testing.T) {
	c, table, _ := ddbtest.Table(t)
	ctx := context.Background()
	st := store.New(c.DB, table)
	raw := func(l room.Listing, extra map[string]string) {
		it, err := attributevalue.MarshalMap(l)
		if err != nil {
			t.Fatal(err)
		}
		k := store.ListingKey(l.RoomID, l.ListingID)
		it["PK"], it["SK"] = &types.AttributeValueMemberS{Value: k.PK}, &types.AttributeValueMemberS{Value: k.SK}
		it["itemType"] = &types.AttributeValueMemberS{Value: store.TypeListing}
		for name, v := range extra {
			it[name] = &types.AttributeValueMemberS{Value: v}
		}
		if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	listings := []room.Listing{
		{ListingID: "L1", RoomID: "r1", SourceBrand: "homegate", ExternalID: "123", Title: "a", Location: "x", Status: room.StatusUnseen},
		{ListingID: "L2", RoomID: "r1", SourceBrand: "immoscout24", Title: "b", Location: "x", Status: room.StatusSeen},
		{ListingID: "L3", RoomID: "r2", SourceBrand: "homegate", ExternalID: "9", Title: "c", Location: "x", Status: room.StatusShortlisted},
		{ListingID: "L4", RoomID: "r2", SourceBrand: "homegate", Title: "d", Location: "x", Status: room.StatusRejected},
	}
	raw(listings[0], nil)
	raw(listings[1], map[string]string{"GSI2PK": "ROOM#r1", "GSI2SK": "STATUS#UNSEEN#L2"}) // stale status
	raw(listings[2], map[string]string{"GSI1PK": "SOURCE#homegate#9", "GSI1SK": "ROOM#r2", "GSI2PK": "ROOM#r2", "GSI2SK": "STATUS#SHORTLISTED#L3"})
	raw(listings[3], map[string]string{"GSI1PK": "SOURCE#homegate#", "GSI1SK": "ROOM#r2"}) // GSI1 without an external id
	for i := range 30 {                                                                    // other items, scanned past
		if _, err := st.Rooms.CreateRoom(ctx, room.Room{RoomID: string(rune('a'+i%26)) + "room" + string(rune('0'+i/26)), Name: "n", CreatedByUserID: "u", CreatedAt: "2026-01-01T00:00:00.000Z", SearchType: room.SearchBuy}); err != nil {
			t.Fatal(err)
		}
	}

	var calls int
	stats, err := st.Upkeep.BackfillListingIndexes(ctx, 3, func(store.BackfillStats) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if stats.Listings != 4 || stats.Updated != 3 || stats.Unchanged != 1 || calls == 0 {
		t.Fatalf("stats %+v (progress calls %d), want 4 listings, 3 updated, 1 unchanged", stats, calls)
	}
	for _, l := range listings {
		out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: store.ListingKey(l.RoomID, l.ListingID).AV()})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, name := range []string{"GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"} {
			if v, ok := out.Item[name].(*types.AttributeValueMemberS); ok {
				got[name] = v.Value
			}
		}
		want := map[string]string{"GSI2PK": "ROOM#" + l.RoomID, "GSI2SK": "STATUS#" + string(l.Status) + "#" + l.ListingID}
		if l.ExternalID != "" {
			want["GSI1PK"], want["GSI1SK"] = "SOURCE#"+l.SourceBrand+"#"+l.ExternalID, "ROOM#"+l.RoomID
		}
		if len(got) != len(want) {
			t.Errorf("%s: index attributes %v, want %v", l.ListingID, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", l.ListingID, k, got[k], v)
			}
		}
	}
	// The seed's access patterns now work on the backfilled listings.
	byStatus, _, err := st.Rooms.ListListingsByStatus(ctx, "r1", room.StatusSeen, store.Page{})
	if err != nil || len(byStatus) != 1 || byStatus[0].ListingID != "L2" {
		t.Errorf("by status after backfill: %v %v", byStatus, err)
	}
	if l, err := st.Rooms.FindListingByExternalID(ctx, "r1", "homegate", "123"); err != nil || l.ListingID != "L1" {
		t.Errorf("by external id after backfill: %v %v", l, err)
	}

	again, err := st.Upkeep.BackfillListingIndexes(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Updated != 0 || again.Unchanged != 4 {
		t.Fatalf("second run %+v, want nothing to do", again)
	}
}
