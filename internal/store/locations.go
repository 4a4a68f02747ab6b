package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/location"
)

// Item types of the locations domain (seed 001).
const (
	TypeLocation     = "Location"
	TypeLocationCode = "LocationCodeLookup"
)

// LocationKey is a location's key.
func LocationKey(id string) Key { return Key{"LOCATION#" + id, "META"} }

// LocationCodeKey is the lookup that makes a code unique.
func LocationCodeKey(code string) Key { return Key{"LOCATION_CODE#" + code, "META"} }

// The location indexes (the seed's own scaling advice, instead of a Scan):
// GSI1 lists all locations newest first (LOCATION / <createdAt>#<id>), GSI2
// by code (LOCATION / CODE#<code>). One partition each: fine to tens of
// thousands of locations; shard the partition key beyond that.
const locationIndexPK = "LOCATION"

func locationIndexKeys(l location.Location) (byTime, byCode Key) {
	return Key{locationIndexPK, l.CreatedAt + "#" + l.LocationID}, Key{locationIndexPK, "CODE#" + l.LocationCode}
}

type codeLookup struct {
	LocationID   string `dynamodbav:"locationId"`
	LocationCode string `dynamodbav:"locationCode"`
	CreatedAt    string `dynamodbav:"createdAt"`
}

func (s Locations) locationItems(l location.Location) (loc, lookup map[string]types.AttributeValue, err error) {
	if loc, err = marshal(head{Key: LocationKey(l.LocationID), ItemType: TypeLocation}, l); err != nil {
		return nil, nil, err
	}
	byTime, byCode := locationIndexKeys(l)
	withIndex(loc, byTime)
	loc["GSI2PK"], loc["GSI2SK"] = &types.AttributeValueMemberS{Value: byCode.PK}, &types.AttributeValueMemberS{Value: byCode.SK}
	lookup, err = marshal(head{Key: LocationCodeKey(l.LocationCode), ItemType: TypeLocationCode}, codeLookup{l.LocationID, l.LocationCode, l.UpdatedAt})
	return loc, lookup, err
}

// errCodeTaken is the answer to a code already claimed (by any location,
// active or not: a soft-deleted location keeps its code).
func errCodeTaken(code string) error {
	return errs.New(errs.Conflict, "code already taken: %s", code)
}

// CreateLocation writes a location and its code lookup in one transaction,
// each on attribute_not_exists: a taken code is a Conflict ("code already
// taken", told from the cancellation reasons) and nothing is written.
func (s Locations) CreateLocation(ctx context.Context, l location.Location) error {
	loc, lookup, err := s.locationItems(l)
	if err != nil {
		return err
	}
	err = s.transactWrite(ctx, []types.TransactWriteItem{
		put(s.Table, loc, "attribute_not_exists(PK)"),
		put(s.Table, lookup, "attribute_not_exists(PK)"),
	})
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case reasons[1] == "ConditionalCheckFailed":
			return errCodeTaken(l.LocationCode)
		case reasons[0] == "ConditionalCheckFailed":
			return errs.New(errs.Conflict, "location %s already exists", l.LocationID)
		default:
			// TransactionConflict: a concurrent transaction on the same
			// items (the service reports it; DynamoDB Local serializes).
			return tryAgain("a concurrent change to code %s; try again", l.LocationCode)
		}
	}
	if err != nil {
		return fmt.Errorf("store: create location: %w", err)
	}
	return nil
}

// GetLocation reads a location by id, strongly consistent (as by code): the
// handlers read a location before they change it.
func (s Locations) GetLocation(ctx context.Context, id string) (location.Location, error) {
	var l location.Location
	ok, err := s.getItem(ctx, LocationKey(id), true, &l)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "location %s not found", id)
	}
	return l, err
}

// GetLocationByCode reads a location through its code lookup (two reads,
// both strongly consistent).
func (s Locations) GetLocationByCode(ctx context.Context, code string) (location.Location, error) {
	var lk codeLookup
	ok, err := s.getItem(ctx, LocationCodeKey(code), true, &lk)
	if err != nil || !ok {
		return location.Location{}, notFoundOr(err, "no location with code %s", code)
	}
	var l location.Location
	ok, err = s.getItem(ctx, LocationKey(lk.LocationID), true, &l)
	if err != nil || !ok {
		return l, notFoundOr(err, "no location with code %s", code)
	}
	return l, nil
}

// LocationOrder is how a list is sorted.
type LocationOrder int

// The orders.
const (
	NewestFirst LocationOrder = iota
	ByCode
)

// ListLocations returns one page of locations through an index (GSI1 newest
// first, GSI2 by code), only those in status when it is set.
func (s Locations) ListLocations(ctx context.Context, status string, order LocationOrder, p Page) ([]location.Location, string, error) {
	q := query{index: IndexGSI1, pk: locationIndexPK, desc: true, page: p, status: status}
	if order == ByCode {
		q = query{index: IndexGSI2, pk: locationIndexPK, skPrefix: "CODE#", page: p, status: status}
	}
	var out []location.Location
	next, err := s.queryPage(ctx, q, decodeInto(s.Store, &out))
	return out, next, err
}

