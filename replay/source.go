package replay

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	src   SourceTable
	mu    sync.Mutex
	steps []step // core records, each once, by sequence number
	at    int    // steps[:at] are applied
	// seqOf is each record's sequence number in the stream captured, by
	// eventID: a Kinesis schedule's records carry numbers of their own
	seqOf map[string]string
}

// step is one record of the history and its sequence number as a number.
type step struct {
	rec events.DynamoDBEventRecord
	seq *big.Int
}

func newHistory(src SourceTable, ev events.DynamoDBEvent) (*history, error) {
	if src.Skip == nil {
		src.Skip = stream.SkipDerived
	}
	h := &history{src: src, seqOf: map[string]string{}}
	seen := map[string]bool{}
	for _, r := range ev.Records {
		h.seqOf[r.EventID] = r.Change.SequenceNumber
	}
	for _, r := range ev.Records {
		if src.Skip(r) || seen[r.Change.SequenceNumber] {
			continue
		}
		seen[r.Change.SequenceNumber] = true
		n, ok := new(big.Int).SetString(r.Change.SequenceNumber, 10)
		if !ok {
			return nil, fmt.Errorf("replay: SourceTable: record %s: sequence number %q is not a number", r.EventID, r.Change.SequenceNumber)
		}
		kind, err := stream.KindOf(r) // DynamoDB Local's TTL deletions have their own event name
		if err != nil {
			return nil, fmt.Errorf("replay: SourceTable: %w", err)
		}
		if !removal(kind) && len(r.Change.NewImage) == 0 {
			return nil, fmt.Errorf("replay: SourceTable: record %s has no new image: the stream must have NEW_AND_OLD_IMAGES", r.EventID)
		}
		if kind != stream.Insert && len(r.Change.OldImage) == 0 {
			return nil, fmt.Errorf("replay: SourceTable: record %s has no old image: the stream must have NEW_AND_OLD_IMAGES", r.EventID)
		}
		h.steps = append(h.steps, step{r, n})
	}
	slices.SortStableFunc(h.steps, func(a, b step) int { return a.seq.Cmp(b.seq) })
	return h, nil
}

// rewind puts every item the stream touches back as it was before its
// first record.
func (h *history) rewind(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	states := map[string]state{}
	var order []string
	for _, st := range h.steps {
		r := st.rec
		k := itemKey(r)
		if _, ok := states[k]; ok {
			continue
		}
		order = append(order, k)
		if kind, _ := stream.KindOf(r); kind == stream.Insert { // it did not exist
			states[k] = state{rec: r}
		} else {
			states[k] = state{rec: r, image: r.Change.OldImage}
		}
	}
	h.at = 0
	return h.write(ctx, states, order)
}

// advance moves the table to just after the record with sequence number
// seq (or further, never back): each item the records up to there touch is
// written once, as the last of them left it.
func (h *history) advance(ctx context.Context, seq string) error {
	n, ok := new(big.Int).SetString(seq, 10)
	if !ok {
		return fmt.Errorf("replay: SourceTable: sequence number %q is not a number", seq)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	states := map[string]state{}
	var order []string
	for ; h.at < len(h.steps) && h.steps[h.at].seq.Cmp(n) <= 0; h.at++ {
		r := h.steps[h.at].rec
		k := itemKey(r)
		if _, ok := states[k]; !ok {
			order = append(order, k)
		}
		if kind, _ := stream.KindOf(r); removal(kind) {
			states[k] = state{rec: r}
		} else {
			states[k] = state{rec: r, image: r.Change.NewImage}
		}
	}
	return h.write(ctx, states, order)
}

// finish moves the table to the end of the stream.
func (h *history) finish(ctx context.Context) error {
	if len(h.steps) == 0 {
		return nil
	}
	return h.advance(ctx, h.steps[len(h.steps)-1].rec.Change.SequenceNumber)
}

// state is an item as a record left it: its image, or gone (nil).
type state struct {
	rec   events.DynamoDBEventRecord
	image map[string]events.DynamoDBAttributeValue
}

// write puts the items in their states, shared BatchWriteItem calls for
// all of them (one state per item, so no call holds a key twice).
func (h *history) write(ctx context.Context, states map[string]state, order []string) error {
	reqs := make([]types.WriteRequest, 0, len(order))
	for _, k := range order {
		st := states[k]
		if st.image == nil {
			key, err := attr.FromLambdaMap(st.rec.Change.Keys)
			if err != nil {
				return fmt.Errorf("replay: SourceTable: record %s: %w", st.rec.EventID, err)
			}
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
			continue
		}
		item, err := attr.FromLambdaMap(st.image)
		if err != nil {
			return fmt.Errorf("replay: SourceTable: record %s: %w", st.rec.EventID, err)
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	if err := batchWrite(ctx, h.src.DB, h.src.Table, reqs); err != nil {
		return fmt.Errorf("replay: SourceTable: %w", err)
	}
	return nil
}

// batchWrite writes reqs in BatchWriteItem calls of 25, again with what
// DynamoDB leaves unprocessed.
func batchWrite(ctx context.Context, db *dynamodb.Client, table string, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		n := min(25, len(reqs))
		out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs[:n]}})
		if err != nil {
			return fmt.Errorf("write %s: %w", table, err)
		}
		reqs = append(reqs[n:], out.UnprocessedItems[table]...)
	}
	return nil
}

// newest is the batch's highest sequence number; under a Kinesis
// schedule (kinesis), whose records carry numbers of their own, each
// record's number in the stream captured, found by its eventID.
func (h *history) newest(batch []events.DynamoDBEventRecord, kinesis bool) string {
	best, bestN := "", (*big.Int)(nil)
	for _, r := range batch {
		seq, ok := h.seqOf[r.EventID]
		if !kinesis || !ok { // the record's own (under Kinesis: one Follow brought)
			seq = r.Change.SequenceNumber
		}
		n, ok := new(big.Int).SetString(seq, 10)
		if ok && (bestN == nil || n.Cmp(bestN) > 0) {
			best, bestN = seq, n
		}
	}
	return best
}

// removal says whether a record's kind deletes its item (a user's delete or
// a TTL deletion).
func removal(k stream.Kind) bool { return k == stream.Remove || k == stream.TTLRemove }
