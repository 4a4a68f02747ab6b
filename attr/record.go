package attr

import (
	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// eventSourceDynamoDB is the eventSource of every DynamoDB stream record.
const eventSourceDynamoDB = "aws:dynamodb"

// LambdaRecord converts a record read with the dynamodbstreams client into the
// record shape Lambda delivers (events.DynamoDBEventRecord): eventID,
// eventName, eventVersion, eventSource "aws:dynamodb", awsRegion,
// eventSourceARN (the streamARN argument), dynamodb{ApproximateCreationDateTime,
// Keys, NewImage, OldImage, SequenceNumber, SizeBytes, StreamViewType}, and
// userIdentity when present.
//
// Fields are copied as they are: eventName keeps whatever the stream returned
// (DynamoDB Local reports TTL deletions as "UNKNOWN_TO_SDK_VERSION" rather
// than "REMOVE"), and ApproximateCreationDateTime keeps the stream's precision.
// Images convert directly from the streams shape, without an intermediate SDK
// dynamodb value. An image that cannot be converted is an error whose path
// starts with Keys, NewImage or OldImage.
func LambdaRecord(r streamtypes.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      deref(r.AwsRegion),
		EventID:        deref(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    deref(r.EventSource),
		EventVersion:   deref(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if out.EventSource == "" {
		out.EventSource = eventSourceDynamoDB
	}
	if id := r.UserIdentity; id != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{
			Type:        deref(id.Type),
			PrincipalID: deref(id.PrincipalId),
		}
	}
	d := r.Dynamodb
	if d == nil {
		return out, nil
	}
	c := &out.Change
	if d.ApproximateCreationDateTime != nil {
		c.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	var err error
	if c.Keys, err = streamsToLambdaMap(d.Keys); err != nil {
		return events.DynamoDBEventRecord{}, atKey(err, "Keys")
	}
	if c.NewImage, err = streamsToLambdaMap(d.NewImage); err != nil {
		return events.DynamoDBEventRecord{}, atKey(err, "NewImage")
	}
	if c.OldImage, err = streamsToLambdaMap(d.OldImage); err != nil {
		return events.DynamoDBEventRecord{}, atKey(err, "OldImage")
	}
	c.SequenceNumber = deref(d.SequenceNumber)
	if d.SizeBytes != nil {
		c.SizeBytes = *d.SizeBytes
	}
	c.StreamViewType = string(d.StreamViewType)
	return out, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// streamsToLambda is FromStreams followed by ToLambda without the
// intermediate value.
func streamsToLambda(v streamtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch x := v.(type) {
	case nil:
		return events.DynamoDBAttributeValue{}, errNil()
	case *streamtypes.AttributeValueMemberS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewStringAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberN:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewNumberAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberB:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewBinaryAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberBOOL:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewBooleanAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberNULL:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		if !x.Value {
			return events.DynamoDBAttributeValue{}, errf("NULL attribute value with Value false cannot be represented")
		}
		return events.NewNullAttribute(), nil
	case *streamtypes.AttributeValueMemberM:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		m, err := streamsToLambdaMap(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	case *streamtypes.AttributeValueMemberL:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		l, err := streamsToLambdaList(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewListAttribute(l), nil
	case *streamtypes.AttributeValueMemberSS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewStringSetAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberNS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewNumberSetAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberBS:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.NewBinarySetAttribute(x.Value), nil
	case *streamtypes.UnknownUnionMember:
		if x == nil {
			return events.DynamoDBAttributeValue{}, errTypedNil(x)
		}
		return events.DynamoDBAttributeValue{}, errf("unsupported attribute value type %T (tag %q)", x, x.Tag)
	default:
		return events.DynamoDBAttributeValue{}, errf("unsupported attribute value type %T", v)
	}
}

func streamsToLambdaMap(m map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		av, err := streamsToLambda(v)
		if err != nil {
			return nil, atKey(err, k)
		}
		out[k] = av
	}
	return out, nil
}

func streamsToLambdaList(l []streamtypes.AttributeValue) ([]events.DynamoDBAttributeValue, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]events.DynamoDBAttributeValue, len(l))
	for i, v := range l {
		av, err := streamsToLambda(v)
		if err != nil {
			return nil, atIndex(err, i)
		}
		out[i] = av
	}
	return out, nil
}
