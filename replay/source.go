package replay

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// SourceTable is the table the stream was captured from, for a Target
// whose handler reads it (a projection that recomputes from the table
// instead of applying each record's change). Without it, the handler
// reads the table as it is after the scenario — its final state — under
// every schedule, so such a projection converges whatever its bugs with
// the states in between. With it, the kit moves the table through the
// stream's own history: before each handler call, the source items are
// written as they were right after the newest record delivered so far
// (each item's NewImage, or deleted for a removal), so the handler meets
// the intermediate states it would meet live, where the table is always at
// least as new as the records it is handed, never older. Before each run
// the items are put back as they were before the stream's first record;
// after Check they are at their final state again.
//
// It needs the stream's new and old images (NEW_AND_OLD_IMAGES). Records
// Skip skips (default stream.SkipDerived: the derived items the handler
// writes itself) are not replayed into the table.
type SourceTable struct {
	DB    *dynamodb.Client
	Table string
	Skip  stream.SkipFunc
}

// history is a SourceTable moved through a stream: the records in
// sequence order and how far the table has been moved.
type history struct {
	src  SourceTable
	mu   sync.Mutex
	recs []events.DynamoDBEventRecord // core records, each once, by sequence number
	seqs []*big.Int
	at   int // recs[:at] are applied
}

func newHistory(src SourceTable, ev events.DynamoDBEvent) (*history, error) {
	if src.Skip == nil {
		src.Skip = stream.SkipDerived
	}
	h := &history{src: src}
	seen := map[string]bool{}
	for _, r := range ev.Records {
		if src.Skip(r) || seen[r.Change.SequenceNumber] {
			continue
		}
		seen[r.Change.SequenceNumber] = true
		h.recs = append(h.recs, r)
	}
	h.seqs = make([]*big.Int, len(h.recs))
	for i, r := range h.recs {
		n, ok := new(big.Int).SetString(r.Change.SequenceNumber, 10)
		if !ok {
			return nil, fmt.Errorf("replay: SourceTable: record %s: sequence number %q is not a number", r.EventID, r.Change.SequenceNumber)
		}
		if r.EventName != "REMOVE" && len(r.Change.NewImage) == 0 || r.EventName != "INSERT" && len(r.Change.OldImage) == 0 {
			return nil, fmt.Errorf("replay: SourceTable: record %s has no %s image: the stream must have NEW_AND_OLD_IMAGES", r.EventID,
				map[bool]string{true: "new", false: "old"}[len(r.Change.NewImage) == 0])
		}
		h.seqs[i] = n
	}
	idx := make([]int, len(h.recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return h.seqs[a].Cmp(h.seqs[b]) })
	recs, seqs := make([]events.DynamoDBEventRecord, len(idx)), make([]*big.Int, len(idx))
	for i, j := range idx {
		recs[i], seqs[i] = h.recs[j], h.seqs[j]
	}
	h.recs, h.seqs = recs, seqs
	return h, nil
}

// rewind puts every item the stream touches back as it was before its
// first record.
func (h *history) rewind(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := map[string]bool{}
	for _, r := range h.recs {
		k := itemKey(r)
		if first[k] {
			continue
		}
		first[k] = true
		if r.EventName == "INSERT" {
			if err := h.remove(ctx, r); err != nil {
				return err
			}
			continue
		}
		if err := h.put(ctx, r, r.Change.OldImage); err != nil {
			return err
		}
	}
	h.at = 0
	return nil
}

// advance moves the table to just after the record with sequence number
// seq (or further, never back).
func (h *history) advance(ctx context.Context, seq string) error {
	n, ok := new(big.Int).SetString(seq, 10)
	if !ok {
		return fmt.Errorf("replay: SourceTable: sequence number %q is not a number", seq)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.at < len(h.recs) && h.seqs[h.at].Cmp(n) <= 0 {
		r := h.recs[h.at]
		var err error
		if r.EventName == "REMOVE" {
			err = h.remove(ctx, r)
		} else {
			err = h.put(ctx, r, r.Change.NewImage)
		}
		if err != nil {
			return err
		}
		h.at++
	}
	return nil
}

// finish moves the table to the end of the stream.
func (h *history) finish(ctx context.Context) error {
	if len(h.recs) == 0 {
		return nil
	}
	return h.advance(ctx, h.recs[len(h.recs)-1].Change.SequenceNumber)
}

func (h *history) put(ctx context.Context, r events.DynamoDBEventRecord, img map[string]events.DynamoDBAttributeValue) error {
	item, err := attr.FromLambdaMap(img)
	if err != nil {
		return fmt.Errorf("replay: SourceTable: record %s: %w", r.EventID, err)
	}
	if _, err := h.src.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.src.Table), Item: item}); err != nil {
		return fmt.Errorf("replay: SourceTable: write %s as of record %s: %w", describeRecord(r), r.EventID, err)
	}
	return nil
}

func (h *history) remove(ctx context.Context, r events.DynamoDBEventRecord) error {
	key, err := attr.FromLambdaMap(r.Change.Keys)
	if err != nil {
		return fmt.Errorf("replay: SourceTable: record %s: %w", r.EventID, err)
	}
	if _, err := h.src.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(h.src.Table), Key: key}); err != nil {
		return fmt.Errorf("replay: SourceTable: delete %s as of record %s: %w", describeRecord(r), r.EventID, err)
	}
	return nil
}

// newest is the batch's highest sequence number.
func newest(batch []events.DynamoDBEventRecord) string {
	best, bestN := "", (*big.Int)(nil)
	for _, r := range batch {
		n, ok := new(big.Int).SetString(r.Change.SequenceNumber, 10)
		if ok && (bestN == nil || n.Cmp(bestN) > 0) {
			best, bestN = r.Change.SequenceNumber, n
		}
	}
	return best
}
