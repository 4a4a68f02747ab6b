package attr

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// FromStreams converts a DynamoDB Streams client AttributeValue into the
// SDK's dynamodb AttributeValue, recursively.
//
// A nil value, a typed-nil member and a streamtypes.UnknownUnionMember are
// errors.
func FromStreams(v streamtypes.AttributeValue) (types.AttributeValue, error) {
	switch x := v.(type) {
	case nil:
		return nil, errNil()
	case *streamtypes.AttributeValueMemberS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberS{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberN:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberN{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberB:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberB{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberBOOL:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberBOOL{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberNULL:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberNULL{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberM:
		if x == nil {
			return nil, errTypedNil(x)
		}
		m, err := FromStreamsMap(x.Value)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case *streamtypes.AttributeValueMemberL:
		if x == nil {
			return nil, errTypedNil(x)
		}
		l, err := fromStreamsList(x.Value)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case *streamtypes.AttributeValueMemberSS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberSS{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberNS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberNS{Value: x.Value}, nil
	case *streamtypes.AttributeValueMemberBS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &types.AttributeValueMemberBS{Value: x.Value}, nil
	case *streamtypes.UnknownUnionMember:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return nil, errf("unsupported attribute value type %T (tag %q)", x, x.Tag)
	default:
		return nil, errf("unsupported attribute value type %T", v)
	}
}

// FromStreamsMap converts an item image read with the DynamoDB Streams
// client (Keys, NewImage or OldImage) into SDK dynamodb attribute values. A
// nil map converts to nil.
func FromStreamsMap(m map[string]streamtypes.AttributeValue) (map[string]types.AttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		av, err := FromStreams(v)
		if err != nil {
			return nil, atKey(err, k)
		}
		out[k] = av
	}
	return out, nil
}

func fromStreamsList(l []streamtypes.AttributeValue) ([]types.AttributeValue, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]types.AttributeValue, len(l))
	for i, v := range l {
		av, err := FromStreams(v)
		if err != nil {
			return nil, atIndex(err, i)
		}
		out[i] = av
	}
	return out, nil
}

// ToStreams converts an SDK dynamodb AttributeValue into the DynamoDB Streams
// client's AttributeValue, recursively.
//
// A nil value, a typed-nil member and a types.UnknownUnionMember are errors.
func ToStreams(v types.AttributeValue) (streamtypes.AttributeValue, error) {
	switch x := v.(type) {
	case nil:
		return nil, errNil()
	case *types.AttributeValueMemberS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberS{Value: x.Value}, nil
	case *types.AttributeValueMemberN:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberN{Value: x.Value}, nil
	case *types.AttributeValueMemberB:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberB{Value: x.Value}, nil
	case *types.AttributeValueMemberBOOL:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberBOOL{Value: x.Value}, nil
	case *types.AttributeValueMemberNULL:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberNULL{Value: x.Value}, nil
	case *types.AttributeValueMemberM:
		if x == nil {
			return nil, errTypedNil(x)
		}
		m, err := ToStreamsMap(x.Value)
		if err != nil {
			return nil, err
		}
		return &streamtypes.AttributeValueMemberM{Value: m}, nil
	case *types.AttributeValueMemberL:
		if x == nil {
			return nil, errTypedNil(x)
		}
		l, err := toStreamsList(x.Value)
		if err != nil {
			return nil, err
		}
		return &streamtypes.AttributeValueMemberL{Value: l}, nil
	case *types.AttributeValueMemberSS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberSS{Value: x.Value}, nil
	case *types.AttributeValueMemberNS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberNS{Value: x.Value}, nil
	case *types.AttributeValueMemberBS:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return &streamtypes.AttributeValueMemberBS{Value: x.Value}, nil
	case *types.UnknownUnionMember:
		if x == nil {
			return nil, errTypedNil(x)
		}
		return nil, errf("unsupported attribute value type %T (tag %q)", x, x.Tag)
	default:
		return nil, errf("unsupported attribute value type %T", v)
	}
}

// ToStreamsMap converts an item of SDK dynamodb attribute values into the
// DynamoDB Streams client's attribute values. A nil map converts to nil.
func ToStreamsMap(m map[string]types.AttributeValue) (map[string]streamtypes.AttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]streamtypes.AttributeValue, len(m))
	for k, v := range m {
		av, err := ToStreams(v)
		if err != nil {
			return nil, atKey(err, k)
		}
		out[k] = av
	}
	return out, nil
}

func toStreamsList(l []types.AttributeValue) ([]streamtypes.AttributeValue, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]streamtypes.AttributeValue, len(l))
	for i, v := range l {
		av, err := ToStreams(v)
		if err != nil {
			return nil, atIndex(err, i)
		}
		out[i] = av
	}
	return out, nil
}
