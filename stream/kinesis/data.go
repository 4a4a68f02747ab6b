package kinesis

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// Data is what DynamoDB writes into a Kinesis record for the change r
// (DynamoDB Developer Guide, "Change data capture for Kinesis Data Streams
// with DynamoDB"): the change as JSON, with its time at to the
// microsecond (ApproximateCreationDateTimePrecision MICROSECOND) and no
// sequence number (the Kinesis record has its own). With PartitionKey it
// is how a test, or a local stack without DynamoDB's Kinesis destination,
// puts a table's changes into a Kinesis stream as AWS would; what Source
// and stream.KinesisChange read back is r (eventName UNKNOWN_TO_SDK_VERSION,
// DynamoDB Local's TTL deletion, becomes REMOVE).
func Data(r events.DynamoDBEventRecord, at time.Time) ([]byte, error) {
	c := change{AWSRegion: r.AWSRegion, EventID: r.EventID, EventName: r.EventName, UserIdentity: r.UserIdentity,
		RecordFormat: "application/json", TableName: tableOf(r.EventSourceArn), EventSource: "aws:dynamodb"}
	if c.EventName == "UNKNOWN_TO_SDK_VERSION" {
		c.EventName = "REMOVE"
	}
	d := &c.Dynamodb
	d.ApproximateCreationDateTime, d.ApproximateCreationDateTimePrecision = at.UnixMicro(), "MICROSECOND"
	d.Keys, d.NewImage, d.OldImage, d.SizeBytes = r.Change.Keys, r.Change.NewImage, r.Change.OldImage, r.Change.SizeBytes
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("kinesis: change %s: %w", r.EventID, err)
	}
	return b, nil
}

// PartitionKey is the Kinesis partition key of r's item: a hash of its
// whole key (Kinesis takes 256 characters at most), the same for every
// change of the item, so that they go to one shard.
func PartitionKey(r events.DynamoDBEventRecord) string {
	sum := sha256.Sum256([]byte(stream.ItemKey(r)))
	return hex.EncodeToString(sum[:])
}

// change is a Kinesis record's data as DynamoDB writes it.
type change struct {
	AWSRegion    string                       `json:"awsRegion"`
	EventID      string                       `json:"eventID"`
	EventName    string                       `json:"eventName"`
	UserIdentity *events.DynamoDBUserIdentity `json:"userIdentity"`
	RecordFormat string                       `json:"recordFormat"`
	TableName    string                       `json:"tableName"`
	Dynamodb     struct {
		ApproximateCreationDateTime          int64                                    `json:"ApproximateCreationDateTime"`
		ApproximateCreationDateTimePrecision string                                   `json:"ApproximateCreationDateTimePrecision"`
		Keys                                 map[string]events.DynamoDBAttributeValue `json:"Keys"`
		NewImage                             map[string]events.DynamoDBAttributeValue `json:"NewImage,omitempty"`
		OldImage                             map[string]events.DynamoDBAttributeValue `json:"OldImage,omitempty"`
		SizeBytes                            int64                                    `json:"SizeBytes"`
	} `json:"dynamodb"`
	EventSource string `json:"eventSource"`
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
