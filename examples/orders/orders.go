package orders

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/idempotency"
	"github.com/dynastream/dynastream/stream"
)

// The table: an order is PK "CUSTOMER#<id>", SK "ORDER#<id>", with its
// amount in cents (a number); a customer's totals are PK "CUSTOMER#<id>",
// SK "TOTALS", with orders and cents, marked derived = true (the loop
// guard: the projection writes into the table it reads).
const (
	TotalsSK    = "TOTALS"
	orderPrefix = "ORDER#"
)

// Totals is the correct projection. For each order record it adds the
// change the record makes to the customer's totals — an insert adds the
// order, a modification the difference between the new and the old amount
// (both images are in the record), a removal takes the order away — in one
// transaction with an idempotency marker for the record's eventID, so a
// record delivered again changes nothing. The increments commute, so the
// order of different customers' records does not matter either.
type Totals struct {
	DB    *dynamodb.Client
	Table string
	// Guard keeps the markers (in the same table by default).
	Guard idempotency.Guard
}

// Filter is the event source mapping's filter: the loop guard (the
// projection's own totals and markers carry derived = true). template.yaml
// writes these patterns; the runner, the Lambda entry and the replay tests
// apply this value.
var Filter = stream.LoopGuard("PK")

// Handler is Totals as a stream.Handler: records of one customer in order,
// customers concurrently (stream.Keyed), a record that fails stops its
// customer there and is reported in BatchItemFailures with its reason
// noted for the dead letter; the projection's own writes are skipped.
func (p *Totals) Handler() stream.Handler {
	if p.Guard.DB == nil { // the markers go into the orders' table
		p.Guard.DB, p.Guard.Table = p.DB, p.Table
	}
	return stream.Skip(stream.SkipDerived, stream.Keyed{Consumer: "orders-totals"}.Handler(stream.Each(p.apply)))
}

// ErrBadOrder is a record this projection cannot read (a poison record):
// retrying does not help; after the event source mapping's retries it is
// dead-lettered.
var ErrBadOrder = errors.New("orders: bad order")

func (p *Totals) apply(ctx context.Context, r events.DynamoDBEventRecord) error {
	d, ok, err := changeOf(r)
	if err != nil || !ok {
		return err
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: totalsUpdate(p.Table, d)},
		p.Guard.Marker(idempotency.Key(r)),
	}}
	_, err = p.DB.TransactWriteItems(ctx, in)
	for attempt := 1; onlyBusy(err) && attempt < maxBusyAttempts; attempt++ {
		// cancelled for a hot customer's throughput or another transaction
		// on the same item: nothing was written, and the same request may
		// go through in a moment (the SDK retries ThrottlingException, not
		// a transaction cancelled for it)
		select {
		case <-ctx.Done():
			return fmt.Errorf("orders: apply %s: %w", r.EventID, ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(25*time.Millisecond) << attempt))):
		}
		_, err = p.DB.TransactWriteItems(ctx, in)
	}
	if idempotency.IsDuplicate(err, 1) {
		return nil // delivered before: its change is in the totals
	}
	if err != nil {
		return fmt.Errorf("orders: apply %s: %w", r.EventID, err)
	}
	return nil
}

// maxBusyAttempts bounds apply's attempts of a transaction cancelled for
// throughput or a conflict; past them the record fails, and the event
// source mapping retries it.
const maxBusyAttempts = 8

// onlyBusy reports whether a transaction was cancelled only because its
// items were busy: a conflict with another transaction under way
// (TransactionConflict) or their partition's throughput (ThrottlingError on
// an on-demand table, ProvisionedThroughputExceeded on a provisioned one),
// nothing written ("Cancellation reasons", API_TransactWriteItems; "Transaction
// conflict handling in DynamoDB"). A condition that failed is not busy.
func onlyBusy(err error) bool {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return false
	}
	busy := false
	for _, r := range tc.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			busy = true
		default:
			return false
		}
	}
	return busy
}

