package stream

import (
	"context"
	"errors"
	"fmt"
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

// Get implements Checkpoints.
func (c *TableCheckpoints) Get(ctx context.Context, consumer, shardID string) (string, error) {
	out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.Table), Key: c.key(consumer, shardID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("stream: get checkpoint %s/%s: %w", consumer, shardID, err)
	}
	if s, ok := out.Item["sequenceNumber"].(*types.AttributeValueMemberS); ok {
		return s.Value, nil
	}
	return "", nil
}

// Put implements Checkpoints.
func (c *TableCheckpoints) Put(ctx context.Context, consumer, shardID, seq string) error {
	item := c.key(consumer, shardID)
	item["sequenceNumber"] = &types.AttributeValueMemberS{Value: seq}
	item["updatedAt"] = &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)}
	if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.Table), Item: item}); err != nil {
		return fmt.Errorf("stream: put checkpoint %s/%s: %w", consumer, shardID, err)
	}
	return nil
}
