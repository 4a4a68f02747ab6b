// A Lambda bootstrap injects panics only (faults_lambda.go).

//go:build !lambda.norpc

package ddb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// With a third of the requests failing as DynamoDB fails (error bodies,
// resets, slow answers), every call still succeeds through the retryer,
// and the calls that cannot succeed are not retried.
func TestRetryerRidesOutInjectedFaults(t *testing.T) {
	_, table, _ := ddbtest.Table(t)
	faults := &ddb.Faults{Rate: 0.33, Seed: 11}
	c := ddbtest.ClientsWith(t, ddb.Config{Faults: faults})
	ctx := context.Background()
	for i := range 60 {
		k := store.Key{PK: fmt.Sprintf("T#%d", i), SK: "X"}
		if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: k.AV()}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if _, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k.AV()}); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
	}
	fc := faults.Counts()
	for _, name := range []string{"InternalServerError", "ThrottlingException", "ProvisionedThroughputExceededException", "connection reset before sending", "slow response"} {
		if fc.Injected[name] == 0 {
			t.Errorf("no %s injected: %+v", name, fc)
		}
	}
	if fc.Requests <= 120 {
		t.Errorf("%d requests for 120 calls: nothing was retried", fc.Requests)
	}
	// A condition that fails is permanent: one attempt, no retry.
	plain := ddbtest.Clients(t)
	before := plain.Requests.Counts()
	other := store.Key{PK: "T#0", SK: "X"}.AV()
	other["v"] = &types.AttributeValueMemberS{Value: "another item"} // the same one again would be its own write
	_, err := plain.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: other,
		ConditionExpression: aws.String("attribute_not_exists(PK)")})
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) || ddb.Transient(err) {
		t.Fatalf("conditional put: %v (transient %v)", err, ddb.Transient(err))
	}
	if n := plain.Requests.Counts().Attempts - before.Attempts; n != 1 {
		t.Errorf("%d attempts of a failed condition, want 1", n)
	}
}

func TestPermanent(t *testing.T) {
	cond := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{{Code: aws.String("ConditionalCheckFailed")}}}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&types.ConditionalCheckFailedException{}, true},
		{fmt.Errorf("put: %w", cond), true},
		{&smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}, true},
		{&types.ProvisionedThroughputExceededException{}, false},
		{&types.ResourceNotFoundException{}, false}, // a missing table is fixed by deploying, not by giving up
		{context.DeadlineExceeded, false},
		{errors.New("plain"), false},
	} {
		if got := ddb.Permanent(c.err); got != c.want {
			t.Errorf("Permanent(%T %v) = %v, want %v", c.err, c.err, got, c.want)
		}
		if got := stream.IsPermanent(ddb.MarkPermanent(c.err)); got != c.want {
			t.Errorf("MarkPermanent(%v) marked %v, want %v", c.err, got, c.want)
		}
	}
}

func TestTransient(t *testing.T) {
	conflict := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("TransactionConflict")}}}
	cond := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{{Code: aws.String("TransactionConflict")}, {Code: aws.String("ConditionalCheckFailed")}}}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&types.ProvisionedThroughputExceededException{}, true},
		{&types.InternalServerError{}, true},
		{&types.RequestLimitExceeded{}, true},
		{fmt.Errorf("wrapped: %w", conflict), true},
		{cond, false},
		{&types.ConditionalCheckFailedException{}, false},
		{&types.ResourceNotFoundException{}, false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := ddb.Transient(c.err); got != c.want {
			t.Errorf("Transient(%T %v) = %v, want %v", c.err, c.err, got, c.want)
		}

	}
}

// A program's start-up checks (ddb.AtStart) go through a fault injector
// untouched, panics included; the requests after them do not.
func TestFaultsLetStartUpThrough(t *testing.T) {
	_, table, _ := ddbtest.Table(t)
	faults := &ddb.Faults{Rate: 1, Kinds: []int{ddb.FaultPanic}}
	c := ddbtest.ClientsWith(t, ddb.Config{Faults: faults})
	k := store.Key{PK: "T#start", SK: "X"}.AV()
	for range 10 {
		if _, err := c.DB.GetItem(ddb.AtStart(context.Background()), &dynamodb.GetItemInput{TableName: aws.String(table), Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	if n := faults.Counts().Requests; n != 0 {
		t.Errorf("%d start-up requests drawn", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("a request after the start did not panic")
		}
	}()
	_, _ = c.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: k})
}
