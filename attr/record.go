package attr

import (
	"encoding/json"
	"fmt"

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

// RawRecord renders a stream record that LambdaRecord could not convert as
// JSON in DynamoDB's wire shape ({"S": "…"}, {"M": {…}}), keeping what can
// be kept: a value of a type this package does not know becomes
// {"unknown": "<Go type>"} (an UnknownUnionMember with its "tag" and
// "value", base64), a nil one null. For dead letters, so the record
// can be read and repaired by hand.
func RawRecord(r streamtypes.Record) json.RawMessage {
	out := map[string]any{
		"eventID": deref(r.EventID), "eventName": string(r.EventName), "eventSource": deref(r.EventSource),
		"eventVersion": deref(r.EventVersion), "awsRegion": deref(r.AwsRegion),
	}
	if d := r.Dynamodb; d != nil {
		dd := map[string]any{
			"SequenceNumber": deref(d.SequenceNumber), "StreamViewType": string(d.StreamViewType),
			"Keys": rawMap(d.Keys), "NewImage": rawMap(d.NewImage), "OldImage": rawMap(d.OldImage),
		}
		if d.ApproximateCreationDateTime != nil {
			dd["ApproximateCreationDateTime"] = d.ApproximateCreationDateTime.Unix()
		}
		out["dynamodb"] = dd
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"eventID": deref(r.EventID), "error": err.Error()})
	}
	return b
}

func rawMap(m map[string]streamtypes.AttributeValue) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = rawValue(v)
	}
	return out
}

func rawValue(v streamtypes.AttributeValue) any {
	switch t := v.(type) {
	case nil:
		return nil
	case *streamtypes.AttributeValueMemberS:
		return map[string]any{"S": t.Value}
	case *streamtypes.AttributeValueMemberN:
		return map[string]any{"N": t.Value}
	case *streamtypes.AttributeValueMemberB:
		return map[string]any{"B": t.Value}
	case *streamtypes.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": t.Value}
	case *streamtypes.AttributeValueMemberNULL:
		return map[string]any{"NULL": t.Value}
	case *streamtypes.AttributeValueMemberSS:
		return map[string]any{"SS": t.Value}
	case *streamtypes.AttributeValueMemberNS:
		return map[string]any{"NS": t.Value}
	case *streamtypes.AttributeValueMemberBS:
		return map[string]any{"BS": t.Value}
	case *streamtypes.AttributeValueMemberM:
		return map[string]any{"M": rawMap(t.Value)}
	case *streamtypes.AttributeValueMemberL:
		l := make([]any, len(t.Value))
		for i, e := range t.Value {
			l[i] = rawValue(e)
		}
		return map[string]any{"L": l}
	case *streamtypes.UnknownUnionMember:
		if t != nil { // its tag and bytes (base64), which can be what a reader of another source could not read
			return map[string]any{"unknown": fmt.Sprintf("%T", v), "tag": t.Tag, "value": t.Value}
		}
	}
	return map[string]any{"unknown": fmt.Sprintf("%T", v)}
}
