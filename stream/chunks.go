package stream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A checkpoint value over chunkAbove bytes (a windowed consumer's state)
// is kept in chunks: its sequence number in the item, the rest cut where
// its content says (content-defined chunking, so that a change in one
// window's state changes the chunks around it and no others), each chunk
// an item of its own named by its writer's generation and a hash of its
// content, "#state#<shard>#c#<gen>#<hash>". The checkpoint item names its
// generation ("chunkGen") and its chunks in order ("chunks"). A Put writes
// only the chunks the checkpoint it replaces did not have (nor an earlier
// try of its own that failed wrote), then the item,
// then deletes the chunks of the item it replaced that it does not name:
// a checkpoint costs what changed, not the whole state.
//
// Two writers of one shard (a runner handing its lease over) must never
// leave an item that names a deleted chunk. Every item carries a "rev",
// and a store puts the item only if the rev is the one it last wrote or
// read: when another writer came between (the condition fails), it takes
// a new generation and writes every chunk again before it puts. A writer
// deletes only chunks of the item its put replaced, which no current
// item names, and whose writer, if it writes again, fails its condition
// and moves to a new generation, or, having read the item that replaced
// its own (Get), writes in a new generation already: chunks keyed by
// content would otherwise have the keys of those still being deleted. A
// crash between the chunks and the item, or before the deletes, leaves
// chunks no item names: storage, nothing else.
const (
	chunkAbove = 64 << 10
	chunkMin   = 2 << 10
	chunkMax   = 32 << 10
	// chunkMask cuts a chunk after chunkMin where the rolling hash's top
	// 13 bits (which depend on the last 64 bytes) are 0: about every 8 KB
	// past chunkMin in text that varies; a run of one byte is cut at
	// chunkMax.
	chunkMask = uint64(1<<13-1) << 51
	// putAttempts bounds a Put's tries when other writers keep coming
	// between, and batchAttempts a batch's tries for what DynamoDB leaves
	// unprocessed: the caller (the checkpointer) retries with its backoff
	// and looks at its context.
	putAttempts   = 4
	batchAttempts = 8
)

// gear is the rolling hash's table: fixed (splitmix64 from 0), so that a
// value is cut at the same places by every process and version.
var gear = func() (g [256]uint64) {
	var x uint64
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		g[i] = z ^ z>>31
	}
	return g
}()

