package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
)

// listingItem is a listing as stored, with its index keys: GSI1 only when
// it has an external id (the index is sparse), GSI2 always, following the
// status.
type listingItem struct {
	head
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	GSI2PK string `dynamodbav:"GSI2PK"`
	GSI2SK string `dynamodbav:"GSI2SK"`
}

// ListingIndexKeys returns the index attributes a listing must carry. The
// backfill uses it too, so the two can never disagree.
func ListingIndexKeys(l room.Listing) map[string]string {
	out := map[string]string{}
	if l.ExternalID != "" {
		k := ExternalIDIndexKey(l.SourceBrand, l.ExternalID, l.RoomID)
		out["GSI1PK"], out["GSI1SK"] = k.PK, k.SK
	}
	k := StatusIndexKey(l.RoomID, string(l.Status), l.ListingID)
	out["GSI2PK"], out["GSI2SK"] = k.PK, k.SK
	return out
}

func listingAV(l room.Listing) (map[string]types.AttributeValue, error) {
	it, err := marshal(head{Key: ListingKey(l.RoomID, l.ListingID), ItemType: TypeListing}, l)
	if err != nil {
		return nil, err
	}
	// seenBy is a string set, which DynamoDB cannot hold empty: the encoder
	// writes an empty (non-nil) one as NULL, and "ADD seenBy :seen" on a NULL
	// fails (ValidationException: incorrect data type). No one has seen it
	// yet: no attribute.
	if len(l.SeenBy) == 0 {
		delete(it, "seenBy")
	}
	for k, v := range ListingIndexKeys(l) {
		it[k] = &types.AttributeValueMemberS{Value: v}
	}
	return it, nil
}

type sourceLookup struct {
	ListingID string `dynamodbav:"listingId"`
}

// AddListing pins a listing to a room. With an external id, a lookup item
// in the room's partition is claimed in the same transaction, so the same
// source listing cannot be pinned twice to one room even by concurrent
// requests (the GSI alone is eventually consistent); a duplicate is a
// Conflict whose Extra names the existing listing.
func (s Rooms) AddListing(ctx context.Context, l room.Listing) error {
	it, err := listingAV(l)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: RoomKey(l.RoomID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		put(s.Table, it, "attribute_not_exists(PK)"),
	}
	if l.ExternalID != "" {
		lk, err := marshal(head{Key: ListingSourceKey(l.RoomID, l.SourceBrand, l.ExternalID), ItemType: TypeListingSource}, sourceLookup{l.ListingID})
		if err != nil {
			return err
		}
		items = append(items, put(s.Table, lk, "attribute_not_exists(PK)"))
	}
	err = s.transactWrite(ctx, items)
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case reasons[0] == "ConditionalCheckFailed":
			return errs.New(errs.NotFound, "room %s not found", l.RoomID)
		case reasons[1] == "ConditionalCheckFailed":
			return errs.New(errs.Conflict, "listing %s already exists", l.ListingID)
		case len(reasons) > 2 && reasons[2] == "ConditionalCheckFailed":
			var lu sourceLookup
			ok, gerr := s.get(ctx, ListingSourceKey(l.RoomID, l.SourceBrand, l.ExternalID), &lu)
			if gerr != nil {
				return gerr
			}
			e := errs.New(errs.Conflict, "listing %s/%s is already in this room", l.SourceBrand, l.ExternalID)
			if ok {
				e.Extra = map[string]any{"existingListingId": lu.ListingID}
			}
			return e
		}
	}
	if err != nil {
		return fmt.Errorf("store: add listing: %w", err)
	}
	return nil
}

// GetListing reads one listing.
func (s Rooms) GetListing(ctx context.Context, roomID, listingID string) (room.Listing, error) {
	var l room.Listing
	ok, err := s.get(ctx, ListingKey(roomID, listingID), &l)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "listing %s not found", listingID)
	}
	return l, err
}

// MemberListing reads userID's membership of roomID and one of its
// listings in one strongly consistent batch: the read a change to a
// listing needs first. A missing item is not an error: the booleans say
// which were found.
func (s Rooms) MemberListing(ctx context.Context, roomID, userID, listingID string) (m room.Member, isMember bool, l room.Listing, found bool, err error) {
	mk, lk := MemberKey(roomID, userID), ListingKey(roomID, listingID)
	err = s.batchGet(ctx, []Key{mk, lk}, true, func(it map[string]types.AttributeValue) error {
		switch itemKey(it) {
		case mk:
			isMember = s.decode(it, &m)
		case lk:
			found = s.decode(it, &l)
		}
		return nil
	})
	if err != nil {
		return m, false, l, false, fmt.Errorf("store: read membership and listing %s: %w", listingID, err)
	}
	return m, isMember, l, found, nil
}

