package idempotency

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// Guard keeps one record per key in a table: in progress while a claim
// holds it, completed once the effect is done. It is modelled on AWS
// Lambda Powertools' idempotency utility (status INPROGRESS or COMPLETED,
// an in-progress expiry tied to the invocation's remaining time, the
// result) but its attribute names are its own (status, holdUntil in epoch
// milliseconds, claim, result, and TTLAttribute), so its records are not
// Powertools' and the two do not share a table's records. This project's
// notifier keeps its e-mails' records with it.
type Guard struct {
	DB    API
	Table string
	// PartitionKey and SortKey name the table's key attributes (default
	// "PK" and "SK"; SortKey "-" for a table without a sort key). A
	// record's partition key is Prefix+key, its sort key "IDEMPOTENCY".
	PartitionKey, SortKey string
	// Prefix starts every record's partition key (default "IDEMPOTENCY#").
	Prefix string
	// Expiry is how long a record is kept (default 48h: twice the stream's
	// retention), written as epoch seconds in TTLAttribute (default "ttl";
	// turn TTL on for it, or records stay).
	Expiry       time.Duration
	TTLAttribute string
	// Hold is how long a claim is exclusive while its effect runs; after
	// it, another attempt may take over. Zero: until the context's
	// deadline (a Lambda invocation's), as Powertools holds it for the
	// remaining time — a claimant that ran out of time has stopped, one
	// with time left is not overtaken — or 30s without a deadline.
	Hold time.Duration
	// ItemType, when set, is written as the record's itemType.
	ItemType string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Key is a stream record's idempotency key: its eventID, the same on every
// delivery of the record and different for every other record.
func Key(r events.DynamoDBEventRecord) string { return r.EventID }

// ErrInProgress is Do's answer while another attempt holds the key's claim:
// the effect may be running; report the record failed and retry later.
var ErrInProgress = errors.New("idempotency: another attempt holds this key")

// State is what Begin found for a key.
type State int

// The states Begin reports.
const (
	// Started: the caller holds the key and must do the work, then End (or
	// Abort when it failed).
	Started State = iota + 1
	// Done: the work was done before; skip it.
	Done
	// Busy: another attempt holds the key and its hold has not ended; try
	// again later.
	Busy
)

const (
	sortValue  = "IDEMPOTENCY"
	inProgress = "INPROGRESS"
	completed  = "COMPLETED"
)

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

// markerPrefix keeps Marker's records apart from Begin's and Do's: the two
// uses of one key are two effects (a handler's writes and, say, its
// e-mail), and one must not say the other is done.
const markerPrefix = "MARKER#"

func (g Guard) item(k, status string, now time.Time) map[string]types.AttributeValue {
	it := g.key(k)
	it["status"] = &types.AttributeValueMemberS{Value: status}
	it["derived"] = &types.AttributeValueMemberBOOL{Value: true}
	if g.ItemType != "" {
		it["itemType"] = &types.AttributeValueMemberS{Value: g.ItemType}
	}
	it[g.TTLAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(g.Expiry).Unix(), 10)}
	return it
}

// Marker returns a write that records key as done, to add to the
// TransactWriteItems of the handler's own writes: conditioned on no record
// being there, it cancels the whole transaction on a repeat (IsDuplicate).
func (g Guard) Marker(key string) types.TransactWriteItem {
	g = g.defaults()
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(g.Table),
		Item:                     g.item(markerPrefix+key, completed, g.Now()),
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": g.PartitionKey},
	}}
}

// MarkerIn is Marker for a record kept beside the items it guards: in the
// partition partition (the items' own, say a counter's), with the sort key
// Prefix+key, so that one read of that partition (a Query, a
// BatchGetItem with MarkerKeyIn) finds the item and its markers together.
// The table must have a sort key (SortKey not "-"). Its record is Marker's
// (completed, derived, ItemType, a ttl of Now()+Expiry), and IsDuplicate
// tells a repeat the same way.
func (g Guard) MarkerIn(partition, key string) types.TransactWriteItem {
	g = g.defaults()
	it := g.item(markerPrefix+key, completed, g.Now())
	for k, v := range g.MarkerKeyIn(partition, key) {
		it[k] = v
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(g.Table),
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": g.PartitionKey},
	}}
}

