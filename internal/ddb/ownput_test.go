package ddb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
)

func TestSameItem(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	item := func(kv ...any) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return m
	}
	for _, c := range []struct {
		name string
		a, b map[string]types.AttributeValue
		same bool
	}{
		{"equal", item("PK", s("a"), "n", n("1.50")), item("PK", s("a"), "n", n("1.5")), true},
		{"1e21 as DynamoDB writes it", item("n", n("1e+21")), item("n", n("1000000000000000000000")), true},
		{"another number", item("n", n("1.5")), item("n", n("1.6")), false},
		{"sets in any order", item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}), item("ss", &types.AttributeValueMemberSS{Value: []string{"b", "a"}}), true},
		{"another set", item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}), item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "c"}}), false},
		{"an attribute more", item("PK", s("a")), item("PK", s("a"), "x", s("y")), false},
		{"nested", item("m", &types.AttributeValueMemberM{Value: item("l", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("2"), s("x")}})}),
			item("m", &types.AttributeValueMemberM{Value: item("l", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("2.0"), s("x")}})}), true},
		{"a type differs", item("v", s("1")), item("v", n("1")), false},
		{"nothing there", nil, item("PK", s("a")), false},
	} {
		if got := ddb.SameItem(c.a, c.b); got != c.same {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

// With OwnWrites, a conditional put or transaction that finds exactly what
// it writes is done; one that would write anything new is refused as
// without: a transaction whose other conditional put had not been written
// was never committed, and recognising it would lose that put.
func TestOwnWrites(t *testing.T) {
	_, table, _ := ddbtest.Table(t)
	c := ddbtest.ClientsWith(t, ddb.Config{OwnWrites: true})
	ctx := context.Background()
	item := func(pk, v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "X"}, "v": &types.AttributeValueMemberS{Value: v}}
	}
	put := func(it map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")}}
	}
	cond := aws.String("attribute_not_exists(PK)")
	if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("A", "1"), ConditionExpression: cond}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("A", "1"), ConditionExpression: cond}); err != nil {
		t.Errorf("the very same put again: %v, want done", err)
	}
	var cf *types.ConditionalCheckFailedException
	if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("A", "2"), ConditionExpression: cond}); !errors.As(err, &cf) {
		t.Errorf("another item under the key: %v, want the condition's failure", err)
	}
	if _, err := c.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(item("A", "1"))}}); err != nil {
		t.Errorf("a transaction of the very same put: %v, want done", err)
	}
	var tc *types.TransactionCanceledException
	if _, err := c.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(item("A", "1")), put(item("B", "1"))}}); !errors.As(err, &tc) {
		t.Errorf("a transaction with a put not written yet: %v, want it cancelled", err)
	}
	if out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "B"}, "SK": &types.AttributeValueMemberS{Value: "X"}}}); err != nil || out.Item != nil {
		t.Errorf("B: %v %v, want nothing written", out, err)
	}
	// A counter the first commit brought to its limit fails its condition
	// when the transaction is run again: the put finding its very item says
	// the first commit happened, so the call is done (and counts nothing
	// again); with a put that is not its own, it is cancelled.
	counter := types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table),
		Key:                       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "COUNT"}, "SK": &types.AttributeValueMemberS{Value: "X"}},
		UpdateExpression:          aws.String("ADD n :one"),
		ConditionExpression:       aws.String("attribute_not_exists(n) OR n < :max"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":max": &types.AttributeValueMemberN{Value: "1"}}}}
	if _, err := c.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(item("C", "1")), counter}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(item("C", "1")), counter}}); err != nil {
		t.Errorf("the same transaction again, its counter at the limit: %v, want done", err)
	}
	if _, err := c.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(item("D", "1")), counter}}); !errors.As(err, &tc) {
		t.Errorf("another transaction with the counter at the limit: %v, want it cancelled", err)
	}
	out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "COUNT"}, "SK": &types.AttributeValueMemberS{Value: "X"}}})
	if n, _ := out.Item["n"].(*types.AttributeValueMemberN); err != nil || n == nil || n.Value != "1" {
		t.Errorf("the counter: %v %v, want 1", out.Item, err)
	}
}
