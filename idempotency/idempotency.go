package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client a Guard uses.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Guard keeps one marker item per key in a table.
type Guard struct {
	DB    API
	Table string
	// PartitionKey and SortKey name the table's key attributes (default
	// "PK" and "SK"; SortKey "-" for a table without a sort key). A
	// marker's partition key is Prefix+key, its sort key "IDEMPOTENCY".
	PartitionKey, SortKey string
	// Prefix starts every marker's partition key (default "IDEMPOTENCY#").
	Prefix string
	// Expiry is how long a marker is kept (default 48h: twice the stream's
	// retention), written as epoch seconds in TTLAttribute (default "ttl";
	// turn TTL on for it, or markers stay).
	Expiry       time.Duration
	TTLAttribute string
	// Hold is how long a claim by Do is exclusive while its effect runs
	// (default 30s); after it, another attempt may take over.
	Hold time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Key is a stream record's idempotency key: its eventID, the same on every
// delivery of the record and different for every other record.
func Key(r events.DynamoDBEventRecord) string { return r.EventID }

// ErrInProgress is Do's answer while another attempt holds the key's claim:
// the effect may be running; report the record failed and retry later.
var ErrInProgress = errors.New("idempotency: another attempt holds this key")

const sortValue = "IDEMPOTENCY"

func (g Guard) defaults() Guard {
	if g.PartitionKey == "" {
		g.PartitionKey = "PK"
	}
	if g.SortKey == "" {
		g.SortKey = "SK"
	}
	if g.Prefix == "" {
		g.Prefix = "IDEMPOTENCY#"
	}
	if g.Expiry <= 0 {
		g.Expiry = 48 * time.Hour
	}
	if g.TTLAttribute == "" {
		g.TTLAttribute = "ttl"
	}
	if g.Hold <= 0 {
		g.Hold = 30 * time.Second
	}
	if g.Now == nil {
		g.Now = time.Now
	}
	return g
}

func (g Guard) key(k string) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{g.PartitionKey: &types.AttributeValueMemberS{Value: g.Prefix + k}}
	if g.SortKey != "-" {
		m[g.SortKey] = &types.AttributeValueMemberS{Value: sortValue}
	}
	return m
}

func (g Guard) item(k, state string, now time.Time) map[string]types.AttributeValue {
	it := g.key(k)
	it["state"] = &types.AttributeValueMemberS{Value: state}
	it["derived"] = &types.AttributeValueMemberBOOL{Value: true}
	it["at"] = &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)}
	it[g.TTLAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(g.Expiry).Unix(), 10)}
	return it
}

// Marker returns a write that records key as done, to add to the
// TransactWriteItems of the handler's own writes: conditioned on no marker
// being there, it cancels the whole transaction on a repeat (IsDuplicate).
func (g Guard) Marker(key string) types.TransactWriteItem {
	g = g.defaults()
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(g.Table),
		Item:                     g.item(key, "done", g.Now()),
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": g.PartitionKey},
	}}
}

// IsDuplicate reports whether err is a transaction cancelled because the
// Marker at index i of its items was already there: the record was handled
// before, and its writes are in place.
func IsDuplicate(err error, i int) bool {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) || i < 0 || i >= len(tc.CancellationReasons) {
		return false
	}
	return aws.ToString(tc.CancellationReasons[i].Code) == "ConditionalCheckFailed"
}

// Done reports whether key's effect is marked done.
func (g Guard) Done(ctx context.Context, key string) (bool, error) {
	g = g.defaults()
	out, err := g.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(g.Table), Key: g.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("idempotency: read %s: %w", key, err)
	}
	s, _ := out.Item["state"].(*types.AttributeValueMemberS)
	return s != nil && s.Value == "done", nil
}

// Do runs effect once for key, however often it is called: it claims the
// key (no marker, or a claim older than Hold), runs effect, and marks the
// key done. Called again after that, it returns nil without running
// effect; while another attempt holds the claim, ErrInProgress. When effect
// fails, the claim is released and its error returned, so a retry runs it
// again.
func (g Guard) Do(ctx context.Context, key string, effect func(ctx context.Context) error) error {
	g = g.defaults()
	now := g.Now()
	claim := g.item(key, "claimed", now)
	claim["holdUntil"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(g.Hold).UnixMilli(), 10)}
	_, err := g.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(g.Table),
		Item:                                claim,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR (#state = :claimed AND #hold < :now)"),
		ExpressionAttributeNames:            map[string]string{"#pk": g.PartitionKey, "#state": "state", "#hold": "holdUntil"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":claimed": &types.AttributeValueMemberS{Value: "claimed"}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return fmt.Errorf("idempotency: claim %s: %w", key, err)
		}
		if s, _ := ccf.Item["state"].(*types.AttributeValueMemberS); s != nil && s.Value == "done" {
			return nil
		}
		return fmt.Errorf("%w (%s)", ErrInProgress, key)
	}
	at := claim["at"]
	if err := effect(ctx); err != nil {
		// release our own claim only (not one another attempt took after our hold)
		_, derr := g.DB.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{
			TableName: aws.String(g.Table), Key: g.key(key),
			ConditionExpression:       aws.String("#state = :claimed AND #at = :at"),
			ExpressionAttributeNames:  map[string]string{"#state": "state", "#at": "at"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":claimed": &types.AttributeValueMemberS{Value: "claimed"}, ":at": at},
		})
		var ccf *types.ConditionalCheckFailedException
		if derr != nil && !errors.As(derr, &ccf) {
			return errors.Join(err, fmt.Errorf("idempotency: release %s: %w", key, derr))
		}
		return err
	}
	_, err = g.DB.UpdateItem(context.WithoutCancel(ctx), &dynamodb.UpdateItemInput{
		TableName: aws.String(g.Table), Key: g.key(key),
		UpdateExpression:          aws.String("SET #state = :done REMOVE #hold"),
		ExpressionAttributeNames:  map[string]string{"#state": "state", "#hold": "holdUntil"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":done": &types.AttributeValueMemberS{Value: "done"}},
	})
	if err != nil {
		return fmt.Errorf("idempotency: the effect of %s ran but could not be marked done (a retry after the hold runs it again): %w", key, err)
	}
	return nil
}
