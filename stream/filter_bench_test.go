package stream_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// BenchmarkLoopGuard is the filter's cost per record on the Runner's hot
// path (Config.Filter), beside SkipDerived's, the guard as a Go function.
func BenchmarkLoopGuard(b *testing.B) {
	img := map[string]events.DynamoDBAttributeValue{
		"PK": events.NewStringAttribute("ROOM#1"), "SK": events.NewStringAttribute("LISTING#2"),
		"itemType": events.NewStringAttribute("Listing"), "title": events.NewStringAttribute("Flat"), "price": events.NewNumberAttribute("1200"),
	}
	r := events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{"PK": img["PK"], "SK": img["SK"]}, NewImage: img, OldImage: img}}
	guard := stream.LoopGuard("PK")
	b.Run("filter", func(b *testing.B) {
		for b.Loop() {
			if !guard.Match(r) {
				b.Fatal("filtered out a core item")
			}
		}
	})
	b.Run("SkipDerived", func(b *testing.B) {
		for b.Loop() {
			if stream.SkipDerived(r) {
				b.Fatal("skipped a core item")
			}
		}
	})
}
