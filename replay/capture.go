package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// Capture reads every record now in a stream, shard by shard (parents
// before children, each shard in sequence order), and returns them as one
// event. It stops reading a shard at its end or, for an open shard, after
// an empty read (DynamoDB Local makes a write visible at once).
func Capture(ctx context.Context, api stream.API, streamARN string) (events.DynamoDBEvent, error) {
	shards, err := stream.Shards(ctx, api, streamARN)
	if err != nil {
		return events.DynamoDBEvent{}, fmt.Errorf("replay: %w", err)
	}
	var ev events.DynamoDBEvent
	for _, s := range shards {
		it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(streamARN), ShardId: s.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return ev, fmt.Errorf("replay: shard iterator: %w", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return ev, fmt.Errorf("replay: get records: %w", err)
			}
			for _, r := range out.Records {
				lr, err := attr.LambdaRecord(r, streamARN)
				if err != nil {
					return ev, fmt.Errorf("replay: %w", err)
				}
				ev.Records = append(ev.Records, lr)
			}
			if len(out.Records) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return ev, nil
}

// Save writes an event as indented JSON (a fixture for testdata/).
func Save(path string, ev events.DynamoDBEvent) error {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads an event written by Save (or any Lambda DynamoDB event JSON).
func Load(path string) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	b, err := os.ReadFile(path)
	if err == nil {
		err = attr.UnmarshalJSON(b, &ev)
	}
	if err != nil {
		return ev, fmt.Errorf("replay: load %s: %w", path, err)
	}
	return ev, nil
}

// Follower returns a Target.Follow that reads the stream: each call returns
// the records added to it since the last call (the first, since Follower
// was called) that keep accepts, as Capture reads them. Records the kit's
// Reset makes (the derived items it deletes) are among them: keep selects
// the records of the items the handler derives from its own writes.
func Follower(ctx context.Context, api stream.API, streamARN string, keep func(events.DynamoDBEventRecord) bool) (func(context.Context) ([]events.DynamoDBEventRecord, error), error) {
	seen := map[string]bool{}
	ev, err := Capture(ctx, api, streamARN)
	if err != nil {
		return nil, err
	}
	for _, r := range ev.Records {
		seen[r.Change.SequenceNumber] = true
	}
	return func(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
		ev, err := Capture(ctx, api, streamARN)
		if err != nil {
			return nil, err
		}
		var out []events.DynamoDBEventRecord
		for _, r := range ev.Records {
			if !seen[r.Change.SequenceNumber] {
				seen[r.Change.SequenceNumber] = true
				if keep == nil || keep(r) {
					out = append(out, r)
				}
			}
		}
		return out, nil
	}, nil
}
