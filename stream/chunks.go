package stream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// an item of its own named by a hash of its content,
// "#state#<shard>#c#<hash>". The checkpoint item lists its chunks in
// order ("chunks"). A Put writes only the chunks the checkpoint it
// replaces did not have and then deletes those the new one no longer
// has: a checkpoint costs what changed, not the whole state.
const (
	chunkAbove = 64 << 10
	chunkMin   = 2 << 10
	chunkMax   = 32 << 10
	// chunkMask cuts a chunk after chunkMin where the rolling hash has
	// its 13 low bits 0: about every 8 KB past chunkMin, in text that
	// varies (a run of one byte is cut at chunkMax).
	chunkMask = 1<<13 - 1
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

func chunkKey(shardID, id string) string { return partsPrefix(shardID) + "c#" + id }

// splitHead is a value's sequence number, kept in the item, and the rest.
func splitHead(v string) (head, rest string) {
	if i := strings.IndexByte(v, '\n'); i >= 0 && i <= 1024 {
		return v[:i], v[i:]
	}
	return "", v
}

// chunkList is the chunk ids a checkpoint item names, in order.
func chunkList(item map[string]types.AttributeValue) []string {
	l, _ := item["chunks"].(*types.AttributeValueMemberL)
	if l == nil {
		return nil
	}
	ids := make([]string, 0, len(l.Value))
	for _, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			ids = append(ids, s.Value)
		}
	}
	return ids
}

// knownChunks are the chunks of shardID's checkpoint as this store last
// wrote or read it: they need not be written again.
func (c *TableCheckpoints) knownChunks(consumer, shardID string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[consumer+"\x00"+shardID]
}

func (c *TableCheckpoints) setKnown(consumer, shardID string, ids []string) {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil {
		c.known = map[string]map[string]bool{}
	}
	c.known[consumer+"\x00"+shardID] = set
}

// putChunked writes v as a head and chunks: the chunks not known to be
// there, then the item, then it deletes the chunks (and parts) of the
// item it replaced that v does not use.
func (c *TableCheckpoints) putChunked(ctx context.Context, consumer, shardID, v string) error {
	head, rest := splitHead(v)
	chunks := cutChunks(rest)
	ids := make([]string, len(chunks))
	byID := map[string]string{}
	for i, ch := range chunks {
		ids[i] = chunkID(ch)
		byID[ids[i]] = ch
	}
	known := c.knownChunks(consumer, shardID)
	var missing []string
	for id := range byID {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	if err := c.writeChunks(ctx, consumer, shardID, missing, byID); err != nil {
		return err
	}
	list := make([]types.AttributeValue, len(ids))
	for i, id := range ids {
		list[i] = &types.AttributeValueMemberS{Value: id}
	}
	item := c.key(consumer, shardID)
	item["sequenceNumber"] = &types.AttributeValueMemberS{Value: head}
	item["chunks"] = &types.AttributeValueMemberL{Value: list}
	item["updatedAt"] = &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)}
	out, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.Table), Item: item, ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return fmt.Errorf("stream: put checkpoint %s/%s: %w", consumer, shardID, err)
	}
	old := chunkList(out.Attributes)
	if !sameKnown(known, old) {
		// another writer's checkpoint came between (a runner handing its
		// lease over): it may have deleted chunks this one counted on, so
		// write them all (a chunk's content is its name: the same item)
		if err := c.writeChunks(ctx, consumer, shardID, keys(byID), byID); err != nil {
			return err
		}
	}
	c.setKnown(consumer, shardID, ids)
	var gone []string
	for _, id := range dedupe(old) {
		if _, ok := byID[id]; !ok {
			gone = append(gone, chunkKey(shardID, id))
		}
	}
	c.deleteParts(ctx, consumer, shardID, out.Attributes, gone)
	return nil
}

func sameKnown(known map[string]bool, ids []string) bool {
	n := 0
	for _, id := range ids {
		if !known[id] {
			return false
		}
		n++
	}
	return len(known) <= n
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

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// writeChunks puts the chunks ids, 25 to a BatchWriteItem, retrying what
// DynamoDB leaves unprocessed.
func (c *TableCheckpoints) writeChunks(ctx context.Context, consumer, shardID string, ids []string, byID map[string]string) error {
	for len(ids) > 0 {
		n := min(len(ids), 25)
		reqs := make([]types.WriteRequest, n)
		for i, id := range ids[:n] {
			it := c.key(consumer, chunkKey(shardID, id))
			it["data"] = &types.AttributeValueMemberB{Value: []byte(byID[id])}
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
		}
		if err := c.batchWrite(ctx, reqs); err != nil {
			return fmt.Errorf("stream: put checkpoint %s/%s (chunks): %w", consumer, shardID, err)
		}
		ids = ids[n:]
	}
	return nil
}

// batchWrite writes reqs (at most 25), again and again for what DynamoDB
// leaves unprocessed, with a growing wait.
func (c *TableCheckpoints) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	wait := 50 * time.Millisecond
	for len(reqs) > 0 {
		out, err := c.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{c.Table: reqs}})
		if err != nil {
			return err
		}
		reqs = out.UnprocessedItems[c.Table]
		if len(reqs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
	return nil
}

// getChunks reads the chunks ids (100 to a BatchGetItem) and returns them
// joined in order.
func (c *TableCheckpoints) getChunks(ctx context.Context, consumer, shardID string, ids []string) (string, error) {
	data := map[string][]byte{}
	var want []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			want = append(want, c.key(consumer, chunkKey(shardID, id)))
		}
	}
	wait := 50 * time.Millisecond
	for len(want) > 0 {
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
				data[strings.TrimPrefix(k.Value, chunkKey(shardID, ""))] = d.Value
			}
		}
		want = append(want[n:], out.UnprocessedKeys[c.Table].Keys...)
		if len(out.UnprocessedKeys[c.Table].Keys) > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
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
