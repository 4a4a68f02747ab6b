package kinesis_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/kinesis"
)

// The patterns of a Lambda mapping on the Kinesis stream name the record's
// data, the DynamoDB change (Lambda Developer Guide, "Lambda event
// filtering", on Kinesis: a JSON payload's fields under data;
// paraphrased). kinesis.Criteria makes of them the change's own patterns,
// which keep and drop what Lambda's would, and refuses a pattern on the
// Kinesis record's other fields, which the Runner does not hand over.
func TestCriteriaUnderData(t *testing.T) {
	c, err := kinesis.Criteria(`{"data":{"dynamodb":{"NewImage":{"itemType":{"S":["Room"]}}}}}`, `{"data":{"eventName":["REMOVE"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	room := events.DynamoDBEventRecord{EventName: "INSERT"}
	room.Change.NewImage = map[string]events.DynamoDBAttributeValue{"itemType": events.NewStringAttribute("Room")}
	other := events.DynamoDBEventRecord{EventName: "MODIFY"}
	other.Change.NewImage = map[string]events.DynamoDBAttributeValue{"itemType": events.NewStringAttribute("Member")}
	removal := events.DynamoDBEventRecord{EventName: "REMOVE"}
	if !c.Match(room) || c.Match(other) || !c.Match(removal) {
		t.Errorf("room %v, other %v, removal %v: want true, false, true", c.Match(room), c.Match(other), c.Match(removal))
	}
	for _, bad := range []string{`{"partitionKey":["x"]}`, `{"data":{"dynamodb":{}},"kinesis":{}}`, `not json`,
		`{"data":{"dynamodb":{"NewImage":{"n":{"N":[{"numeric":[">",1]}]}}}}}`} { // numeric: refused on a DynamoDB change
		if _, err := kinesis.Criteria(bad); err == nil || !strings.Contains(err.Error(), "kinesis:") {
			t.Errorf("%s: %v, want an error", bad, err)
		}
	}
}
