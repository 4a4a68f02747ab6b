package stream

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

func (r *Runner) shards(ctx context.Context) (lineage, error) {
	l, hashKey, err := describe(ctx, r.API, r.cfg.StreamARN)
	if hashKey != "" {
		r.partitionKey.Store(hashKey)
	}
	return l, err
}

// Shards lists a stream's shards (every DescribeStream page), parents
// before their children (both parents of a merged shard:
// MarkAdjacentParent).
func Shards(ctx context.Context, api API, streamARN string) ([]types.Shard, error) {
	l, _, err := describe(ctx, api, streamARN)
	return l.list, err
}

// lineage is a stream's shards, parents first, and the second parents of
// those that have one (MarkAdjacentParent).
type lineage struct {
	list     []types.Shard
	adjacent map[string]string
}

// parents are s's parents: its ParentShardId and a second one.
func (l lineage) parents(s types.Shard) []string {
	var out []string
	if p := aws.ToString(s.ParentShardId); p != "" {
		out = append(out, p)
	}
	if p := l.adjacent[aws.ToString(s.ShardId)]; p != "" {
		out = append(out, p)
	}
	return out
}

// describe reads every DescribeStream page: the shards, parents first, and
// the table's partition key attribute.
func describe(ctx context.Context, api API, streamARN string) (l lineage, hashKey string, err error) {
	var start *string
	for {
		res, err := api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN), ExclusiveStartShardId: start})
		if err != nil {
			return lineage{}, hashKey, fmt.Errorf("stream: describe %s: %w", streamARN, err)
		}
		for _, k := range res.StreamDescription.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				hashKey = aws.ToString(k.AttributeName)
			}
		}
		l.list = append(l.list, res.StreamDescription.Shards...)
		if m, _ := res.ResultMetadata.Get(adjacentKey{}).(map[string]string); len(m) > 0 {
			if l.adjacent == nil {
				l.adjacent = map[string]string{}
			}
			maps.Copy(l.adjacent, m)
		}
		if start = res.StreamDescription.LastEvaluatedShardId; start == nil {
			l.list = l.parentsFirst()
			return l, hashKey, nil
		}
	}
}

// parentsFirst orders the shards so that a parent present in the list
// comes before its children.
func (l lineage) parentsFirst() []types.Shard {
	shards := l.list
	present := map[string]bool{}
	for _, s := range shards {
		present[aws.ToString(s.ShardId)] = true
	}
	done := map[string]bool{}
	out := make([]types.Shard, 0, len(shards))
	for len(out) < len(shards) {
		progressed := false
		for _, s := range shards {
			id := aws.ToString(s.ShardId)
			if done[id] || slices.ContainsFunc(l.parents(s), func(p string) bool { return present[p] && !done[p] }) {
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