// MarkerKeyIn is the key of MarkerIn's record: to read it, or to tell it
// apart from the partition's other items (its sort key starts with
// Prefix).
func (g Guard) MarkerKeyIn(partition, key string) map[string]types.AttributeValue {
	g = g.defaults()
	return map[string]types.AttributeValue{
		g.PartitionKey: &types.AttributeValueMemberS{Value: partition},
		g.SortKey:      &types.AttributeValueMemberS{Value: g.Prefix + key},
	}
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

// Done reports whether key's effect is done (Do, or Begin and End).
func (g Guard) Done(ctx context.Context, key string) (bool, error) {
	return g.completed(ctx, key)
}

// Marked reports whether a Marker for key was written (its transaction
// committed).
func (g Guard) Marked(ctx context.Context, key string) (bool, error) {
	return g.completed(ctx, markerPrefix+key)
}

func (g Guard) completed(ctx context.Context, key string) (bool, error) {
	g = g.defaults()
	out, err := g.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(g.Table), Key: g.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("idempotency: read %s: %w", key, err)
	}
	s, _ := out.Item["status"].(*types.AttributeValueMemberS)
	return s != nil && s.Value == completed, nil
}

// Begin claims key: Started when there was no record, or only a claim
// whose hold has ended (its holder crashed); Done when the work is
// complete; Busy, with the time the holder's hold ends, while another
// attempt holds it. A claim whose answer was lost and which the SDK sent
// again is recognised as the caller's own (a token in the claim).
func (g Guard) Begin(ctx context.Context, key string) (State, time.Time, error) {
	fixed := g.Hold > 0
	g = g.defaults()
	now := g.Now()
	item := g.item(key, inProgress, now)
	token := strconv.FormatUint(rand.Uint64(), 36)
	item["claim"] = &types.AttributeValueMemberS{Value: token}
	until := now.Add(g.Hold)
	if d, ok := ctx.Deadline(); ok && !fixed && d.After(now) {
		until = d
	}
	item["holdUntil"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(until.UnixMilli(), 10)}
	_, err := g.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(g.Table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR (#status = :inprogress AND holdUntil < :now)"),
		ExpressionAttributeNames: map[string]string{"#pk": g.PartitionKey, "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": &types.AttributeValueMemberS{Value: inProgress},
			":now":        &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		if st, ok := cf.Item["status"].(*types.AttributeValueMemberS); ok && st.Value == completed {
			return Done, time.Time{}, nil
		}
		if c, ok := cf.Item["claim"].(*types.AttributeValueMemberS); ok && c.Value == token {
			return Started, time.Time{}, nil
		}
		until := now.Add(g.Hold)
		if h, ok := cf.Item["holdUntil"].(*types.AttributeValueMemberN); ok {
			if ms, err := strconv.ParseInt(h.Value, 10, 64); err == nil {
				until = time.UnixMilli(ms)
			}
		}
		return Busy, until, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("idempotency: begin %s: %w", key, err)
	}
	return Started, time.Time{}, nil
}

// End marks key's work done, recording its result.
func (g Guard) End(ctx context.Context, key, result string) error {
	g = g.defaults()
	_, err := g.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(g.Table), Key: g.key(key),
		UpdateExpression:         aws.String("SET #status = :done, #result = :r REMOVE holdUntil, claim"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#result": "result"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":done": &types.AttributeValueMemberS{Value: completed}, ":r": &types.AttributeValueMemberS{Value: result},
		},
	})
	if err != nil {
		return fmt.Errorf("idempotency: end %s: %w", key, err)
	}
	return nil
}

// Abort releases a key whose work failed, so that a retry does it.
func (g Guard) Abort(ctx context.Context, key string) error {
	g = g.defaults()
	_, err := g.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(g.Table), Key: g.key(key),
		ConditionExpression:       aws.String("#status = :inprogress"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":inprogress": &types.AttributeValueMemberS{Value: inProgress}},
	})
	var cf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cf) {
		return fmt.Errorf("idempotency: abort %s: %w", key, err)
	}
	return nil
}

// Do runs effect once for key, however often it is called: Begin, the
// effect, End. Called again after that, it returns nil without running
// effect; while another attempt holds the claim, ErrInProgress. When effect
// fails, the claim is released (Abort) and its error returned, so a retry
// runs it again.
func (g Guard) Do(ctx context.Context, key string, effect func(ctx context.Context) error) error {
	st, _, err := g.Begin(ctx, key)
	switch {
	case err != nil:
		return err
	case st == Done:
		return nil
	case st == Busy:
		return fmt.Errorf("%w (%s)", ErrInProgress, key)
	}
	if err := effect(ctx); err != nil {
		return errors.Join(err, g.Abort(context.WithoutCancel(ctx), key))
	}
	if err := g.End(context.WithoutCancel(ctx), key, ""); err != nil {
		return fmt.Errorf("idempotency: the effect of %s ran but could not be marked done (a retry after the hold runs it again): %w", key, err)
	}
	return nil
}