// cutChunks cuts s where its content says: after chunkMin bytes, where
// the rolling hash of the bytes before matches chunkMask, and at chunkMax
// at the latest.
func cutChunks(s string) []string {
	var out []string
	for len(s) > 0 {
		n := len(s)
		if n > chunkMin {
			var h uint64
			n = min(len(s), chunkMax)
			for i := chunkMin; i < n; i++ {
				h = h<<1 + gear[s[i]]
				if h&chunkMask == 0 {
					n = i + 1
					break
				}
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func chunkID(chunk string) string {
	sum := sha256.Sum256([]byte(chunk))
	return hex.EncodeToString(sum[:16])
}

func chunkKey(shardID, gen, id string) string { return partsPrefix(shardID) + "c#" + gen + "#" + id }

// splitHead is a value's sequence number, kept in the item, and the rest.
func splitHead(v string) (head, rest string) {
	if i := strings.IndexByte(v, '\n'); i >= 0 && i <= 1024 {
		return v[:i], v[i:]
	}
	return "", v
}

// chunksOf is the generation and chunk ids a checkpoint item names.
func chunksOf(item map[string]types.AttributeValue) (gen string, ids []string) {
	l, _ := item["chunks"].(*types.AttributeValueMemberL)
	g, _ := item["chunkGen"].(*types.AttributeValueMemberS)
	if l == nil || g == nil {
		return "", nil
	}
	ids = make([]string, 0, len(l.Value))
	for _, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			ids = append(ids, s.Value)
		}
	}
	return g.Value, ids
}

func revOf(item map[string]types.AttributeValue) string {
	r, _ := item["rev"].(*types.AttributeValueMemberS)
	if r == nil {
		return ""
	}
	return r.Value
}

// chunkState is what a store knows of a shard's checkpoint item: the rev
// it last wrote or read (seen: it has), its own generation, and the chunks
// of that generation the item names.
type chunkState struct {
	seen  bool
	rev   string
	gen   string
	known map[string]bool
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *TableCheckpoints) stateOf(consumer, shardID string) chunkState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.states[consumer+"\x00"+shardID]
	if st.gen == "" {
		st.gen = randomID()
	}
	return st
}

func (c *TableCheckpoints) setState(consumer, shardID string, st chunkState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.states == nil {
		c.states = map[string]chunkState{}
	}
	c.states[consumer+"\x00"+shardID] = st
}

// put writes the checkpoint v: its chunks if it is large, then the item
// on the condition that no other writer came between, then it deletes
// what the item it replaced used and v does not.
func (c *TableCheckpoints) put(ctx context.Context, consumer, shardID, v string) error {
	head, rest := v, ""
	if len(v) > chunkAbove {
		head, rest = splitHead(v)
	}
	var ids []string
	byID := map[string]string{}
	for _, ch := range cutChunks(rest) {
		id := chunkID(ch)
		ids = append(ids, id)
		byID[id] = ch
	}
	st := c.stateOf(consumer, shardID)
	for attempt := 1; ; attempt++ {
		var missing []string
		for id := range byID {
			if !st.known[id] {
				missing = append(missing, id)
			}
		}
		written, err := c.writeChunks(ctx, consumer, shardID, st.gen, missing, byID)
		if len(written) > 0 {
			// the chunks written are in the table whether or not the item
			// that names them follows: a Put tried again (the
			// checkpointer's next try) writes only the rest. Writing them
			// all again at each try, a partition throttled by the first
			// try's megabyte would throttle every try after it.
			st.known = withIDs(st.known, written)
		}
		if err != nil {
			c.setState(consumer, shardID, st)
			return err
		}
		rev := randomID()
		out, err := c.DB.PutItem(ctx, c.itemInput(consumer, shardID, head, rev, ids, st))
		var cond *types.ConditionalCheckFailedException
		if errors.As(err, &cond) && attempt < putAttempts {
			// another writer came between: the chunks just written are
			// named by no item (the one this store wrote before is
			// replaced, its chunks deleted by its replacer); then its rev,
			// a new generation, and every chunk written again
			c.deleteParts(ctx, consumer, shardID, nil, chunkKeys(shardID, st.gen, missing))
			cur := cond.Item // ReturnValuesOnConditionCheckFailure: the item as it is
			if cur == nil {  // none: it is gone, or the answer did not carry it
				out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.Table), Key: c.key(consumer, shardID), ConsistentRead: aws.Bool(true)})
				if err != nil {
					return fmt.Errorf("stream: put checkpoint %s/%s: %w", consumer, shardID, err)
				}
				cur = out.Item
			}
			st = chunkState{seen: true, rev: revOf(cur), gen: randomID()}
			continue
		}
		if err != nil {
			c.setState(consumer, shardID, st)
			return fmt.Errorf("stream: put checkpoint %s/%s: %w", consumer, shardID, err)
		}
		known := make(map[string]bool, len(byID))
		for id := range byID {
			known[id] = true
		}
		c.setState(consumer, shardID, chunkState{seen: true, rev: rev, gen: st.gen, known: known})
		var gone []string
		oldGen, oldIDs := chunksOf(out.Attributes)
		for _, id := range dedupe(oldIDs) {
			if oldGen != st.gen || !known[id] {
				gone = append(gone, chunkKey(shardID, oldGen, id))
			}
		}
		c.deleteParts(ctx, consumer, shardID, out.Attributes, gone)
		return nil
	}
}

// itemInput is the put of the checkpoint item: head, rev and the chunks
// ids of generation st.gen, on the condition that the item's rev is
// st.rev (none when the store has not seen the item: Bootstrap's first
// write).
func (c *TableCheckpoints) itemInput(consumer, shardID, head, rev string, ids []string, st chunkState) *dynamodb.PutItemInput {
	item := c.key(consumer, shardID)
	item["sequenceNumber"] = &types.AttributeValueMemberS{Value: head}
	item["rev"] = &types.AttributeValueMemberS{Value: rev}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	item["updatedAt"] = &types.AttributeValueMemberS{Value: now().UTC().Format(time.RFC3339Nano)}
	if len(ids) > 0 {
		list := make([]types.AttributeValue, len(ids))
		for i, id := range ids {
			list[i] = &types.AttributeValueMemberS{Value: id}
		}
		item["chunks"] = &types.AttributeValueMemberL{Value: list}
		item["chunkGen"] = &types.AttributeValueMemberS{Value: st.gen}
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(c.Table), Item: item, ReturnValues: types.ReturnValueAllOld}
	switch {
	case !st.seen:
	case st.rev == "":
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		in.ConditionExpression = aws.String("attribute_not_exists(#r)")
		in.ExpressionAttributeNames = map[string]string{"#r": "rev"}
	default:
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		in.ConditionExpression = aws.String("#r = :r")
		in.ExpressionAttributeNames = map[string]string{"#r": "rev"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: st.rev}}
	}
	return in
}

func chunkKeys(shardID, gen string, ids []string) []string {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = chunkKey(shardID, gen, id)
	}
	return keys
}

