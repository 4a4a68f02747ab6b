package attr

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FromLambda converts an attribute value as delivered in a Lambda DynamoDB
// stream event into the SDK's dynamodb AttributeValue, recursively.
//
// The zero events.DynamoDBAttributeValue (no type set) is an error.
func FromLambda(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		// DataTypeBinary is the zero DynamoDBDataType: a zero value holds a nil
		// interface (IsNull), whereas NewBinaryAttribute(nil) holds a nil []byte.
		if v.IsNull() {
			return nil, errf("zero events.DynamoDBAttributeValue (no type set)")
		}
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeMap:
		m, err := FromLambdaMap(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case events.DataTypeList:
		l, err := fromLambdaList(v.List())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	default:
		return nil, errf("unsupported attribute value type events.DynamoDBDataType(%d)", int(v.DataType()))
	}
}

// FromLambdaMap converts an item image from a Lambda DynamoDB stream event
// (Keys, NewImage or OldImage) into SDK dynamodb attribute values. A nil map
// converts to nil.
func FromLambdaMap(m map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		av, err := FromLambda(v)
		if err != nil {
			return nil, atKey(err, k)
		}
		out[k] = av
	}
	return out, nil
}

func fromLambdaList(l []events.DynamoDBAttributeValue) ([]types.AttributeValue, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]types.AttributeValue, len(l))
	for i, v := range l {
		av, err := FromLambda(v)
		if err != nil {
			return nil, atIndex(err, i)
		}
		out[i] = av
	}
	return out, nil
}

// ToLambda converts an SDK dynamodb AttributeValue into the
// events.DynamoDBAttributeValue shape Lambda delivers, recursively.
//
// A nil value, a typed-nil member, a types.UnknownUnionMember and a NULL
// member whose Value is false (which DynamoDB never stores and Lambda cannot
// represent) are errors.
func ToLambda(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch x := v.(type) {
	case nil:
		return events.DynamoDBAttributeValue{}, errNil()
	case *types.AttributeValueMemberS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewStringAttribute(x.Value), nil
	case *types.AttributeValueMemberN:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewNumberAttribute(x.Value), nil
	case *types.AttributeValueMemberB:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewBinaryAttribute(x.Value), nil
	case *types.AttributeValueMemberBOOL:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewBooleanAttribute(x.Value), nil
	case *types.AttributeValueMemberNULL:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		if !x.Value {
			return events.DynamoDBAttributeValue{}, errf("NULL attribute value with Value false cannot be represented")
		}
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberM:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		m, err := ToLambdaMap(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	case *types.AttributeValueMemberL:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		l, err := toLambdaList(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewListAttribute(l), nil
	case *types.AttributeValueMemberSS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewStringSetAttribute(x.Value), nil
	case *types.AttributeValueMemberNS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewNumberSetAttribute(x.Value), nil
	case *types.AttributeValueMemberBS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewBinarySetAttribute(x.Value), nil
	case *types.UnknownUnionMember:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.DynamoDBAttributeValue{}, errf("unsupported attribute value type %T (tag %q)", x, x.Tag)
	default:
		return events.DynamoDBAttributeValue{}, errf("unsupported attribute value type %T", v)
	}
}

// ToLambdaMap converts an item of SDK dynamodb attribute values into the
// map shape of a Lambda DynamoDB stream event image. A nil map converts to
// nil.
func ToLambdaMap(m map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		av, err := ToLambda(v)
		if err != nil {
			return nil, atKey(err, k)
		}
		out[k] = av
	}
	return out, nil
}

func toLambdaList(l []types.AttributeValue) ([]events.DynamoDBAttributeValue, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]events.DynamoDBAttributeValue, len(l))
	for i, v := range l {
		av, err := ToLambda(v)
		if err != nil {
			return nil, atIndex(err, i)
		}
		out[i] = av
	}
	return out, nil
}

// UnmarshalJSON decodes JSON holding Lambda's DynamoDB shapes (an event, a
// record, an image, or anything embedding them) into v, as json.Unmarshal
// does, but answers malformed input with an error where aws-lambda-go's
// decoder panics: v1.55.1 panics on a binary set with a non-string member,
// {"BS":[{}]} (found by FuzzRecordConversions). Use it for JSON that did
// not come from Lambda itself: files, dead letters, fixtures.
func UnmarshalJSON(data []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("attr: malformed DynamoDB attribute value in JSON: %v", p)
		}
	}()
	return json.Unmarshal(data, v)
}
