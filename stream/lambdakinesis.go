package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/internal/lambdajson"
)

// A table can stream its changes into a Kinesis data stream ("Change data
// capture for Kinesis Data Streams with DynamoDB", DynamoDB Developer
// Guide). Lambda's event source mapping on that stream invokes with a
// Kinesis event whose records each carry, base64 in kinesis.data, the
// change as DynamoDB wrote it: awsRegion, eventID, eventName,
// userIdentity, recordFormat, tableName, eventSource and the dynamodb
// object (Keys, NewImage, OldImage, SizeBytes and
// ApproximateCreationDateTime, in milliseconds or, with
// ApproximateCreationDateTimePrecision MICROSECOND, microseconds; no
// SequenceNumber or StreamViewType). DecodeKinesisEvent makes of it the
// DynamoDB event a Handler takes, so that one handler runs on either
// source. What differs, and what a handler must not assume on Kinesis:
//
//   - Change.SequenceNumber is the Kinesis record's (what Lambda's
//     batchItemFailures name on a Kinesis source): it orders the shard's
//     records, not one item's writes, which may appear in another order
//     than the changes and more than once (the same page).
//     The eventID is DynamoDB's, the same in a repeat.
//   - ApproximateCreationDateTime keeps its precision (milliseconds or
//     microseconds, not DynamoDB Streams' seconds).
//   - EventSourceArn is the Kinesis stream's ARN.

// kinesisChange is what DynamoDB writes into a Kinesis record's data.
type kinesisChange struct {
	AWSRegion    string                       `json:"awsRegion"`
	EventID      string                       `json:"eventID"`
	EventName    string                       `json:"eventName"`
	UserIdentity *events.DynamoDBUserIdentity `json:"userIdentity"`
	RecordFormat string                       `json:"recordFormat"`
	TableName    string                       `json:"tableName"`
	EventSource  string                       `json:"eventSource"`
	Change       struct {
		ApproximateCreationDateTime          json.Number                              `json:"ApproximateCreationDateTime"`
		ApproximateCreationDateTimePrecision string                                   `json:"ApproximateCreationDateTimePrecision"`
		Keys                                 map[string]events.DynamoDBAttributeValue `json:"Keys"`
		NewImage                             map[string]events.DynamoDBAttributeValue `json:"NewImage,omitempty"`
		OldImage                             map[string]events.DynamoDBAttributeValue `json:"OldImage,omitempty"`
		SizeBytes                            int64                                    `json:"SizeBytes"`
	} `json:"dynamodb"`
}

// The eventSource of a Lambda Kinesis event's records, and of a DynamoDB
// stream's (and of the change a Kinesis record's data carries).
const (
	kinesisSource  = "aws:kinesis"
	dynamodbSource = "aws:dynamodb"
)

// DecodeKinesisEvent decodes a Lambda Kinesis event from a Kinesis data
// stream a DynamoDB table writes its changes to: the records whose data
// is a DynamoDB change, as the DynamoDB event a Handler takes (see above
// for what differs), and the ones that are not (bad base64, data that is
// not JSON or not from aws:dynamodb, a recordFormat other than
// application/json, a timestamp that is not a whole number), which
// LambdaHandler dead-letters so that the shard moves on. The error, which
// wraps ErrNotStreamEvent, is for a payload that is not a Kinesis event,
// a record without a sequence number to report it by, or an event none of
// whose records is a DynamoDB change (the function is wired to a stream
// that some other producer writes).
func DecodeKinesisEvent(payload []byte) (events.DynamoDBEvent, []BadRecord, error) {
	var raw struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(payload, &raw); err != nil {
		return events.DynamoDBEvent{}, nil, fmt.Errorf("%w: %w", ErrNotStreamEvent, err)
	}
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, len(raw.Records))}
	var bad []BadRecord
	var foreign int        // records that are some other producer's
	var firstForeign error // the first one's error
	for i, r := range raw.Records {
		var head struct {
			EventID        string `json:"eventID"`
			EventSource    string `json:"eventSource"`
			EventSourceARN string `json:"eventSourceARN"`
			Kinesis        struct {
				SequenceNumber string          `json:"sequenceNumber"`
				Data           json.RawMessage `json:"data"`
			} `json:"kinesis"`
		}
		if err := json.Unmarshal(r, &head); err != nil || head.Kinesis.SequenceNumber == "" {
			return events.DynamoDBEvent{}, nil, fmt.Errorf("%w: record %d of %d: no kinesis.sequenceNumber to report it by (%v)", ErrNotStreamEvent, i+1, len(raw.Records), err)
		}
		if head.EventSource != kinesisSource {
			return events.DynamoDBEvent{}, nil, fmt.Errorf("%w: record %d of %d comes from %q in a Kinesis event", ErrNotStreamEvent, i+1, len(raw.Records), head.EventSource)
		}
		rec, err := kinesisRecord(head.Kinesis.Data, head.Kinesis.SequenceNumber, head.EventSourceARN)
		if err != nil {
			if errors.Is(err, errForeign) {
				if foreign++; firstForeign == nil {
					firstForeign = err
				}
			}
			bad = append(bad, BadRecord{EventID: head.EventID, SequenceNumber: head.Kinesis.SequenceNumber, StreamARN: head.EventSourceARN, Raw: r,
				Err: fmt.Errorf("stream: Kinesis record %s cannot be decoded: %w", head.EventID, err)})
			continue
		}
		ev.Records = append(ev.Records, rec)
	}
	if foreign > 0 && foreign == len(raw.Records) { // not one record is a table's change
		return events.DynamoDBEvent{}, nil, fmt.Errorf("%w: a Kinesis event none of whose %d record(s) is a DynamoDB change: the first's %w", ErrNotStreamEvent, len(raw.Records), firstForeign)
	}
	return ev, bad, nil
}