// dedupe is ids without repeats (a value can hold one chunk twice), in
// their first order.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// writeChunks puts the chunks ids, 25 to a BatchWriteItem, retrying what
// DynamoDB leaves unprocessed. It returns the ids it wrote, those of a
// batch it gave up on included.
func (c *TableCheckpoints) writeChunks(ctx context.Context, consumer, shardID, gen string, ids []string, byID map[string]string) (written []string, err error) {
	for len(ids) > 0 {
		n := min(len(ids), 25)
		reqs := make([]types.WriteRequest, n)
		for i, id := range ids[:n] {
			it := c.key(consumer, chunkKey(shardID, gen, id))
			it["data"] = &types.AttributeValueMemberB{Value: []byte(byID[id])}
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
		}
		if left, err := c.batchWrite(ctx, reqs); err != nil {
			notWritten := map[string]bool{}
			for _, r := range left {
				if r.PutRequest == nil {
					continue
				}
				if k, ok := r.PutRequest.Item["shardId"].(*types.AttributeValueMemberS); ok {
					notWritten[strings.TrimPrefix(k.Value, chunkKey(shardID, gen, ""))] = true
				}
			}
			for _, id := range ids[:n] {
				if !notWritten[id] {
					written = append(written, id)
				}
			}
			return written, fmt.Errorf("stream: put checkpoint %s/%s (chunks): %w", consumer, shardID, err)
		}
		written = append(written, ids[:n]...)
		ids = ids[n:]
	}
	return written, nil
}

// withIDs is known with ids added, in a new map (known may be a stored
// state's).
func withIDs(known map[string]bool, ids []string) map[string]bool {
	out := make(map[string]bool, len(known)+len(ids))
	for id := range known {
		out[id] = true
	}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// batchWrite writes reqs (at most 25), again for what DynamoDB leaves
// unprocessed, with a growing wait, batchAttempts times at most. When it
// fails it returns the requests it does not know to be written.
func (c *TableCheckpoints) batchWrite(ctx context.Context, reqs []types.WriteRequest) (left []types.WriteRequest, err error) {
	for attempt := 1; ; attempt++ {
		out, err := c.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{c.Table: reqs}})
		if err != nil {
			return reqs, err
		}
		reqs = out.UnprocessedItems[c.Table]
		if len(reqs) == 0 {
			return nil, nil
		}
		if attempt == batchAttempts {
			return reqs, fmt.Errorf("%d item(s) still unprocessed after %d tries", len(reqs), attempt)
		}
		if err := c.unprocessedWait(ctx, attempt); err != nil {
			return reqs, err
		}
	}
}

// unprocessedWait waits before a batch's try after its attempt-th left
// keys unprocessed: 50 ms doubled at each, at most 2 s ("If DynamoDB
// returns any unprocessed items, you should retry the batch operation on
// those items. However, we strongly recommend that you use an
// exponential backoff algorithm": DynamoDB API Reference,
// BatchWriteItem).
func (c *TableCheckpoints) unprocessedWait(ctx context.Context, attempt int) error {
	d := min(retryWait(50*time.Millisecond, attempt), 2*time.Second)
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// getChunks reads the chunks ids (100 to a BatchGetItem) and returns them
// joined in order.
func (c *TableCheckpoints) getChunks(ctx context.Context, consumer, shardID, gen string, ids []string) (string, error) {
	data := map[string][]byte{}
	var want []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			want = append(want, c.key(consumer, chunkKey(shardID, gen, id)))
		}
	}
	for attempt := 1; len(want) > 0; {
		n := min(len(want), 100)
		out, err := c.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			c.Table: {Keys: want[:n], ConsistentRead: aws.Bool(true)}}})
		if err != nil {
			return "", fmt.Errorf("stream: read checkpoint chunks %s/%s: %w", consumer, shardID, err)
		}
		for _, it := range out.Responses[c.Table] {
			k, _ := it["shardId"].(*types.AttributeValueMemberS)
			d, _ := it["data"].(*types.AttributeValueMemberB)
			if k != nil && d != nil {
				data[strings.TrimPrefix(k.Value, chunkKey(shardID, gen, ""))] = d.Value
			}
		}
		left := out.UnprocessedKeys[c.Table].Keys
		want = append(want[n:], left...)
		if len(left) > 0 {
			if attempt == batchAttempts {
				return "", fmt.Errorf("stream: read checkpoint chunks %s/%s: %d key(s) still unprocessed after %d tries", consumer, shardID, len(left), attempt)
			}
			if err := c.unprocessedWait(ctx, attempt); err != nil {
				return "", err
			}
			attempt++
		}
	}
	var b strings.Builder
	for _, id := range ids {
		d, ok := data[id]
		if !ok {
			return "", fmt.Errorf("stream: checkpoint %s/%s: chunk %s of its %d not found", consumer, shardID, id, len(ids))
		}
		b.Write(d)
	}
	return b.String(), nil
}
