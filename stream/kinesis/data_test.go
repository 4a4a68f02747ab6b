package kinesis_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/kinesis"
)

// What stream.KinesisData writes reads back, through the decoder of Lambda's Kinesis
// events and of Source, as the change it came from, with the time to the
// microsecond; a TTL deletion as DynamoDB Local names it is a REMOVE by
// the TTL service, as on AWS; one item has one partition key (the record
// format of DynamoDB Developer Guide, "Change data capture for Kinesis Data
// Streams with DynamoDB", and Kinesis's 256-character partition keys,
// Kinesis API Reference, PutRecord; both paraphrased).
func TestDataReadsBackAsTheChange(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 123456789, time.UTC)
	r := events.DynamoDBEventRecord{EventID: "e1", EventName: "UNKNOWN_TO_SDK_VERSION", AWSRegion: "us-east-1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:1:table/orders/stream/x", UserIdentity: &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}}
	r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("C#1"), "SK": events.NewStringAttribute("O#1")}
	r.Change.OldImage = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("C#1"), "SK": events.NewStringAttribute("O#1"), "n": events.NewNumberAttribute("12345678901234567890123456789012345678")}
	r.Change.SizeBytes = 42
	b, err := stream.KinesisData(r, at)
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ TableName string }
	if json.Unmarshal(b, &head); head.TableName != "orders" {
		t.Errorf("tableName %q, want orders", head.TableName)
	}
	got, err := stream.KinesisChange(b, "7", "arn:kinesis")
	if err != nil {
		t.Fatal(err)
	}
	if got.EventName != "REMOVE" || got.EventID != "e1" || got.UserIdentity == nil || got.UserIdentity.PrincipalID != "dynamodb.amazonaws.com" {
		t.Errorf("read back %s %s %+v", got.EventName, got.EventID, got.UserIdentity)
	}
	if !got.Change.ApproximateCreationDateTime.Equal(at.Truncate(time.Microsecond)) || got.Change.SequenceNumber != "7" || got.Change.SizeBytes != 42 {
		t.Errorf("time %s, sequence %s, size %d", got.Change.ApproximateCreationDateTime.Time, got.Change.SequenceNumber, got.Change.SizeBytes)
	}
	if got.Change.OldImage["n"].Number() != "12345678901234567890123456789012345678" || got.Change.NewImage != nil {
		t.Errorf("images %v / %v", got.Change.OldImage, got.Change.NewImage)
	}
	other := r
	other.EventID = "e2"
	if kinesis.PartitionKey(r) != kinesis.PartitionKey(other) || len(kinesis.PartitionKey(r)) > 256 {
		t.Error("one item's changes under two partition keys, or a key over Kinesis's 256 characters")
	}
}
