package lambdajson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream/internal/prop"
)

// kinesisChange is the struct stream reads a Kinesis record's data into
// with encoding/json (stream/lambdakinesis.go): DecodeChange's reference.
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

// changeReference is encoding/json's decoding of blob, its panics
// (aws-lambda-go's) counted as refusals.
func changeReference(blob []byte) (c Change, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("aws-lambda-go panicked: %v", p)
		}
	}()
	var k kinesisChange
	if err := json.Unmarshal(blob, &k); err != nil {
		return Change{}, err
	}
	c = Change{RecordFormat: k.RecordFormat, Time: string(k.Change.ApproximateCreationDateTime), Precision: k.Change.ApproximateCreationDateTimePrecision}
	c.Record = events.DynamoDBEventRecord{AWSRegion: k.AWSRegion, EventID: k.EventID, EventName: k.EventName, EventSource: k.EventSource, UserIdentity: k.UserIdentity,
		Change: events.DynamoDBStreamRecord{Keys: k.Change.Keys, NewImage: k.Change.NewImage, OldImage: k.Change.OldImage, SizeBytes: k.Change.SizeBytes}}
	return c, nil
}

// sameChangeAsReference fails t when DecodeChange and encoding/json
// disagree on blob.
func sameChangeAsReference(t interface {
	Fatalf(string, ...any)
}, blob []byte) {
	want, werr := changeReference(blob)
	got, gerr := DecodeChange(blob)
	switch {
	case werr != nil && gerr == nil:
		t.Fatalf("encoding/json refuses (%v), DecodeChange accepts:\n%s", werr, blob)
	case werr == nil && gerr != nil:
		t.Fatalf("encoding/json accepts, DecodeChange refuses (%v):\n%s", gerr, blob)
	case werr == nil:
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(events.DynamoDBAttributeValue{})); diff != "" {
			t.Fatalf("changes differ (-encoding/json +DecodeChange):\n%s\nblob:\n%s", diff, blob)
		}
	}
}

// changeCases are Kinesis data where encoding/json's rules show: the
// change as DynamoDB writes it, the time as a number, a string that is
// one (json.Number takes it) and one that is not, nulls, wrong types,
// case-folded and repeated members, trailing data.
var changeCases = []string{
	``, `null`, `{}`, `[]`, `1`, `{} {}`, `{}x`,
	`{"awsRegion":"us-east-1","eventID":"e1","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":"t",` +
		`"dynamodb":{"ApproximateCreationDateTime":1795241100123456,"ApproximateCreationDateTimePrecision":"MICROSECOND","Keys":{"PK":{"S":"a"}},` +
		`"NewImage":{"PK":{"S":"a"},"n":{"N":"1"}},"OldImage":{"PK":{"S":"a"}},"SizeBytes":40},"eventSource":"aws:dynamodb"}`,
	`{"dynamodb":{"ApproximateCreationDateTime":"1795241100123"}}`, `{"dynamodb":{"ApproximateCreationDateTime":"x"}}`,
	`{"dynamodb":{"ApproximateCreationDateTime":"01"}}`, `{"dynamodb":{"ApproximateCreationDateTime":"-0.5e+3"}}`, `{"dynamodb":{"ApproximateCreationDateTime":"1e"}}`,
	`{"dynamodb":{"ApproximateCreationDateTime":true}}`, `{"dynamodb":{"ApproximateCreationDateTime":null}}`, `{"dynamodb":{"ApproximateCreationDateTime":1e400}}`,
	`{"dynamodb":{"ApproximateCreationDateTime":{}}}`, `{"dynamodb":{"approximatecreationdatetime":5,"APPROXIMATECREATIONDATETIMEPRECISION":"MILLISECOND"}}`,
	`{"dynamodb":{"ApproximateCreationDateTimePrecision":1}}`, `{"dynamodb":null}`, `{"dynamodb":[]}`, `{"dynamodb":{"SequenceNumber":1,"StreamViewType":2}}`,
	`{"dynamodb":{"Keys":{"PK":{"S":"a"}}},"dynamodb":{"Keys":{"SK":{"S":"b"}},"SizeBytes":3}}`, `{"tableName":1}`, `{"tableName":null,"recordFormat":null}`,
	`{"recordFormat":2}`, `{"eventVersion":1,"eventSourceARN":2}`, `{"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}}`,
	`{"userIdentity":{"type":1}}`, `{"dynamodb":{"Keys":{"PK":{"BS":[1]}}}}`, `{"dynamodb":{"Keys":{"PK":{"N":1e999}}}}`, `{"dynamodb":{"SizeBytes":1.5}}`,
	"{\"eventID\":\"\xff\"}",
}

// genChange is a generated Kinesis data blob: a record of genPayload's
// (its images, identity and members in every shape it draws) with the
// members only Kinesis data has added, before or after the others (a
// second dynamodb object merges with the first).
func genChange(t *prop.T) []byte {
	var ev struct{ Records []json.RawMessage }
	_ = json.Unmarshal(genPayload(t), &ev)
	rec := "{}"
	if len(ev.Records) > 0 {
		rec = string(ev.Records[prop.IntRange(0, len(ev.Records)-1).Draw(t, "record")])
	}
	if !strings.HasPrefix(rec, "{") || rec == "{}" {
		return []byte(rec)
	}
	extra := []string{
		`"recordFormat":` + prop.SampledFrom([]string{`"application/json"`, `"x"`, `null`, `1`}).Draw(t, "format"),
		`"tableName":` + prop.SampledFrom([]string{`"t"`, `null`, `2`, `{}`}).Draw(t, "table"),
		`"dynamodb":{"ApproximateCreationDateTime":` + prop.SampledFrom([]string{`1795241100123456`, `"1795241100123"`, `"x"`, `null`, `true`, `1.5`, `-1`, `1e400`, `"01"`}).Draw(t, "time") +
			`,"ApproximateCreationDateTimePrecision":` + prop.SampledFrom([]string{`"MICROSECOND"`, `"MILLISECOND"`, `null`, `1`}).Draw(t, "precision") + `}`,
	}
	members := strings.Join(extra[:prop.IntRange(0, len(extra)).Draw(t, "extras")], ",")
	if members == "" {
		return []byte(rec)
	}
	if prop.Bool().Draw(t, "before") {
		return []byte("{" + members + "," + rec[1:])
	}
	return []byte(rec[:len(rec)-1] + "," + members + "}")
}

func TestDecodeChangeMatchesEncodingJSON(t *testing.T) {
	for _, c := range changeCases {
		sameChangeAsReference(t, []byte(c))
	}
	prop.Check(t, func(t *prop.T) { sameChangeAsReference(t, genChange(t)) })
}

// FuzzDecodeChange: for any bytes, DecodeChange does not panic and agrees
// with encoding/json (make fuzz runs it).
func FuzzDecodeChange(f *testing.F) {
	for _, c := range changeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, blob []byte) { sameChangeAsReference(t, blob) })
}
