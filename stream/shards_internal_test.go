package stream

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Parents come before their children whatever order DescribeStream lists
// them in; a parent no longer listed (trimmed) does not hold a child back.
func TestParentsFirst(t *testing.T) {
	shard := func(id, parent string) types.Shard {
		s := types.Shard{ShardId: aws.String(id)}
		if parent != "" {
			s.ParentShardId = aws.String(parent)
		}
		return s
	}
	got := lineage{list: []types.Shard{shard("c2", "c1"), shard("c1", "p"), shard("p", ""), shard("x", "gone")}}.parentsFirst()
	var ids []string
	for _, s := range got {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	pos := map[string]int{}
	for i, id := range ids {
		pos[id] = i
	}
	if len(ids) != 4 || pos["p"] > pos["c1"] || pos["c1"] > pos["c2"] {
		t.Fatalf("order %v", ids)
	}
}

// A merged shard comes after both its parents (MarkAdjacentParent), the
// adjacent one listed after it or not.
func TestParentsFirstMerged(t *testing.T) {
	shard := func(id, parent string) types.Shard {
		s := types.Shard{ShardId: aws.String(id)}
		if parent != "" {
			s.ParentShardId = aws.String(parent)
		}
		return s
	}
	l := lineage{list: []types.Shard{shard("m", "a"), shard("a", ""), shard("b", "")}, adjacent: map[string]string{"m": "b"}}
	var ids []string
	for _, s := range l.parentsFirst() {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	if len(ids) != 3 || ids[2] != "m" {
		t.Fatalf("order %v, want the merged shard m last", ids)
	}
}
