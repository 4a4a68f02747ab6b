package stream

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

func (r *Runner) shards(ctx context.Context) ([]types.Shard, error) {
	shards, hashKey, err := describe(ctx, r.API, r.cfg.StreamARN)
	if hashKey != "" {
		r.partitionKey.Store(hashKey)
	}
	return shards, err
}

// Shards lists a stream's shards (every DescribeStream page), parents
// before their children.
func Shards(ctx context.Context, api API, streamARN string) ([]types.Shard, error) {
	shards, _, err := describe(ctx, api, streamARN)
	return shards, err
}

// describe reads every DescribeStream page: the shards, parents first, and
// the table's partition key attribute.
func describe(ctx context.Context, api API, streamARN string) (shards []types.Shard, hashKey string, err error) {
	var start *string
	for {
		res, err := api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN), ExclusiveStartShardId: start})
		if err != nil {
			return nil, hashKey, fmt.Errorf("stream: describe %s: %w", streamARN, err)
		}
		for _, k := range res.StreamDescription.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				hashKey = aws.ToString(k.AttributeName)
			}
		}
		shards = append(shards, res.StreamDescription.Shards...)
		if start = res.StreamDescription.LastEvaluatedShardId; start == nil {
			return parentsFirst(shards), hashKey, nil
		}
	}
}

// parentsFirst orders shards so that a parent present in the list comes
// before its children.
func parentsFirst(shards []types.Shard) []types.Shard {
	present := map[string]bool{}
	for _, s := range shards {
		present[aws.ToString(s.ShardId)] = true
	}
	done := map[string]bool{}
	out := make([]types.Shard, 0, len(shards))
	for len(out) < len(shards) {
		progressed := false
		for _, s := range shards {
			id, parent := aws.ToString(s.ShardId), aws.ToString(s.ParentShardId)
			if done[id] || (parent != "" && present[parent] && !done[parent]) {
				continue
			}
			done[id] = true
			out = append(out, s)
			progressed = true
		}
		if !progressed { // a cycle cannot happen; keep the rest as listed
			for _, s := range shards {
				if !done[aws.ToString(s.ShardId)] {
					out = append(out, s)
				}
			}
		}
	}
	return out
}