// NaiveTotals is the projection everyone writes first: on each new order,
// ADD 1 to the count and the amount to the sum. A record delivered twice
// counts twice; modifications and removals are not even seen. The replay
// kit catches it (see the tests).
type NaiveTotals struct {
	DB    *dynamodb.Client
	Table string
}

// Handler is NaiveTotals as a stream.Handler.
func (p *NaiveTotals) Handler() stream.Handler {
	return stream.Skip(stream.SkipDerived, stream.Keyed{Consumer: "orders-naive"}.Handler(stream.Each(func(ctx context.Context, r events.DynamoDBEventRecord) error {
		d, ok, err := changeOf(r)
		if kind, _ := stream.KindOf(r); err != nil || !ok || kind != stream.Insert {
			return err
		}
		_, err = p.DB.UpdateItem(ctx, totalsUpdateItem(p.Table, d))
		return err
	})))
}

// delta is what a record changes in a customer's totals.
type delta struct {
	customerPK string
	orders     int64
	cents      *big.Int
}

// changeOf reads an order record; ok is false for records that are not
// orders.
func changeOf(r events.DynamoDBEventRecord) (delta, bool, error) {
	pk, sk := r.Change.Keys["PK"], r.Change.Keys["SK"]
	if pk.DataType() != events.DataTypeString || sk.DataType() != events.DataTypeString || !strings.HasPrefix(sk.String(), orderPrefix) {
		return delta{}, false, nil
	}
	d := delta{customerPK: pk.String(), cents: new(big.Int)}
	amount := func(img map[string]events.DynamoDBAttributeValue) (*big.Int, error) {
		v, ok := img["amount"]
		if !ok || v.DataType() != events.DataTypeNumber {
			return nil, stream.Permanent(fmt.Errorf("%w: %s %s has no numeric amount", ErrBadOrder, pk.String(), sk.String()))
		}
		n, ok := new(big.Int).SetString(v.Number(), 10)
		if !ok {
			return nil, stream.Permanent(fmt.Errorf("%w: %s %s: amount %q is not a whole number of cents", ErrBadOrder, pk.String(), sk.String(), v.Number()))
		}
		return n, nil
	}
	kind, err := stream.KindOf(r) // TTL deletions included, however they come (AWS, DynamoDB Local)
	if err != nil {
		return d, false, stream.Permanent(fmt.Errorf("%w: %w", ErrBadOrder, err))
	}
	switch kind {
	case stream.Insert:
		n, err := amount(r.Change.NewImage)
		if err != nil {
			return d, false, err
		}
		d.orders, d.cents = 1, n
	case stream.Modify:
		n, err := amount(r.Change.NewImage)
		if err != nil {
			return d, false, err
		}
		o, err := amount(r.Change.OldImage)
		if err != nil {
			return d, false, err
		}
		d.cents.Sub(n, o)
	case stream.Remove, stream.TTLRemove:
		o, err := amount(r.Change.OldImage)
		if err != nil {
			return d, false, err
		}
		d.orders, d.cents = -1, o.Neg(o)
	}
	return d, true, nil
}

func totalsKey(customerPK string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: customerPK}, "SK": &types.AttributeValueMemberS{Value: TotalsSK}}
}

func totalsUpdate(table string, d delta) *types.Update {
	u := totalsUpdateItem(table, d)
	return &types.Update{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ExpressionAttributeValues: u.ExpressionAttributeValues}
}

func totalsUpdateItem(table string, d delta) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:        aws.String(table),
		Key:              totalsKey(d.customerPK),
		UpdateExpression: aws.String("ADD orders :n, cents :c SET derived = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberN{Value: fmt.Sprint(d.orders)},
			":c": &types.AttributeValueMemberN{Value: d.cents.String()},
			":t": &types.AttributeValueMemberBOOL{Value: true},
		},
	}
}

// IsTotals selects the totals items (for replay.TableState.Derived): the
// derived state to compare, without the idempotency markers.
func IsTotals(item map[string]types.AttributeValue) bool {
	sk, _ := item["SK"].(*types.AttributeValueMemberS)
	return sk != nil && sk.Value == TotalsSK
}
