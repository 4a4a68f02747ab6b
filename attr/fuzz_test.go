package attr_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
)

// FuzzRecordConversions: whatever Lambda JSON a record holds, converting
// its images never panics, and an image that converts comes back the same
// through each of the three shapes (Lambda → SDK → Lambda, SDK → Streams →
// SDK). Seeds: the Lambda fixtures, and the shapes that broke things before.
func FuzzRecordConversions(f *testing.F) {
	files, _ := filepath.Glob("testdata/lambda/*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			f.Fatal(err)
		}
		for _, r := range ev.Records {
			rb, _ := json.Marshal(r)
			f.Add(rb)
		}
	}
	for _, s := range []string{
		`{"dynamodb":{"NewImage":{"a":{}}}}`,
		`{"dynamodb":{"NewImage":{"m":{"M":{}},"l":{"L":[]},"ss":{"SS":[]},"n":{"N":"1e400"}}}}`,
		`{"dynamodb":{"Keys":{"PK":{"B":"AAEC"}},"NewImage":{"x":{"NULL":true},"y":{"BOOL":false},"z":{"BS":["AA=="]}}}}`,
		`{"dynamodb":{"NewImage":{"deep":{"M":{"a":{"L":[{"M":{"b":{"NS":["1","2"]}}}]}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	seq := "1"
	f.Fuzz(func(t *testing.T, data []byte) {
		var r events.DynamoDBEventRecord
		if err := attr.UnmarshalJSON(data, &r); err != nil {
			return // json.Unmarshal panics on some of these (see attr.UnmarshalJSON)
		}
		for _, img := range []map[string]events.DynamoDBAttributeValue{r.Change.Keys, r.Change.NewImage, r.Change.OldImage} {
			m, err := attr.FromLambdaMap(img)
			if err != nil {
				continue
			}
			back, err := attr.ToLambdaMap(m)
			if err != nil {
				t.Fatalf("an image that converted does not convert back: %v", err)
			}
			if a, b := mustJSON(t, img), mustJSON(t, back); a != b {
				t.Fatalf("Lambda → SDK → Lambda changed the image:\n%s\n%s", a, b)
			}
			s, err := attr.ToStreamsMap(m)
			if err != nil {
				t.Fatalf("SDK → Streams: %v", err)
			}
			m2, err := attr.FromStreamsMap(s)
			if err != nil {
				t.Fatalf("Streams → SDK: %v", err)
			}
			back2, err := attr.ToLambdaMap(m2)
			if err != nil {
				t.Fatalf("SDK → Lambda after Streams: %v", err)
			}
			if a, b := mustJSON(t, img), mustJSON(t, back2); a != b {
				t.Fatalf("through the Streams shape the image changed:\n%s\n%s", a, b)
			}
			// And as a whole record read from DynamoDB Streams (the runner's
			// path), the image arrives as Lambda would deliver it.
			lr, err := attr.LambdaRecord(streamtypes.Record{EventName: streamtypes.OperationTypeModify,
				Dynamodb: &streamtypes.StreamRecord{SequenceNumber: &seq, NewImage: s}}, "arn")
			if err != nil {
				t.Fatalf("LambdaRecord of a converted image: %v", err)
			}
			if a, b := mustJSON(t, img), mustJSON(t, lr.Change.NewImage); len(img) > 0 && a != b {
				t.Fatalf("through a Streams record the image changed:\n%s\n%s", a, b)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
