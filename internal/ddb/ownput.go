package ddb

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// ownPut makes a conditional PutItem whose response was lost recognise its
// own success. The SDK sends a call again when the connection fails after
// DynamoDB executed it; the second attempt of a put conditioned on
// attribute_not_exists then fails its condition against the item the first
// one wrote, and the caller would answer a conflict about its own write.
// So a conditional put asks for the item that failed the condition
// (ReturnValuesOnConditionCheckFailure ALL_OLD, unless the caller asked for
// something itself) and, when that item is exactly the one it puts, the
// table is as the put would leave it: the call succeeds. (Transactions
// have DynamoDB's own ClientRequestToken, which the SDK fills in.)
//
// A transaction sent again by another call (a request run again after the
// writer crashed, writing exactly what its first run wrote) does not share
// the first call's token: it is cancelled because its conditional puts find
// their items there. When every conditional put finds exactly its item,
// the first run committed (a transaction is all or nothing, and the items
// hold this request's own ids and times), and the call succeeds too,
// whatever its other items' conditions say: those see the first run's own
// writes (a rate counter it brought to its limit, a condition check of
// what it changed), not another request's.
func ownPut(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("OwnConditionalPut", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		if tx, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
			return ownTransaction(ctx, in, tx, next)
		}
		p, ok := in.Parameters.(*dynamodb.PutItemInput)
		if !ok || p.ConditionExpression == nil || p.ReturnValuesOnConditionCheckFailure != "" {
			return next.HandleInitialize(ctx, in)
		}
		cp := *p // the caller's input is left as it was
		cp.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		in.Parameters = &cp
		out, md, err := next.HandleInitialize(ctx, in)
		var cf *types.ConditionalCheckFailedException
		if errors.As(err, &cf) && SameItem(cf.Item, p.Item) {
			out.Result = &dynamodb.PutItemOutput{}
			return out, md, nil
		}
		return out, md, err
	}), middleware.After)
}

func ownTransaction(ctx context.Context, in middleware.InitializeInput, tx *dynamodb.TransactWriteItemsInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	cp := *tx // the caller's input is left as it was
	cp.TransactItems = make([]types.TransactWriteItem, len(tx.TransactItems))
	for i, it := range tx.TransactItems {
		if it.Put != nil && it.Put.ConditionExpression != nil && it.Put.ReturnValuesOnConditionCheckFailure == "" {
			put := *it.Put
			put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
			it.Put = &put
		}
		cp.TransactItems[i] = it
	}
	in.Parameters = &cp
	out, md, err := next.HandleInitialize(ctx, in)
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) || len(tc.CancellationReasons) != len(tx.TransactItems) {
		return out, md, err
	}
	// Every conditional put must find its very item: one that did not
	// (None) was not written by an earlier commit of this transaction.
	// The other items' reasons are the first commit's consequences.
	own := false
	for i, r := range tc.CancellationReasons {
		p := tx.TransactItems[i].Put
		switch code := aws.ToString(r.Code); {
		case p == nil || p.ConditionExpression == nil:
		case code == "ConditionalCheckFailed" && SameItem(r.Item, p.Item):
			own = true
		default:
			return out, md, err
		}
	}
	if own {
		out.Result = &dynamodb.TransactWriteItemsOutput{}
		return out, md, nil
	}
	return out, md, err
}

// SameItem reports whether two items hold the same attributes with the same
// values: numbers by value (DynamoDB gives back 1.5 for 1.50), sets in any
// order.
func SameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) || a == nil || b == nil {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !sameValue(va, vb) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && sameNumber(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(x.Value, y.Value, func(a, b string) bool { return a == b })
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(x.Value, y.Value, sameNumber)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(x.Value, y.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(x.Value, y.Value, sameValue)
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		return ok && SameItem(x.Value, y.Value) || ok && len(x.Value) == 0 && len(y.Value) == 0
	}
	return false
}

func sameNumber(a, b string) bool {
	x, okx := new(big.Float).SetPrec(256).SetString(a)
	y, oky := new(big.Float).SetPrec(256).SetString(b)
	return okx && oky && x.Cmp(y) == 0
}

func sameSet[T any](a, b []T, eq func(T, T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y T) bool { return eq(x, y) }) {
			return false
		}
	}
	return true
}