// ListListings returns one page of a room's listings, by listing id (ULIDs:
// oldest first).
func (s Rooms) ListListings(ctx context.Context, roomID string, p Page) ([]room.Listing, string, error) {
	var out []room.Listing
	next, err := s.queryPage(ctx, query{pk: RoomPK(roomID), skPrefix: SKPrefixListing, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// ListListingsByStatus returns one page of a room's listings in a status
// (GSI2).
func (s Rooms) ListListingsByStatus(ctx context.Context, roomID string, status room.Status, p Page) ([]room.Listing, string, error) {
	var out []room.Listing
	next, err := s.queryPage(ctx, query{index: IndexGSI2, pk: RoomPK(roomID), skPrefix: StatusPrefix(string(status)), page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// FindListingByExternalID finds a room's listing by source id (GSI1).
func (s Rooms) FindListingByExternalID(ctx context.Context, roomID, brand, externalID string) (room.Listing, error) {
	k := ExternalIDIndexKey(brand, externalID, roomID)
	var out []room.Listing
	// GSI1SK = ROOM#<roomId> exactly (BETWEEN a key and itself): with
	// begins_with a room would find the listing of any room whose id starts
	// with its own.
	_, err := s.queryPage(ctx, query{index: IndexGSI1, pk: k.PK, skPrefix: k.SK, skFrom: k.SK, skTo: k.SK, page: Page{Limit: 1}}, decodeInto(s.Store, &out))
	if err != nil {
		return room.Listing{}, err
	}
	if len(out) == 0 {
		return room.Listing{}, errs.New(errs.NotFound, "no listing %s/%s in room %s", brand, externalID, roomID)
	}
	return out[0], nil
}

// SetListingStatus moves a listing from one status to another, on the
// condition that it is still in from (a concurrent change is a Conflict),
// keeping GSI2SK in step. seenBy, when set, is added to the listing's seenBy
// set in the same update.
func (s Rooms) SetListingStatus(ctx context.Context, l room.Listing, to room.Status, by, at, seenBy string) (room.Listing, error) {
	upd := "SET #status = :to, GSI2SK = :gsi2sk, updatedAt = :at, updatedByUserId = :by"
	vals := map[string]types.AttributeValue{
		":to":     &types.AttributeValueMemberS{Value: string(to)},
		":from":   &types.AttributeValueMemberS{Value: string(l.Status)},
		":gsi2sk": &types.AttributeValueMemberS{Value: StatusIndexKey(l.RoomID, string(to), l.ListingID).SK},
		":at":     &types.AttributeValueMemberS{Value: at},
		":by":     &types.AttributeValueMemberS{Value: by},
	}
	if seenBy != "" {
		upd += " ADD seenBy :seen"
		vals[":seen"] = &types.AttributeValueMemberSS{Value: []string{seenBy}}
	}
	// Or the same change already made by this very call (its response
	// lost, the SDK sent it again): the same status, by the same user, at
	// the same instant.
	next := l
	next.Status, next.UpdatedAt, next.UpdatedByUserID = to, at, by
	if seenBy != "" {
		next.SeenBy = withSeen(l.SeenBy, seenBy)
	}
	return s.updateListing(ctx, l, upd, "#status = :from OR (#status = :to AND updatedByUserId = :by AND updatedAt = :at)", vals, next)
}

// withSeen is seen with userID in it (a set).
func withSeen(seen []string, userID string) []string {
	if slices.Contains(seen, userID) {
		return seen
	}
	return append(slices.Clip(seen), userID)
}

// MarkSeen adds a user to a listing's seenBy set (a set: no duplicates)
// and, if the listing is UNSEEN, moves it to SEEN.
func (s Rooms) MarkSeen(ctx context.Context, l room.Listing, userID, at string) (room.Listing, error) {
	if l.Status == room.StatusUnseen {
		out, err := s.SetListingStatus(ctx, l, room.StatusSeen, userID, at, userID)
		if !errs.Is(err, errs.Conflict) {
			return out, err
		}
		// Someone moved it meanwhile: just record that this user saw it.
	}
	next := l
	next.SeenBy = withSeen(l.SeenBy, userID)
	return s.updateListing(ctx, l, "ADD seenBy :seen", "attribute_exists(PK)", map[string]types.AttributeValue{
		":seen": &types.AttributeValueMemberSS{Value: []string{userID}},
	}, next)
}

// updateListing updates the listing l (as read) and returns it as stored
// after. Held in a Unit, it commits only if the listing is still as read
// (its status, updatedAt and number of seenBy), and returns next, what
// the update makes of l.
func (s Rooms) updateListing(ctx context.Context, l room.Listing, upd, cond string, vals map[string]types.AttributeValue, next room.Listing) (room.Listing, error) {
	if holding(ctx) {
		held := maps.Clone(vals)
		held[":readStatus"] = &types.AttributeValueMemberS{Value: string(l.Status)}
		held[":readAt"] = &types.AttributeValueMemberS{Value: l.UpdatedAt}
		seen := "attribute_not_exists(seenBy)"
		if len(l.SeenBy) > 0 {
			seen = "size(seenBy) = :readSeen"
			held[":readSeen"] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(l.SeenBy))}
		}
		return next, s.holdUpdate(ctx, ListingKey(l.RoomID, l.ListingID), upd, "("+cond+") AND #status = :readStatus AND updatedAt = :readAt AND "+seen,
			map[string]string{"#status": "status"}, held)
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: ListingKey(l.RoomID, l.ListingID).AV(),
		UpdateExpression: aws.String(upd), ConditionExpression: aws.String(cond),
		ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueAllNew,
	}
	if strings.Contains(upd+cond, "#status") {
		in.ExpressionAttributeNames = map[string]string{"#status": "status"}
	}
	out, err := s.DB.UpdateItem(ctx, in)
	if isConditionFailed(err) {
		return l, errs.New(errs.Conflict, "listing %s changed meanwhile (it is no longer %s); read it again", l.ListingID, l.Status)
	}
	if err != nil {
		return l, fmt.Errorf("store: update listing %s: %w", l.ListingID, err)
	}
	var nl room.Listing
	if err := attributevalue.UnmarshalMap(out.Attributes, &nl); err != nil {
		return l, fmt.Errorf("store: decode listing: %w", err)
	}
	return nl, nil
}
