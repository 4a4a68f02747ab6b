package stream

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/attr"
)

// Snapshot records: the items a Bootstrap scan reads, as the INSERT
// records a consumer gets, and their redrive (read again by key).

// snapshotRecord is a scanned item as the INSERT record a consumer gets.
func snapshotRecord(item map[string]ddbtypes.AttributeValue, keys []string, streamARN string) (events.DynamoDBEventRecord, error) {
	img, err := attr.ToLambdaMap(item)
	if err != nil {
		return events.DynamoDBEventRecord{}, fmt.Errorf("stream: bootstrap: an item the scan read: %w", err)
	}
	k := make(map[string]events.DynamoDBAttributeValue, len(keys))
	for _, n := range keys {
		if v, ok := img[n]; ok {
			k[n] = v
		}
	}
	return SnapshotRecord(k, img, streamARN, time.Now()), nil
}

// IsSnapshot reports whether a record is one of Bootstrap's (an item its
// scan read, SnapshotRecord) rather than a change the stream carried: a
// consumer with effects per change keeps them off such records, which
// stand for items that already existed.
func IsSnapshot(r events.DynamoDBEventRecord) bool {
	return strings.HasPrefix(r.EventID, "bootstrap:")
}

// SnapshotRecord is an item read by a scan as the INSERT record Bootstrap
// hands a consumer: its key attributes and its image, an eventID of its own
// ("bootstrap:" and a hash of the key and the image: the same for the same
// image on every run, for idempotency keys), a sequence number unique to
// it, created at the scan's time. The replay kit's bootstrap schedules make
// theirs with it too.
func SnapshotRecord(keys, image map[string]events.DynamoDBAttributeValue, streamARN string, at time.Time) events.DynamoDBEventRecord {
	b, _ := json.Marshal([]any{canonical(keys), canonical(image)})
	sum := sha256.Sum256(b)
	id := fmt.Sprintf("%x", sum[:8])
	return events.DynamoDBEventRecord{
		EventID: "bootstrap:" + id, EventName: "INSERT", EventSource: dynamodbSource, EventVersion: "1.1", EventSourceArn: streamARN,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.UTC().Truncate(time.Second)},
			Keys:                        keys, NewImage: image, SequenceNumber: "bootstrap-" + id,
			SizeBytes: int64(len(id)), StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

// BootstrapShard is the shard of the dead letters Bootstrap writes: its
// records are a scan's, which no shard holds. Their on-failure record
// names their items' keys (FailureRecord.BootstrapKeys) so that a redrive
// can read the items again (ReadItems).
const BootstrapShard = "bootstrap"

// GetItemAPI is the part of the DynamoDB client ReadItems uses.
type GetItemAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// ReadItems reads items of the stream's table by key, strongly
// consistent, as the INSERT records Bootstrap hands a consumer
// (SnapshotRecord): the redrive of records Bootstrap gave up on, whose
// range no shard can give back. It reads the items as they are now; a key
// whose item is gone is left out and counted in gone (the stream carries
// its removal to the consumer).
func ReadItems(ctx context.Context, db GetItemAPI, streamARN string, keys []map[string]events.DynamoDBAttributeValue) (recs []events.DynamoDBEventRecord, gone int, err error) {
	recs, gone, _, err = readItems(ctx, db, streamARN, keys, nil)
	return recs, gone, err
}

// ReadBootstrap reads again the items of a failure record Bootstrap wrote
// (shard BootstrapShard), as ReadItems does, and hands back only those
// that are as the scan read them: an item whose image changed since
// (another eventID than BootstrapEventIDs names) is left out and its key
// returned in changed, as one that is gone is counted in gone. Handing a
// consumer that adds up differences the item as it is now, as an INSERT,
// would count the change the stream carried twice; a record written
// before eventIDs were kept is read as it is now.
func ReadBootstrap(ctx context.Context, db GetItemAPI, fr FailureRecord) (recs []events.DynamoDBEventRecord, gone int, changed []map[string]events.DynamoDBAttributeValue, err error) {
	ids := fr.BootstrapEventIDs
	if ids != nil && len(ids) != len(fr.BootstrapKeys) {
		return nil, 0, nil, fmt.Errorf("stream: a bootstrap failure record names %d keys and %d eventIDs", len(fr.BootstrapKeys), len(ids))
	}
	return readItems(ctx, db, fr.BatchInfo.StreamARN, fr.BootstrapKeys, ids)
}

// readItems reads the items of keys as records; with ids, the eventIDs
// the records had, those of the items whose image changed since are left
// out and their keys returned in changed.
func readItems(ctx context.Context, db GetItemAPI, streamARN string, keys []map[string]events.DynamoDBAttributeValue, ids []string) (recs []events.DynamoDBEventRecord, gone int, changed []map[string]events.DynamoDBAttributeValue, err error) {
	table, err := TableOf(streamARN)
	if err != nil {
		return nil, 0, nil, err
	}
	for i, k := range keys {
		key, err := attr.FromLambdaMap(k)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("stream: read items: a key: %w", err)
		}
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, 0, nil, fmt.Errorf("stream: read items of %s: %w", table, err)
		}
		if out.Item == nil {
			gone++
			continue
		}
		names := make([]string, 0, len(k))
		for n := range k {
			names = append(names, n)
		}
		rec, err := snapshotRecord(out.Item, names, streamARN)
		if err != nil {
			return nil, 0, nil, err
		}
		if ids != nil && rec.EventID != ids[i] {
			changed = append(changed, k)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, gone, changed, nil
}

// TableOf is the table a stream ARN belongs to
// (arn:aws:dynamodb:<region>:<account>:table/<table>/stream/<label>).
func TableOf(streamARN string) (string, error) {
	_, rest, ok := strings.Cut(streamARN, ":table/")
	table, _, ok2 := strings.Cut(rest, "/stream/")
	if !ok || !ok2 || table == "" {
		return "", fmt.Errorf("stream: %q is not a stream ARN (…:table/<table>/stream/<label>)", streamARN)
	}
	return table, nil
}
