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

// Guard keeps one record per key in a table: in progress while a claim
// holds it, completed once the effect is done. It is modelled on AWS
// Lambda Powertools' idempotency utility (status INPROGRESS or COMPLETED,
// an in-progress expiry tied to the invocation's remaining time, the
// result, a hash of the payload) but its attribute names are its own
// (status, holdUntil in epoch milliseconds, claim, result, payloadHash,
// and TTLAttribute), so its records are not
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
	// turn TTL on for it, or records stay). It is counted from Now, but a
	// record never expires less than Expiry/2 after the real time
	// (time.Now): a clock fixed in the past cannot write a record that TTL
	// deletes at once, after which a repeat would be applied again.
	Expiry       time.Duration
	TTLAttribute string
	// Hold is how long a claim is exclusive while its effect runs; after
	// it, another attempt may take over. Zero: until the context's
	// deadline (a Lambda invocation's), as Powertools holds it for the
	// remaining time — a claimant that ran out of time has stopped, one
	// with time left is not overtaken — or 30s without a deadline. The hold
	// is counted from before the claim is sent, and another attempt takes
	// it over only once it is past by a margin for the clocks of two
	// machines (100 ms). Do and Once end the effect's context before the
	// hold ends, by that margin and a little more (a tenth of what is left,
	// at most a second), so a holder whose effect heeds its context is done
	// before another attempt may take over, however late its claim was
	// answered. A Hold near the margin leaves the effect no time: give it
	// what the effect needs, and more.
	Hold time.Duration
	// MinRun is the least time an attempt must have left after waiting
	// out a crashed attempt's hold for the wait to be worth it (Acquire;
	// default one second): give it what the effect needs, or a wait may
	// leave the effect too little time and cut it off mid-request.
	MinRun time.Duration
	// OnWait, when set, is told before Acquire (and so Do and Once) waits
	// out another attempt's hold on key for wait: to log it, since a wait
	// of up to Hold is otherwise silent.
	OnWait func(key string, wait time.Duration)
	// ItemType, when set, is written as the record's itemType.
	ItemType string
	// Previous, when set, is a table the records were kept in before they
	// moved to Table (with the same key attributes and Prefix): a key that
	// Begin claims anew here but whose record there is completed counts as
	// done — Begin copies that record here and reports Done — so moving
	// the records never repeats an effect; a claim still held there (by an
	// attempt that began before the move and may still run) holds the key
	// here too — Begin reports Busy until its hold ends, and Acquire waits
	// it out as it waits out a claim here. Done reads it too. Previous is
	// only read, with one GetItem made while the claim is written (Begin
	// answers when the slower of the two has). Leave it empty on a new
	// table; set it only for a move, and clear it once Expiry has passed
	// since.
	Previous string
	// Now is the clock of holds and expiry (default time.Now). It must
	// advance: a claim is judged by it. To compare markers across replay
	// runs, leave it alone and compare without TTLAttribute
	// (replay.TableState.Ignore) rather than fixing it.
	Now func() time.Time
}

// Key is a stream record's idempotency key: its eventID, the same on every
// delivery of the record and different for every other record.
func Key(r events.DynamoDBEventRecord) string { return r.EventID }

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
	it[g.TTLAttribute] = g.expires(now)
	return it
}

// expires is the TTL of a record written at now: now+Expiry, but never
// less than Expiry/2 after the real time (see Guard.Expiry).
func (g Guard) expires(now time.Time) *types.AttributeValueMemberN {
	at, real := now.Add(g.Expiry), time.Now()
	if at.Before(real.Add(g.Expiry / 2)) {
		at = real.Add(g.Expiry)
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Unix(), 10)}
}

// Marker returns a write that records key as done, to add to the
// TransactWriteItems of the handler's own writes: conditioned on no record
// being there, it cancels the whole transaction on a repeat (IsDuplicate).
func (g Guard) Marker(key string) types.TransactWriteItem {
	g = g.defaults()
	return g.putNew(g.item(markerPrefix+key, completed, g.Now()))
}

// putNew writes it on the condition that no record is there.
func (g Guard) putNew(it map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(g.Table),
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": g.PartitionKey},
	}}
}

// MarkerIn is Marker for a record kept beside the items it guards: in the
// partition partition (the items' own, say a counter's), with the sort key
// Prefix+key, so that one read of that partition (a Query, a
// BatchGetItem with MarkerKeyIn) finds the item and its markers together.
// The table must have a sort key (SortKey not "-"). Its record is Marker's
// (completed, derived, ItemType, a ttl of Now()+Expiry with Expiry's
// floor), and IsDuplicate tells a repeat the same way.
func (g Guard) MarkerIn(partition, key string) types.TransactWriteItem {
	g = g.defaults()
	it := g.item(markerPrefix+key, completed, g.Now())
	for k, v := range g.MarkerKeyIn(partition, key) {
		it[k] = v
	}
	return g.putNew(it)
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

// Done reports whether key's effect is done (Do, Once, or Begin and End):
// its record is completed in Table or, with Previous set, in Previous.
func (g Guard) Done(ctx context.Context, key string) (bool, error) {
	g = g.defaults()
	done, err := g.completed(ctx, key, g.key(key))
	if err != nil || done || g.Previous == "" {
		return done, err
	}
	prev := g
	prev.Table = g.Previous
	return prev.completed(ctx, key, g.key(key))
}

// Marked reports whether a Marker for key was written (its transaction
// committed). MarkedIn reads a MarkerIn's.
func (g Guard) Marked(ctx context.Context, key string) (bool, error) {
	g = g.defaults()
	return g.completed(ctx, key, g.key(markerPrefix+key))
}

// MarkedIn reports whether a MarkerIn(partition, key) was written.
func (g Guard) MarkedIn(ctx context.Context, partition, key string) (bool, error) {
	return g.completed(ctx, key, g.MarkerKeyIn(partition, key))
}

func (g Guard) completed(ctx context.Context, key string, k map[string]types.AttributeValue) (bool, error) {
	g = g.defaults()
	out, err := g.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(g.Table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("idempotency: read %s: %w", key, err)
	}
	return textOf(out.Item["status"]) == completed, nil
}
