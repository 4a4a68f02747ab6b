package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Checkpoints remembers, per consumer and shard, the sequence number of the
// last record a consumer finished (handled or dead-lettered).
type Checkpoints interface {
	// Get returns the checkpoint, or "" when there is none.
	Get(ctx context.Context, consumer, shardID string) (string, error)
	Put(ctx context.Context, consumer, shardID, sequenceNumber string) error
}

// MemoryCheckpoints keeps checkpoints in memory: for tests and one-off runs.
type MemoryCheckpoints struct {
	mu     sync.Mutex
	m      map[string]string
	leases map[string]Lease
}

// Get implements Checkpoints.
func (c *MemoryCheckpoints) Get(_ context.Context, consumer, shardID string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[consumer+"\x00"+shardID], nil
}

// Put implements Checkpoints.
func (c *MemoryCheckpoints) Put(_ context.Context, consumer, shardID, seq string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[consumer+"\x00"+shardID] = seq
	return nil
}

// TableCheckpoints keeps checkpoints in a DynamoDB table of their own (never
// the streamed table, whose stream would otherwise carry every checkpoint):
// key consumer (hash) + shardId (range).
type TableCheckpoints struct {
	DB    *dynamodb.Client
	Table string
	// Now is the clock of the items' updatedAt (default time.Now), and
	// Sleep waits before a batch is tried again for what DynamoDB left
	// unprocessed, returning early with the context's error (default: a
	// timer), as Fanout's.
	Now   func() time.Time
	Sleep func(context.Context, time.Duration) error

	mu     sync.Mutex
	states map[string]chunkState // by consumer and shard: what it knows of the checkpoint item (chunks.go)
}

// CreateTable creates the checkpoint table if it is missing and waits for it.
func (c *TableCheckpoints) CreateTable(ctx context.Context) error {
	_, err := c.DB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(c.Table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("consumer"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("shardId"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("consumer"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("shardId"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("stream: create checkpoint table %s: %w", c.Table, err)
	}
	w := dynamodb.NewTableExistsWaiter(c.DB, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.Table)}, time.Minute); err != nil {
		return fmt.Errorf("stream: wait for checkpoint table %s: %w", c.Table, err)
	}
	return nil
}

func (c *TableCheckpoints) key(consumer, shardID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"consumer": &types.AttributeValueMemberS{Value: consumer},
		"shardId":  &types.AttributeValueMemberS{Value: shardID},
	}
}

// A checkpoint written before chunks (chunks.go) that was longer than one
// item keeps is in parts: the item kept its first 300 KB, "parts" and
// "partsVersion", and the rest was in items of their own whose sort key no
// shard id looks like: "#state#<shard>#<version>#<n>". Get still reads
// it; the next Put replaces it and deletes its parts.
func partsPrefix(shardID string) string { return "#state#" + shardID + "#" }

// Get implements Checkpoints.
func (c *TableCheckpoints) Get(ctx context.Context, consumer, shardID string) (string, error) {
	out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.Table), Key: c.key(consumer, shardID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("stream: get checkpoint %s/%s: %w", consumer, shardID, err)
	}
	if st := c.stateOf(consumer, shardID); !st.seen || st.rev != revOf(out.Item) || st.rev == "" {
		// not the item this store last wrote: its chunks are not ours, and
		// the writer that replaced ours may still be deleting ours: a
		// generation of our own, so that no chunk we write next has the
		// key of one it deletes
		c.setState(consumer, shardID, chunkState{seen: true, rev: revOf(out.Item), gen: randomID()})
	}
	head, _ := out.Item["sequenceNumber"].(*types.AttributeValueMemberS)
	if head == nil {
		return "", nil
	}
	if gen, ids := chunksOf(out.Item); len(ids) > 0 {
		rest, err := c.getChunks(ctx, consumer, shardID, gen, ids)
		if err != nil {
			return "", err
		}
		return head.Value + rest, nil
	}
	n, version := partsOf(out.Item)
	if n == 0 {
		return head.Value, nil
	}
	parts, err := c.parts(ctx, consumer, partsPrefix(shardID)+version+"#")
	if err != nil {
		return "", err
	}
	if len(parts) != n {
		return "", fmt.Errorf("stream: checkpoint %s/%s: %d of its %d parts found", consumer, shardID, len(parts), n)
	}
	var b strings.Builder
	b.WriteString(head.Value)
	for _, p := range parts {
		b.Write(p.data)
	}
	return b.String(), nil
}

func partsOf(item map[string]types.AttributeValue) (int, string) {
	n, _ := item["parts"].(*types.AttributeValueMemberN)
	v, _ := item["partsVersion"].(*types.AttributeValueMemberS)
	if n == nil || v == nil {
		return 0, ""
	}
	k, _ := strconv.Atoi(n.Value)
	return k, v.Value
}

type checkpointPart struct {
	key  string
	data []byte
}

// parts reads the part items whose sort key begins with prefix, in order.
func (c *TableCheckpoints) parts(ctx context.Context, consumer, prefix string) ([]checkpointPart, error) {
	var out []checkpointPart
	p := dynamodb.NewQueryPaginator(c.DB, &dynamodb.QueryInput{
		TableName:                aws.String(c.Table),
		KeyConditionExpression:   aws.String("#c = :c AND begins_with(#s, :p)"),
		ExpressionAttributeNames: map[string]string{"#c": "consumer", "#s": "shardId"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberS{Value: consumer}, ":p": &types.AttributeValueMemberS{Value: prefix}},
		ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("stream: read checkpoint parts %s/%s: %w", consumer, prefix, err)
		}
		for _, it := range page.Items {
			k, _ := it["shardId"].(*types.AttributeValueMemberS)
			d, _ := it["data"].(*types.AttributeValueMemberB)
			if k != nil && d != nil {
				out = append(out, checkpointPart{key: k.Value, data: d.Value})
			}
		}
	}
	return out, nil
}

// Put implements Checkpoints (a large value in chunks: chunks.go).
func (c *TableCheckpoints) Put(ctx context.Context, consumer, shardID, seq string) error {
	return c.put(ctx, consumer, shardID, seq)
}

// deleteParts deletes what the checkpoint item old used and the one that
// replaced it does not: its parts (written before chunks) and the chunk
// items gone. Only those: another writer's chunks or parts (a runner
// handing its lease over) may be the ones the item names now. Best
// effort: an item left behind costs its storage, nothing else.
func (c *TableCheckpoints) deleteParts(ctx context.Context, consumer, shardID string, old map[string]types.AttributeValue, gone []string) {
	n, version := partsOf(old)
	for i := range n {
		gone = append(gone, fmt.Sprintf("%s%s#%05d", partsPrefix(shardID), version, i))
	}
	for len(gone) > 0 {
		k := min(len(gone), 25)
		reqs := make([]types.WriteRequest, k)
		for i, sk := range gone[:k] {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: c.key(consumer, sk)}}
		}
		_, _ = c.batchWrite(ctx, reqs)
		gone = gone[k:]
	}
}
