package ddblocal

import (
	"fmt"
	"testing"
	"time"
)

// A shard no one reads any more is forgotten: a long run over many shards
// (a table's shards roll over every few hours) keeps only those read in
// the last minute or so.
func TestShardReadsForgetsShardsNoOneReads(t *testing.T) {
	s := shardReads{iters: map[string]shardIter{}, shards: map[string]map[uint64][]time.Time{}}
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		it := fmt.Sprint("iter-", i)
		s.start(it, shardIter{shard: fmt.Sprint("shard-", i), at: t0})
		if _, why := s.take(it, t0, 5, 2); why != "" {
			t.Fatal(why)
		}
	}
	s.start("late", shardIter{shard: "shard-late", at: t0.Add(2 * time.Minute)})
	if _, why := s.take("late", t0.Add(2*time.Minute), 5, 2); why != "" {
		t.Fatal(why)
	}
	if len(s.shards) != 1 {
		t.Fatalf("%d shards kept, want only the one read in the last minute", len(s.shards))
	}
}
