package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/drift"
	"github.com/dynastream/dynastream/internal/store"
)

// BenchmarkVerify measures `projector verify`'s scan and `rebuild`'s
// repairs on DynamoDB Local: a table of 20,000 items (reactions on 2,000
// comments and their counts), a tenth of the counts corrupted. It reports
// items scanned per second (4 segments) and repairs per second.
func BenchmarkVerify(b *testing.B) {
	c, table, _ := ddbtest.Table(b)
	st := store.New(c.DB, table)
	ctx := context.Background()
	const comments, perComment = 2000, 9
	var items []map[string]types.AttributeValue
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for i := range comments {
		cid := fmt.Sprintf("c%05d", i)
		for u := range perComment {
			items = append(items, map[string]types.AttributeValue{"PK": s("COMMENT#" + cid), "SK": s(fmt.Sprintf("REACTION#u%d#👍", u)),
				"itemType": s(store.TypeReaction), "commentId": s(cid), "userId": s(fmt.Sprint("u", u)), "emoji": s("👍"), "resourceType": s("quest"), "resourceId": s("q1")})
		}
		n := perComment
		if i%10 == 0 {
			n++ // drift
		}
		items = append(items, map[string]types.AttributeValue{"PK": s("COMMENT#" + cid), "SK": s("COUNTS"), "itemType": s(store.TypeReactionCounts),
			"derived": &types.AttributeValueMemberBOOL{Value: true}, "commentId": s(cid),
			"counts": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"👍": &types.AttributeValueMemberN{Value: fmt.Sprint(n)}}}})
	}
	write := func(items []map[string]types.AttributeValue) {
		var wg sync.WaitGroup
		for chunk := range slices.Chunk(items, 25) {
			wg.Go(func() {
				reqs := make([]types.WriteRequest, len(chunk))
				for i, it := range chunk {
					reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
				}
				if _, err := c.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	write(items)
	b.ResetTimer()
	var scanned, repaired int64
	var scanNs, repairNs int64
	for range b.N {
		b.StopTimer()
		write(items) // the drift again
		b.StartTimer()
		t0 := time.Now().UnixNano()
		f, err := st.Upkeep.ScanFacts(ctx, 4, nil)
		if err != nil {
			b.Fatal(err)
		}
		diffs := drift.Check(f)
		t1 := time.Now().UnixNano()
		if len(diffs) != comments/10 {
			b.Fatalf("%d differences, want %d", len(diffs), comments/10)
		}
		var wg sync.WaitGroup
		for part := range slices.Chunk(diffs, len(diffs)/8+1) {
			wg.Go(func() {
				for _, d := range part {
					if err := st.Upkeep.Repair(ctx, d, "bench"); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
		scanned += f.Scanned
		repaired += int64(len(diffs))
		scanNs += t1 - t0
		repairNs += time.Now().UnixNano() - t1
	}
	b.ReportMetric(float64(scanned)/(float64(scanNs)/1e9), "items-scanned/s")
	b.ReportMetric(float64(repaired)/(float64(repairNs)/1e9), "repairs/s")
}
