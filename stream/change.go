package stream

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/attr"
)

// Kind says what happened to an item.
type Kind int

// The kinds of change.
const (
	Insert Kind = iota + 1
	Modify
	Remove
	// TTLRemove is a deletion by DynamoDB's TTL process, not by a user.
	TTLRemove
)

// String is the kind as a stream record's eventName spells it
// (TTL_REMOVE for a removal by TTL).
func (k Kind) String() string {
	names := [...]string{"", "INSERT", "MODIFY", "REMOVE", "TTL_REMOVE"}
	if k < 0 || int(k) >= len(names) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return names[k]
}

// ttlPrincipal is the identity the service puts on TTL deletions.
const ttlPrincipal = "dynamodb.amazonaws.com"

// KindOf classifies a record. TTL deletions come as REMOVE with the
// dynamodb.amazonaws.com service identity from the service, and from
// DynamoDB Local with an event name outside INSERT/MODIFY/REMOVE and no
// identity; both are TTLRemove.
func KindOf(r events.DynamoDBEventRecord) (Kind, error) {
	switch r.EventName {
	case "INSERT":
		return Insert, nil
	case "MODIFY":
		return Modify, nil
	case "REMOVE":
		if u := r.UserIdentity; u != nil && u.Type == "Service" && u.PrincipalID == ttlPrincipal {
			return TTLRemove, nil
		}
		return Remove, nil
	}
	if r.Change.NewImage == nil && r.Change.OldImage != nil {
		return TTLRemove, nil
	}
	return 0, fmt.Errorf("stream: record %s: unknown event name %q", r.EventID, r.EventName)
}

// Change is a record decoded for a consumer: its kind, identity and both
// images as SDK attribute values.
type Change struct {
	Kind           Kind
	EventID        string
	SequenceNumber string
	// At is the record's approximate creation time: rounded down to the
	// second by DynamoDB Streams, to the minute by DynamoDB Local; to the
	// millisecond or microsecond on a Kinesis data stream for DynamoDB
	// (ApproximateCreationDateTimePrecision).
	At time.Time
	// Keys' values are the image's own where the image holds the same key
	// (the same pointers: treat both as read-only).
	Keys     map[string]types.AttributeValue
	Old, New map[string]types.AttributeValue
}

// keysOf converts a record's keys, taking each value from img (the
// converted image) when it holds the same one: an image always carries its
// item's key, so a record's key attributes are converted once, not twice.
func keysOf(keys map[string]events.DynamoDBAttributeValue, img map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(keys))
	for k, v := range keys {
		switch iv := img[k].(type) {
		case *types.AttributeValueMemberS:
			if v.DataType() == events.DataTypeString && v.String() == iv.Value {
				out[k] = iv
				continue
			}
		case *types.AttributeValueMemberN:
			if v.DataType() == events.DataTypeNumber && v.Number() == iv.Value {
				out[k] = iv
				continue
			}
		}
		return attr.FromLambdaMap(keys) // not the image's: all of them afresh
	}
	return out, nil
}

// Decode turns a record into a Change.
func Decode(r events.DynamoDBEventRecord) (Change, error) {
	k, err := KindOf(r)
	if err != nil {
		return Change{}, err
	}
	if len(r.Change.Keys) == 0 {
		// Every record of DynamoDB Streams has its item's key; one without
		// was made by hand, and means nothing about any item.
		return Change{}, fmt.Errorf("stream: record %s has no Keys", r.EventID)
	}
	c := Change{Kind: k, EventID: r.EventID, SequenceNumber: r.Change.SequenceNumber, At: r.Change.ApproximateCreationDateTime.Time.UTC()}
	if c.Old, err = attr.FromLambdaMap(r.Change.OldImage); err == nil {
		if c.New, err = attr.FromLambdaMap(r.Change.NewImage); err == nil {
			c.Keys, err = keysOf(r.Change.Keys, c.Image())
		}
	}
	if err != nil {
		return Change{}, fmt.Errorf("stream: record %s: %w", r.EventID, err)
	}
	return c, nil
}

// Image is the new image, or the old one when the item is gone.
func (c Change) Image() map[string]types.AttributeValue {
	if c.New != nil {
		return c.New
	}
	return c.Old
}

// String returns a string attribute of Image (or of Keys), "" when absent.
func (c Change) String(name string) string {
	if s, ok := c.Image()[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	if s, ok := c.Keys[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// ItemType is the item's itemType attribute.
func (c Change) ItemType() string { return c.String("itemType") }

// Derived reports whether the item is a derived one (derived = true): a
// projector ignores those, so it never loops on its own writes.
func (c Change) Derived() bool {
	b, ok := c.Image()["derived"].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

// ErrNoImage is the error of decoding an image a change does not have: the
// new image of a removal, the old image of an insert, or either one of a
// stream whose view type leaves it out.
var ErrNoImage = errors.New("stream: the change has no such image")

// DecodeNew unmarshals the new image into v (attributevalue's rules and
// tags). A change without one (a removal) is an error wrapping ErrNoImage,
// not a zero value; an attribute that does not fit v is named in the
// error by its path (items[2].price).
func (c Change) DecodeNew(v any) error { return c.decode("new", c.New, v) }

// DecodeOld unmarshals the old image into v, as DecodeNew does the new one
// (an insert has no old image: ErrNoImage).
func (c Change) DecodeOld(v any) error { return c.decode("old", c.Old, v) }

func (c Change) decode(which string, img map[string]types.AttributeValue, v any) error {
	if img == nil {
		return fmt.Errorf("%w: record %s (%s) has no %s image", ErrNoImage, c.EventID, c.Kind, which)
	}
	if err := attributevalue.UnmarshalMap(img, v); err != nil {
		if path := failingPath(&types.AttributeValueMemberM{Value: img}, reflect.TypeOf(v)); path != "" {
			return fmt.Errorf("stream: record %s: %s image: attribute %s: %w", c.EventID, which, strings.TrimPrefix(path, "."), err)
		}
		return fmt.Errorf("stream: record %s: %s image: %w", c.EventID, which, err)
	}
	return nil
}

// Images decodes a change's images into T: before is nil for an insert
// (no old image), after nil for a removal (no new image), so a handler
// reads what changed without asking which images there are.
func Images[T any](c Change) (before, after *T, err error) {
	if c.Old != nil {
		before = new(T)
		if err := c.DecodeOld(before); err != nil {
			return nil, nil, err
		}
	}
	if c.New != nil {
		after = new(T)
		if err := c.DecodeNew(after); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}
