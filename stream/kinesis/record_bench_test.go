package kinesis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/kinesis"
)

// benchData is a change of an item of about 20 attributes, as the app's
// items are.
func benchData() []byte {
	img := `"PK":{"S":"ROOM#r1"},"SK":{"S":"MEMBER#alice"}`
	for i := range 18 {
		img += fmt.Sprintf(`,"a%d":{"S":"value number %d with some text"}`, i, i)
	}
	return fmt.Appendf(nil, `{"awsRegion":"us-east-1","eventID":"e1","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":"t",`+
		`"dynamodb":{"ApproximateCreationDateTime":%d,"ApproximateCreationDateTimePrecision":"MICROSECOND","Keys":{"PK":{"S":"ROOM#r1"},"SK":{"S":"MEMBER#alice"}},"NewImage":{%s},"OldImage":{%s},"SizeBytes":900},`+
		`"eventSource":"aws:dynamodb"}`, time.Now().UnixMicro(), img, img)
}

// What a Kinesis record costs from its data to the Lambda record a
// handler gets: Source's Record, then the Runner's conversion.
func BenchmarkKinesisRecordToHandler(b *testing.B) {
	r := types.Record{SequenceNumber: aws.String("49600000000000000000000000000000000000000000000000000001"), Data: benchData(), PartitionKey: aws.String("ROOM#r1")}
	b.ReportAllocs()
	for b.Loop() {
		rec := kinesis.Record(r)
		if _, err := attr.LambdaRecord(rec, "arn"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKinesisChangeOnly(b *testing.B) {
	d := benchData()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := stream.KinesisChange(d, "1", ""); err != nil {
			b.Fatal(err)
		}
	}
}