// errForeign is the error of a Kinesis record that is not a DynamoDB
// change at all (some other producer's).
var errForeign = errors.New("not a DynamoDB change")

// kinesisRecord is the DynamoDB record a Lambda Kinesis record's data (a
// JSON string of base64) carries, with the Kinesis record's sequence
// number and stream.
func kinesisRecord(data json.RawMessage, seq, streamARN string) (events.DynamoDBEventRecord, error) {
	var blob []byte // encoding/json reads base64 into a []byte
	if err := json.Unmarshal(data, &blob); err != nil {
		return events.DynamoDBEventRecord{}, fmt.Errorf("kinesis.data: %w", err)
	}
	return KinesisChange(blob, seq, streamARN)
}

// KinesisChange decodes the data of a Kinesis record that a DynamoDB table
// wrote to its Kinesis data stream (the bytes GetRecords returns, not
// base64) into the DynamoDB record a Handler takes, as DecodeKinesisEvent
// does for Lambda's records: with the Kinesis record's sequence number,
// the stream's ARN, and the change's time in the precision it came with.
// Data that is not a DynamoDB change in JSON, or one without a readable
// time, is an error.
func KinesisChange(blob []byte, seq, streamARN string) (events.DynamoDBEventRecord, error) {
	c, err := lambdajson.DecodeChange(blob) // one pass, the values json.Unmarshal gives
	if err != nil {
		if c, err = decodeChange(blob); err != nil { // encoding/json says why
			return events.DynamoDBEventRecord{}, err
		}
	}
	if c.Record.EventSource != dynamodbSource {
		return events.DynamoDBEventRecord{}, fmt.Errorf("kinesis.data is %w: its eventSource is %q, not aws:dynamodb", errForeign, c.Record.EventSource)
	}
	if c.RecordFormat != "" && c.RecordFormat != "application/json" {
		return events.DynamoDBEventRecord{}, fmt.Errorf("recordFormat %q: only application/json is read", c.RecordFormat)
	}
	at, err := kinesisTime(json.Number(c.Time), c.Precision)
	if err != nil {
		return events.DynamoDBEventRecord{}, err
	}
	r := c.Record
	return events.DynamoDBEventRecord{
		AWSRegion:      r.AWSRegion,
		EventID:        r.EventID,
		EventName:      r.EventName,
		EventSource:    r.EventSource,
		EventSourceArn: streamARN,
		UserIdentity:   r.UserIdentity,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at},
			Keys:                        r.Change.Keys,
			NewImage:                    r.Change.NewImage,
			OldImage:                    r.Change.OldImage,
			SequenceNumber:              seq,
			SizeBytes:                   r.Change.SizeBytes,
		},
	}, nil
}

