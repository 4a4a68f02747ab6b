package kinesis

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// PartitionKey is the Kinesis partition key of r's item: a hash of its
// whole key (Kinesis takes 256 characters at most), the same for every
// change of the item, so that they go to one shard. With
// stream.KinesisData it puts a table's changes into a Kinesis stream as
// DynamoDB's Kinesis destination would.
func PartitionKey(r events.DynamoDBEventRecord) string {
	sum := sha256.Sum256([]byte(stream.ItemKey(r)))
	return hex.EncodeToString(sum[:])
}
