package store

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// What the external tests need of the package's insides.

// RecentItemForTest is recentItem.
func RecentItemForTest(r RecentCooking, shards int) (map[string]types.AttributeValue, error) {
	return recentItem(r, shards)
}

// TrendingWriteForTest is trendingWrite.
func (s Cooking) TrendingWriteForTest(recipeID, week string, count int) types.TransactWriteItem {
	return s.trendingWrite(recipeID, week, 0, count)
}

// BetweenShardReads sets the hook a sharded read runs after its query of
// the unsharded key and before its shards'.
func BetweenShardReads(s *Store, f func()) { s.betweenShardReads = f }

// PendingShardForTest is pendingShard: the pending item a call whose first
// change is sourceID adds to.
func PendingShardForTest(sourceID string) int { return pendingShard(sourceID) }