// decodeChange decodes a Kinesis record's data with encoding/json (the
// reference lambdajson.DecodeChange keeps to), for the reason it is
// refused. aws-lambda-go panics on a binary set with a member that is not
// a string: that is a refusal too, not a crash of the reader.
func decodeChange(blob []byte) (_ lambdajson.Change, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("kinesis.data: an attribute value aws-lambda-go cannot read (%v)", p)
		}
	}()
	var c kinesisChange
	if err := json.Unmarshal(blob, &c); err != nil {
		var head struct {
			EventSource string `json:"eventSource"`
		}
		if json.Unmarshal(blob, &head) != nil || head.EventSource != dynamodbSource {
			return lambdajson.Change{}, fmt.Errorf("kinesis.data is %w (%v)", errForeign, err)
		}
		return lambdajson.Change{}, fmt.Errorf("kinesis.data: %w", err)
	}
	out := lambdajson.Change{RecordFormat: c.RecordFormat, Time: string(c.Change.ApproximateCreationDateTime), Precision: c.Change.ApproximateCreationDateTimePrecision}
	out.Record = events.DynamoDBEventRecord{AWSRegion: c.AWSRegion, EventID: c.EventID, EventName: c.EventName, EventSource: c.EventSource, UserIdentity: c.UserIdentity,
		Change: events.DynamoDBStreamRecord{Keys: c.Change.Keys, NewImage: c.Change.NewImage, OldImage: c.Change.OldImage, SizeBytes: c.Change.SizeBytes}}
	return out, nil
}

// KinesisData is what DynamoDB writes into a Kinesis record for the change
// r, the other way from KinesisChange: the change as JSON, with its time
// at to the microsecond (ApproximateCreationDateTimePrecision MICROSECOND)
// and no sequence number (the Kinesis record has its own). It is how a
// test, or a local stack without DynamoDB's Kinesis destination, puts a
// table's changes into a Kinesis stream as AWS would; KinesisChange reads
// r back (eventName UNKNOWN_TO_SDK_VERSION, DynamoDB Local's TTL deletion,
// becomes REMOVE, as AWS names it).
func KinesisData(r events.DynamoDBEventRecord, at time.Time) ([]byte, error) {
	c := kinesisChange{AWSRegion: r.AWSRegion, EventID: r.EventID, EventName: r.EventName, UserIdentity: r.UserIdentity,
		RecordFormat: "application/json", TableName: tableOf(r.EventSourceArn), EventSource: dynamodbSource}
	if c.EventName == "UNKNOWN_TO_SDK_VERSION" {
		c.EventName = "REMOVE"
	}
	d := &c.Change
	d.ApproximateCreationDateTime = json.Number(strconv.FormatInt(at.UnixMicro(), 10))
	d.ApproximateCreationDateTimePrecision = "MICROSECOND"
	d.Keys, d.NewImage, d.OldImage, d.SizeBytes = r.Change.Keys, r.Change.NewImage, r.Change.OldImage, r.Change.SizeBytes
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("stream: Kinesis data of change %s: %w", r.EventID, err)
	}
	return b, nil
}

// tableOf is the table's name in its stream's ARN
// (arn:aws:dynamodb:region:account:table/NAME/stream/LABEL).
func tableOf(streamARN string) string {
	_, rest, ok := strings.Cut(streamARN, ":table/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// kinesisTime reads a Kinesis record's ApproximateCreationDateTime: an
// epoch in microseconds with precision MICROSECOND, in milliseconds with
// MILLISECOND; without one (a record written before the setting existed,
// in milliseconds) by its size: above 10^14 it can only be microseconds
// (10^14 ms is the year 5138). A record's age and windows are reckoned
// from it, so one without it, or past what time.Time holds in
// nanoseconds (the year 2262), is refused.
func kinesisTime(n json.Number, precision string) (time.Time, error) {
	if n == "" {
		return time.Time{}, errors.New("no dynamodb.ApproximateCreationDateTime")
	}
	v, err := n.Int64()
	if err != nil || v < 0 {
		return time.Time{}, fmt.Errorf("dynamodb.ApproximateCreationDateTime %q: want a whole epoch time", string(n))
	}
	var t time.Time
	switch precision {
	case "MICROSECOND":
		t = time.UnixMicro(v)
	case "MILLISECOND":
		t = time.UnixMilli(v)
	case "":
		if t = time.UnixMilli(v); v > 1e14 {
			t = time.UnixMicro(v)
		}
	default:
		return time.Time{}, fmt.Errorf("dynamodb.ApproximateCreationDateTimePrecision %q: want MILLISECOND or MICROSECOND", precision)
	}
	if t.After(maxNanoTime) {
		return time.Time{}, fmt.Errorf("dynamodb.ApproximateCreationDateTime %q (%s): after %d", string(n), precision, maxNanoTime.Year())
	}
	return t.UTC(), nil
}

// maxNanoTime is the last time UnixNano holds.
var maxNanoTime = time.Unix(0, math.MaxInt64)
