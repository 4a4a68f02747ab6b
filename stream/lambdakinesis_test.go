package stream_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream"
)

// allFields compares attribute values (of aws-lambda-go and the SDK) by
// their unexported fields too.
var allFields = cmp.Exporter(func(reflect.Type) bool { return true })

func loadEvent(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testdata/kinesis/event.json is a Lambda Kinesis event as the event
// source mapping on a table's Kinesis data stream sends it: each record's
// data is DynamoDB's change in JSON, base64 ("Change data capture for
// Kinesis Data Streams with DynamoDB"; the Kinesis event as in Lambda's
// "Using Lambda with Kinesis Data Streams"), here the changes of
// testdata/lambda/{insert,modify,remove}.json, the first with its time in
// milliseconds and no precision (as written before the setting existed),
// the others in microseconds (ApproximateCreationDateTimePrecision
// MICROSECOND). Decoded, each is the DynamoDB Streams record with the
// Kinesis record's sequence number and stream, and its time to the
// precision it came with: a handler gets the same Change from either.
func TestKinesisEventDecodesToTheStreamRecord(t *testing.T) {
	ev, bad, err := stream.DecodeKinesisEvent(loadEvent(t, "testdata/kinesis/event.json"))
	if err != nil || len(bad) != 0 || len(ev.Records) != 3 {
		t.Fatalf("%d records, bad %v, err %v", len(ev.Records), bad, err)
	}
	seqs := []string{"49656854729138741096012837740185643981092537459218350082",
		"49656854729138741096012837740186852906912152088393056258",
		"49656854729138741096012837740188061832731766717567762434"}
	for i, name := range []string{"insert", "modify", "remove"} {
		var want events.DynamoDBEvent
		if err := json.Unmarshal(loadEvent(t, "testdata/lambda/"+name+".json"), &want); err != nil {
			t.Fatal(err)
		}
		w, got := want.Records[0], ev.Records[i]
		at := w.Change.ApproximateCreationDateTime.Add(457123*time.Microsecond + time.Duration(i)*time.Microsecond)
		if i == 0 {
			at = w.Change.ApproximateCreationDateTime.Add(457 * time.Millisecond)
		}
		if !got.Change.ApproximateCreationDateTime.Equal(at) {
			t.Errorf("%s: created %s, want %s", name, got.Change.ApproximateCreationDateTime.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
		}
		w.Change.ApproximateCreationDateTime = got.Change.ApproximateCreationDateTime
		w.Change.SequenceNumber, w.Change.StreamViewType, w.EventVersion = seqs[i], "", ""
		w.EventSourceArn = "arn:aws:kinesis:eu-central-1:123456789012:stream/dynastream-changes"
		if diff := cmp.Diff(w, got, allFields); diff != "" {
			t.Errorf("%s (-DynamoDB Streams' record, adjusted +from Kinesis):\n%s", name, diff)
		}
		wc, err := stream.Decode(w)
		if err != nil {
			t.Fatal(err)
		}
		gc, err := stream.Decode(got)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wc, gc, allFields); diff != "" {
			t.Errorf("%s: the handler's Change differs:\n%s", name, diff)
		}
	}
}

// LambdaHandler takes a Kinesis event as it takes a DynamoDB stream event:
// the handler gets the changes, and a record it reports failed is named
// by its Kinesis sequence number (batchItemFailures' itemIdentifier on a
// Kinesis source: Lambda, "Configuring partial batch response with
// Kinesis Data Streams and Lambda").
func TestLambdaHandlerTakesKinesisEvents(t *testing.T) {
	var kinds []string
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			c, err := stream.Decode(r)
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			kinds = append(kinds, c.Kind.String())
		}
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[1].Change.SequenceNumber}}}, nil
	}
	resp, err := stream.LambdaHandler(h, nil, "projector", nil)(context.Background(), loadEvent(t, "testdata/kinesis/event.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(kinds, ",") != "INSERT,MODIFY,REMOVE" {
		t.Errorf("the handler got %v", kinds)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "49656854729138741096012837740186852906912152088393056258" {
		t.Errorf("batchItemFailures %+v, want the second record's Kinesis sequence number", resp.BatchItemFailures)
	}
}

// kinesisRecordJSON is a Lambda Kinesis record whose data is data.
func kinesisRecordJSON(seq string, data []byte) string {
	return fmt.Sprintf(`{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"k","sequenceNumber":%q,"data":%q,"approximateArrivalTimestamp":1795237534.6},`+
		`"eventSource":"aws:kinesis","eventVersion":"1.0","eventID":"shardId-000000000000:%s","eventName":"aws:kinesis:record","awsRegion":"eu-central-1",`+
		`"eventSourceARN":"arn:aws:kinesis:eu-central-1:123456789012:stream/s"}`, seq, base64.StdEncoding.EncodeToString(data), seq)
}

func ddbChange(pk string, extra string) []byte {
	return []byte(`{"awsRegion":"eu-central-1","eventID":"id-` + pk + `","eventName":"INSERT","userIdentity":null,"recordFormat":"application/json","tableName":"t",` +
		`"dynamodb":{"ApproximateCreationDateTime":1795237534457` + extra + `,"Keys":{"PK":{"S":"` + pk + `"}},"NewImage":{"PK":{"S":"` + pk + `"}},"SizeBytes":12},"eventSource":"aws:dynamodb"}`)
}

// A Kinesis record that is not a DynamoDB change it can read (data that
// is not JSON or some other producer's, a format or precision it does not
// know, a time missing or past 2262, an attribute value that does not
// decode, or one aws-lambda-go panics on) goes to the dead letters
// with the raw record; the others reach the handler. An event none of
// whose records is a DynamoDB change fails: the function reads a stream
// some other producer writes.
func TestLambdaHandlerIsolatesKinesisRecordsItCannotRead(t *testing.T) {
	payload := `{"Records":[` + strings.Join([]string{
		kinesisRecordJSON("1001", ddbChange("a", "")),
		kinesisRecordJSON("1002", []byte(`Hello`)),
		kinesisRecordJSON("1003", []byte(`{"eventSource":"aws:dynamodb","recordFormat":"application/x-amz-ion","dynamodb":{}}`)),
		kinesisRecordJSON("1004", ddbChange("b", `,"ApproximateCreationDateTimePrecision":"NANOSECOND"`)),
		kinesisRecordJSON("1005", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{}}}}`)),
		kinesisRecordJSON("1006", ddbChange("c", "")),
		kinesisRecordJSON("1007", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"Keys":{"PK":{"S":"d"}}}}`)),
		kinesisRecordJSON("1008", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":9223372036854775807,"ApproximateCreationDateTimePrecision":"MICROSECOND","Keys":{"PK":{"S":"e"}}}}`)),
		// a binary set member that is not a string: aws-lambda-go panics on it
		kinesisRecordJSON("1009", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"BS":[1]}}}}`)),
	}, ",") + `]}`
	var got []string
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			got = append(got, r.Change.SequenceNumber+"="+r.Change.Keys["PK"].String())
		}
		return events.DynamoDBEventResponse{}, nil
	}
	dl := &stream.MemoryDeadLetters{}
	resp, err := stream.LambdaHandler(h, dl, "projector", nil)(context.Background(), json.RawMessage(payload))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if strings.Join(got, ",") != "1001=a,1006=c" {
		t.Errorf("the handler got %v", got)
	}
	var dead []string
	for _, d := range dl.All() {
		dead = append(dead, d.FirstSequenceNumber)
		if len(d.Unconverted) != 1 || !json.Valid(d.Unconverted[0]) || !strings.Contains(d.StreamARN, ":stream/s") {
			t.Errorf("dead letter %+v: want the raw record and the stream", d)
		}
	}
	if strings.Join(dead, ",") != "1002,1003,1004,1005,1007,1008,1009" {
		t.Errorf("dead-lettered %v", dead)
	}

	only := `{"Records":[` + kinesisRecordJSON("1", []byte(`{"temperature":21}`)) + `,` + kinesisRecordJSON("2", []byte(`Hello`)) + `]}`
	if _, err := stream.LambdaHandler(h, dl, "projector", nil)(context.Background(), json.RawMessage(only)); !errors.Is(err, stream.ErrNotStreamEvent) {
		t.Errorf("a Kinesis event of another producer's: %v, want ErrNotStreamEvent", err)
	}
}

// Whatever a Kinesis event holds, DecodeKinesisEvent does not panic, and
// when it does not fail, every record is either handed over (with a
// sequence number and from aws:dynamodb) or bad, in order.
func FuzzDecodeKinesisEvent(f *testing.F) {
	f.Add([]byte(`{"Records":[` + kinesisRecordJSON("1", ddbChange("a", "")) + `]}`))
	f.Add([]byte(`{"Records":[` + kinesisRecordJSON("1", ddbChange("a", `,"ApproximateCreationDateTimePrecision":"MICROSECOND"`)) + `,` + kinesisRecordJSON("2", []byte("x")) + `]}`))
	f.Add([]byte(`{"Records":[` + kinesisRecordJSON("1", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":-1}}`)) + `]}`))
	f.Add([]byte(`{"Records":[` + kinesisRecordJSON("1", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":1e400}}`)) + `]}`))
	f.Add([]byte(`{"Records":[` + kinesisRecordJSON("1", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":9223372036854775807,"ApproximateCreationDateTimePrecision":"MICROSECOND"}}`)) + `]}`))
	f.Add([]byte(`{"Records":[` + kinesisRecordJSON("1", []byte(`{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":1,"Keys":{"PK":{"BS":[1]}}}}`)) + `]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		ev, bad, err := stream.DecodeKinesisEvent(payload)
		if err != nil {
			if !errors.Is(err, stream.ErrNotStreamEvent) {
				t.Fatalf("error %v does not wrap ErrNotStreamEvent", err)
			}
			return
		}
		var raw struct{ Records []json.RawMessage }
		_ = json.Unmarshal(payload, &raw)
		if len(ev.Records)+len(bad) != len(raw.Records) {
			t.Fatalf("%d records: %d handed over, %d bad", len(raw.Records), len(ev.Records), len(bad))
		}
		for _, r := range ev.Records {
			if r.Change.SequenceNumber == "" || r.EventSource != "aws:dynamodb" {
				t.Fatalf("handed over %+v", r)
			}
		}
		for _, b := range bad {
			if b.SequenceNumber == "" || b.Err == nil {
				t.Fatalf("bad record %+v", b)
			}
		}
	})
}
