package attr_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
)

// benchImage is a typical 10-attribute room item with a nested map and list.
func benchImage() map[string]types.AttributeValue {
	return item{
		"PK":          s("ROOM#r1"),
		"SK":          s("ROOM"),
		"itemType":    s("room"),
		"name":        s("Flat hunt Berlin"),
		"memberCount": n("3"),
		"avatar":      bin([]byte{0x00, 0x01, 0xfe, 0xff}),
		"isPrivate":   boolean(false),
		"archivedAt":  null(),
		"features":    ss("balcony", "elevator"),
		"context": m(item{
			"combineMode": s("mixed"),
			"limits":      m(item{"maxMembers": n("100"), "priceMax": n("1450.50")}),
			"owners":      l(s("USER#u1"), s("USER#u2")),
			"scores":      ns("1", "2.5"),
		}),
	}
}

func BenchmarkFromLambdaMap(b *testing.B) {
	img, err := attr.ToLambdaMap(benchImage())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := attr.FromLambdaMap(img); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToLambdaMap(b *testing.B) {
	img := benchImage()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := attr.ToLambdaMap(img); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromStreamsMap(b *testing.B) {
	img, err := attr.ToStreamsMap(benchImage())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := attr.FromStreamsMap(img); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLambdaRecord(b *testing.B) {
	img, err := attr.ToStreamsMap(benchImage())
	if err != nil {
		b.Fatal(err)
	}
	keys := map[string]streamtypes.AttributeValue{"PK": img["PK"], "SK": img["SK"]}
	rec := streamtypes.Record{
		AwsRegion:    aws.String("eu-central-1"),
		EventID:      aws.String("1c8f5d3e2b7a4f0e9d6c5b4a39281706"),
		EventName:    streamtypes.OperationTypeModify,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		Dynamodb: &streamtypes.StreamRecord{
			Keys:           keys,
			NewImage:       img,
			OldImage:       img,
			SequenceNumber: aws.String("4421584500000000017450439091"),
			SizeBytes:      aws.Int64(412),
			StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		},
	}
	b.ReportAllocs()
	var sink events.DynamoDBEventRecord
	for b.Loop() {
		if sink, err = attr.LambdaRecord(rec, serviceStreamARN); err != nil {
			b.Fatal(err)
		}
	}
	_ = sink
}
