package attr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
)

// A record LambdaRecord refuses is still rendered whole, in DynamoDB JSON,
// with the value it could not convert named (an unknown member with its
// tag and bytes, base64): what a dead letter keeps.
func TestRawRecordKeepsWhatCannotBeConverted(t *testing.T) {
	rec := streamtypes.Record{EventID: aws.String("e1"), EventName: streamtypes.OperationTypeInsert, Dynamodb: &streamtypes.StreamRecord{
		SequenceNumber: aws.String("42"),
		Keys:           map[string]streamtypes.AttributeValue{"PK": &streamtypes.AttributeValueMemberS{Value: "ROOM#r"}},
		NewImage: map[string]streamtypes.AttributeValue{
			"PK":   &streamtypes.AttributeValueMemberS{Value: "ROOM#r"},
			"n":    &streamtypes.AttributeValueMemberN{Value: "1"},
			"list": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{&streamtypes.AttributeValueMemberBOOL{Value: true}}},
			"odd":  &streamtypes.UnknownUnionMember{Tag: "Z", Value: []byte("raw")},
		},
	}}
	if _, err := attr.LambdaRecord(rec, "arn"); err == nil {
		t.Fatal("LambdaRecord converted an unknown value")
	}
	raw := attr.RawRecord(rec)
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	for _, want := range []string{`"eventID":"e1"`, `"SequenceNumber":"42"`, `"PK":{"S":"ROOM#r"}`, `"n":{"N":"1"}`, `"list":{"L":[{"BOOL":true}]}`, `"odd":{"tag":"Z","unknown":"*types.UnknownUnionMember","value":"cmF3"}`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("raw record lacks %s: %s", want, raw)
		}
	}
}

// aws-lambda-go's decoder panics on a binary set with a non-string member;
// UnmarshalJSON answers an error instead (the input FuzzRecordConversions
// found is kept in testdata/fuzz).
func TestUnmarshalJSONRefusesWhatPanics(t *testing.T) {
	var r events.DynamoDBEventRecord
	err := attr.UnmarshalJSON([]byte(`{"dynamodb":{"NewImage":{"b":{"BS":[{}]}}}}`), &r)
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("err = %v, want malformed", err)
	}
	if err := attr.UnmarshalJSON([]byte(`{"dynamodb":{"NewImage":{"b":{"BS":["AA=="]}}}}`), &r); err != nil {
		t.Fatalf("a good binary set: %v", err)
	}
}