// UpdateLocation replaces a location's name and address fields.
//
// prevUpdatedAt is the updatedAt the caller read: the write is conditional
// on it, so two concurrent read-modify-writes cannot lose one another's
// change (the later one is a Conflict and can read again).
func (s Locations) UpdateLocation(ctx context.Context, l location.Location, prevUpdatedAt string) (location.Location, error) {
	comps, err := attributevalue.Marshal(l.AddressComponents)
	if err != nil {
		return l, err
	}
	upd := "SET #name = :name, placeId = :place, formattedAddress = :addr, lat = :lat, lng = :lng, updatedAt = :at"
	vals := map[string]types.AttributeValue{
		":name": &types.AttributeValueMemberS{Value: l.Name}, ":place": &types.AttributeValueMemberS{Value: l.PlaceID},
		":addr": &types.AttributeValueMemberS{Value: l.FormattedAddress}, ":at": &types.AttributeValueMemberS{Value: l.UpdatedAt},
		":lat": &types.AttributeValueMemberN{Value: fmt.Sprint(l.Lat)}, ":lng": &types.AttributeValueMemberN{Value: fmt.Sprint(l.Lng)},
	}
	if len(l.AddressComponents) > 0 {
		upd += ", addressComponents = :comps"
		vals[":comps"] = comps
	} else {
		upd += " REMOVE addressComponents"
	}
	vals[":prev"] = &types.AttributeValueMemberS{Value: prevUpdatedAt}
	if holding(ctx) {
		// Held: on the condition that it is as read (its updatedAt), the
		// location becomes l.
		if len(l.AddressComponents) == 0 {
			l.AddressComponents = nil
		}
		return l, s.holdUpdate(ctx, LocationKey(l.LocationID), upd, "attribute_exists(PK) AND updatedAt = :prev", map[string]string{"#name": "name"}, vals)
	}
	out, err := s.updateLocation(ctx, l.LocationID, upd, "attribute_exists(PK) AND updatedAt = :prev", map[string]string{"#name": "name"}, vals)
	if errs.Is(err, errs.NotFound) {
		if _, gerr := s.GetLocation(ctx, l.LocationID); gerr == nil {
			return out, errs.New(errs.Conflict, "location %s changed meanwhile; read it again", l.LocationID)
		}
	}
	return out, err
}

// DeactivateLocation soft-deletes a location: status inactive. Its code
// lookup stays, so the code is never reused.
func (s Locations) DeactivateLocation(ctx context.Context, id, at string) (location.Location, error) {
	return s.updateLocation(ctx, id, "SET #status = :inactive, updatedAt = :at", "attribute_exists(PK)", map[string]string{"#status": "status"},
		map[string]types.AttributeValue{":inactive": &types.AttributeValueMemberS{Value: location.Inactive}, ":at": &types.AttributeValueMemberS{Value: at}})
}

func (s Locations) updateLocation(ctx context.Context, id, upd, cond string, names map[string]string, vals map[string]types.AttributeValue) (location.Location, error) {
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: LocationKey(id).AV(), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		// This very write, done already (its answer was lost, the SDK sent
		// it again): the location has its time.
		if at, ok := cf.Item["updatedAt"].(*types.AttributeValueMemberS); ok && vals[":at"] != nil && at.Value == vals[":at"].(*types.AttributeValueMemberS).Value {
			var l location.Location
			if err := attributevalue.UnmarshalMap(cf.Item, &l); err == nil {
				return l, nil
			}
		}
		return location.Location{}, errs.New(errs.NotFound, "location %s not found", id)
	}
	if err != nil {
		return location.Location{}, fmt.Errorf("store: update location %s: %w", id, err)
	}
	var l location.Location
	if err := attributevalue.UnmarshalMap(out.Attributes, &l); err != nil {
		return l, fmt.Errorf("store: decode location: %w", err)
	}
	return l, nil
}

// ChangeLocationCode moves a location to a new code in one transaction:
// the old lookup is deleted (it must point at this location), the new one
// claimed (attribute_not_exists) and the location updated (it must still
// have the old code and be active: a deactivated location keeps its code
// for good). A taken code is a Conflict and nothing changes; the old code
// becomes free. The code the location has already changes nothing (one
// transaction cannot delete and put the same lookup).
func (s Locations) ChangeLocationCode(ctx context.Context, l location.Location, newCode, at string) (location.Location, error) {
	if newCode == l.LocationCode {
		return l, nil
	}
	nl := l
	nl.LocationCode, nl.UpdatedAt = newCode, at
	_, lookup, err := s.locationItems(nl)
	if err != nil {
		return l, err
	}
	_, byCode := locationIndexKeys(nl)
	idv := &types.AttributeValueMemberS{Value: l.LocationID}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(s.Table), Key: LocationCodeKey(l.LocationCode).AV(),
			ConditionExpression: aws.String("locationId = :id"), ExpressionAttributeValues: map[string]types.AttributeValue{":id": idv}}},
		put(s.Table, lookup, "attribute_not_exists(PK)"),
		{Update: &types.Update{TableName: aws.String(s.Table), Key: LocationKey(l.LocationID).AV(),
			UpdateExpression:         aws.String("SET locationCode = :new, GSI2SK = :gsi2sk, updatedAt = :at"),
			ConditionExpression:      aws.String("locationCode = :old AND #status = :active"),
			ExpressionAttributeNames: map[string]string{"#status": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":new": &types.AttributeValueMemberS{Value: newCode}, ":old": &types.AttributeValueMemberS{Value: l.LocationCode},
				":active": &types.AttributeValueMemberS{Value: location.Active},
				":gsi2sk": &types.AttributeValueMemberS{Value: byCode.SK}, ":at": &types.AttributeValueMemberS{Value: at},
			}}},
	}})
	if reasons := cancelReasons(err); reasons != nil {
		if reasons[1] == "ConditionalCheckFailed" {
			return l, errCodeTaken(newCode)
		}
		return l, errs.New(errs.Conflict, "location %s changed meanwhile (its code, or it was deactivated); read it again", l.LocationID)
	}
	if err != nil {
		return l, fmt.Errorf("store: change location code: %w", err)
	}
	return nl, nil
}
