package store

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key is an item's primary key.
type Key struct {
	PK string `dynamodbav:"PK"`
	SK string `dynamodbav:"SK"`
}

// AV returns the key as attribute values.
func (k Key) AV() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: k.PK},
		AttrSK: &types.AttributeValueMemberS{Value: k.SK},
	}
}

// Item types (the itemType attribute).
const (
	TypeRoom             = "Room"
	TypeMember           = "Member"
	TypeUserRoom         = "UserRoom"
	TypeCriteria         = "Criteria"
	TypeCombinedCriteria = "CombinedCriteria"
	TypeCompatibility    = "Compatibility"
	TypeListing          = "Listing"
	TypeListingSource    = "ListingSourceLookup"
	TypeActivity         = "Activity"
)

// Key prefixes and sort-key prefixes of the search-room patterns (seed 000).
const (
	prefixRoom = "ROOM#"
	prefixUser = "USER#"

	SKRoom                = "ROOM"
	SKPrefixMember        = "MEMBER#"
	SKPrefixRoom          = "ROOM#"
	SKPrefixCriteria      = "CRITERIA#"
	SKPrefixCombined      = "CRITERIA_COMBINED#"
	SKPrefixCompatibility = "COMPATIBILITY#"
	SKPrefixListing       = "LISTING#"
	SKPrefixListingSource = "LISTING_SOURCE#"
	SKPrefixActivity      = "ACTIVITY#"
	prefixSource          = "SOURCE#"
	prefixStatus          = "STATUS#"
)

// RoomPK is a room's partition key.
func RoomPK(roomID string) string { return prefixRoom + roomID }

// UserPK is a user's partition key.
func UserPK(userID string) string { return prefixUser + userID }

// RoomKey is the Room item's key.
func RoomKey(roomID string) Key { return Key{RoomPK(roomID), SKRoom} }

// MemberKey is the Member item's key.
func MemberKey(roomID, userID string) Key { return Key{RoomPK(roomID), SKPrefixMember + userID} }

// UserRoomKey is the UserRoom item's key.
func UserRoomKey(userID, roomID string) Key { return Key{UserPK(userID), SKPrefixRoom + roomID} }

// CriteriaPrefix is the SK prefix of one user's criteria versions.
func CriteriaPrefix(userID string) string { return SKPrefixCriteria + userID + "#" }

// CriteriaKey is a criteria version's key.
func CriteriaKey(roomID, userID, ts string) Key {
	return Key{RoomPK(roomID), CriteriaPrefix(userID) + ts}
}

// CombinedKey is a combined-criteria snapshot's key.
func CombinedKey(roomID, ts string) Key { return Key{RoomPK(roomID), SKPrefixCombined + ts} }

// CompatibilityKey is a compatibility snapshot's key.
func CompatibilityKey(roomID, ts string) Key { return Key{RoomPK(roomID), SKPrefixCompatibility + ts} }

// ListingKey is a listing's key.
func ListingKey(roomID, listingID string) Key {
	return Key{RoomPK(roomID), SKPrefixListing + listingID}
}

// ListingSourceKey is the lookup item that keeps a source listing unique in
// a room (written in the same transaction as the listing).
func ListingSourceKey(roomID, brand, externalID string) Key {
	return Key{RoomPK(roomID), SKPrefixListingSource + brand + "#" + externalID}
}

// ExternalIDIndexKey is a listing's GSI1 key (only when it has an external id).
func ExternalIDIndexKey(brand, externalID, roomID string) Key {
	return Key{prefixSource + brand + "#" + externalID, prefixRoom + roomID}
}

// StatusPrefix is the GSI2SK prefix of the listings in a status.
func StatusPrefix(status string) string { return prefixStatus + status + "#" }

// StatusIndexKey is a listing's GSI2 key: it follows the listing's status.
func StatusIndexKey(roomID, status, listingID string) Key {
	return Key{RoomPK(roomID), StatusPrefix(status) + listingID}
}

// ActivityKey is an activity entry's key.
func ActivityKey(roomID, ts, activityID string) Key {
	return Key{RoomPK(roomID), SKPrefixActivity + ts + "#" + activityID}
}

// TimeLayout is the one timestamp format of keys and attributes: UTC,
// millisecond precision, fixed width, so it sorts as text.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Timestamp formats t in TimeLayout.
func Timestamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTimestamp parses a TimeLayout timestamp.
func ParseTimestamp(s string) (time.Time, error) { return time.Parse(TimeLayout, s) }

// TypeReactionCountMarker marks that a source change was counted.
const TypeReactionCountMarker = "ReactionCountMarker"

// ItemTypes lists every itemType the table holds, core and derived: the
// event catalogue must say what each one's changes mean (a test checks).
var ItemTypes = []string{
	TypeRoom, TypeMember, TypeUserRoom, TypeCriteria, TypeCombinedCriteria, TypeCompatibility,
	TypeListing, TypeListingSource, TypeActivity,
	TypeResource, TypeResourceAccess, TypeInvite, TypeCollaborator, TypeComment, TypeCommentRef, TypeReaction,
	TypeReactionCounts, TypeReactionCountMarker, TypePreferences, TypeProfile, TypeNotification,
	TypeIdempotency, TypeLocation, TypeLocationCode,
	TypeIngredient, TypeIngredientName, TypeCookingPreferences, TypeRecipe, TypeCookingHistory, TypeHistoryRef, TypeCookingSession,
	TypeRecentCooking, TypeTrending, TypeCookingMarker, TypeCookLedger, TypeCookingPending, TypeSuggestion,
	TypeChatRoom, TypeMessage, TypeConnection, TypeConnectionFrames,
}
