package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/room"
)

// BackfillStats count a backfill's progress.
type BackfillStats struct {
	Scanned   int64 // items read
	Listings  int64 // listings among them
	Updated   int64 // listings whose index attributes were set
	Unchanged int64 // listings already right
	Retried   int64 // updates that raced a concurrent change and were redone
}

// BackfillListingIndexes sets the GSI1/GSI2 attributes of every listing
// (the seed's migration note): GSI1 only for listings with an external id,
// GSI2 following the status. It scans the table in parallel segments and
// updates only listings whose attributes differ, each on the condition that
// its status did not change meanwhile (if it did, the listing is read again
// and redone). Running it again finds nothing to do. progress, if set, is
// called after every scanned page, never concurrently.
func (s Upkeep) BackfillListingIndexes(ctx context.Context, segments int, progress func(BackfillStats)) (BackfillStats, error) {
	var scanned, listings, updated, unchanged, retried atomic.Int64
	snapshot := func() BackfillStats {
		return BackfillStats{scanned.Load(), listings.Load(), updated.Load(), unchanged.Load(), retried.Load()}
	}
	err := s.scanTypes(ctx, segments, []string{TypeListing}, &scanned, func(it map[string]types.AttributeValue) error {
		listings.Add(1)
		changed, raced, err := s.backfillOne(ctx, it)
		if raced {
			retried.Add(1)
		}
		switch {
		case err != nil:
			return err
		case changed:
			updated.Add(1)
		default:
			unchanged.Add(1)
		}
		return nil
	}, func() {
		if progress != nil {
			progress(snapshot())
		}
	})
	return snapshot(), err
}

// scanTypes scans the table for the items of itemTypes (segments parallel
// segments), counting the items read in scanned and handing each item of
// those types to each; afterPage, if set, is called after every page,
// never concurrently. The first error stops the scan.
func (s Upkeep) scanTypes(ctx context.Context, segments int, itemTypes []string, scanned *atomic.Int64, each func(map[string]types.AttributeValue) error, afterPage func()) error {
	var placeholders []string
	vals := map[string]types.AttributeValue{}
	for i, t := range itemTypes {
		p := fmt.Sprintf(":t%d", i)
		placeholders = append(placeholders, p)
		vals[p] = strAV(t)
	}
	var pageMu sync.Mutex
	return s.scanSegments(ctx, segments, dynamodb.ScanInput{
		FilterExpression:          aws.String("itemType IN (" + strings.Join(placeholders, ", ") + ")"),
		ExpressionAttributeValues: vals,
	}, func(_ int, out *dynamodb.ScanOutput) error {
		scanned.Add(int64(out.ScannedCount))
		for _, it := range out.Items {
			if err := each(it); err != nil {
				return err
			}
		}
		if afterPage != nil {
			pageMu.Lock()
			afterPage()
			pageMu.Unlock()
		}
		return nil
	})
}

// backfillOne sets one listing's index attributes if they differ.
func (s Upkeep) backfillOne(ctx context.Context, item map[string]types.AttributeValue) (changed, raced bool, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		var l room.Listing
		if !s.decode(item, &l) {
			return false, raced, nil // quarantined: left for repair
		}
		want := ListingIndexKeys(l)
		var set, remove []string
		vals := map[string]types.AttributeValue{":status": &types.AttributeValueMemberS{Value: string(l.Status)}}
		for _, name := range []string{"GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"} {
			have, _ := item[name].(*types.AttributeValueMemberS)
			w, ok := want[name]
			switch {
			case ok && (have == nil || have.Value != w):
				set = append(set, fmt.Sprintf("%s = :%s", name, name))
				vals[":"+name] = &types.AttributeValueMemberS{Value: w}
			case !ok && item[name] != nil:
				remove = append(remove, name)
			}
		}
		if len(set) == 0 && len(remove) == 0 {
			return false, raced, nil
		}
		expr := ""
		if len(set) > 0 {
			expr = "SET " + strings.Join(set, ", ")
		}
		if len(remove) > 0 {
			expr += " REMOVE " + strings.Join(remove, ", ")
		}
		_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.Table), Key: ListingKey(l.RoomID, l.ListingID).AV(),
			UpdateExpression:          aws.String(expr),
			ConditionExpression:       aws.String("attribute_exists(PK) AND #status = :status"),
			ExpressionAttributeNames:  map[string]string{"#status": "status"},
			ExpressionAttributeValues: vals,
		})
		if err == nil {
			return true, raced, nil
		}
		if !isConditionFailed(err) {
			return false, raced, fmt.Errorf("store: backfill listing %s: %w", l.ListingID, err)
		}
		// The listing changed or went away meanwhile: read it again.
		raced = true
		out, gerr := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: ListingKey(l.RoomID, l.ListingID).AV(), ConsistentRead: aws.Bool(true)})
		if gerr != nil {
			return false, raced, fmt.Errorf("store: backfill: reread listing %s: %w", l.ListingID, gerr)
		}
		if out.Item == nil {
			return false, raced, nil
		}
		item = out.Item
	}
	return false, raced, fmt.Errorf("store: backfill: listing keeps changing; run the backfill again")
}
