// A Lambda bootstrap injects panics only (faults_lambda.go).

//go:build !lambda.norpc

package ddb_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
)

// Writes tells, for the calls made with a TrackWrites context, whether
// they may have changed the table: reads and refusals did not; a write
// that succeeded, or whose answer was lost, may have; a context that was
// not tracked, or whose client recorded nothing, may have (not knowing).
func TestTrackWrites(t *testing.T) {
	t.Parallel()
	c, table, _ := ddbtest.Table(t)
	tracked := dynamodb.New(c.DB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, ddb.TrackedWrites)
		o.RetryMaxAttempts = 1
	})
	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "t"}, "SK": &types.AttributeValueMemberS{Value: "1"}}
	put := func(ctx context.Context, db *dynamodb.Client, tableName string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tableName), Item: key,
			ConditionExpression: aws.String("attribute_not_exists(PK)")})
		return err
	}
	bg := context.Background()

	if !ddb.Writes(bg) {
		t.Error("an untracked context: want may have written")
	}
	ctx := ddb.TrackWrites(bg)
	if !ddb.Writes(ctx) {
		t.Error("no call recorded: want may have written (not knowing)")
	}
	if _, err := tracked.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key}); err != nil {
		t.Fatal(err)
	}
	if ddb.Writes(ctx) {
		t.Error("a read: want nothing written")
	}
	if err := put(ctx, tracked, table+"-missing"); err == nil {
		t.Fatal("a put to a missing table succeeded")
	}
	if ddb.Writes(ctx) {
		t.Error("a put refused (no such table, a 400): want nothing written")
	}
	if err := put(ctx, tracked, table); err != nil {
		t.Fatal(err)
	}
	if !ddb.Writes(ctx) {
		t.Error("a put that succeeded: want may have written")
	}
	ctx = ddb.TrackWrites(bg)
	if err := put(ctx, tracked, table); err == nil {
		t.Fatal("a second put on attribute_not_exists succeeded")
	}
	if ddb.Writes(ctx) {
		t.Error("a failed condition: want nothing written")
	}

	// The first attempt's answer lost after DynamoDB executed the put, the
	// SDK's second attempt refused (its condition finds the first's item):
	// a refusal after a lost answer does not undo the may-have.
	ctx = ddb.TrackWrites(bg)
	if _, err := tracked.DeleteItem(bg, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
		t.Fatal(err)
	}
	firstLost := dynamodb.New(tracked.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: &loseFirst{}}
		o.RetryMaxAttempts = 2
	})
	var cf *types.ConditionalCheckFailedException
	if err := put(ctx, firstLost, table); !errors.As(err, &cf) {
		t.Fatalf("a put sent again after its answer was lost: %v, want its condition refused", err)
	}
	if !ddb.Writes(ctx) {
		t.Error("a lost answer, then a refusal: want may have written")
	}

	// The answer lost after DynamoDB executed the put.
	lost := dynamodb.New(tracked.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: &ddb.Faults{Rate: 1, Seed: 1, Kinds: []int{ddb.FaultResetAfter}}}
	})
	ctx = ddb.TrackWrites(bg)
	if _, err := lost.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err == nil {
		t.Fatal("a delete whose answer was lost succeeded")
	}
	if !ddb.Writes(ctx) {
		t.Error("a delete whose answer was lost: want may have written")
	}
}

// loseFirst sends every request; it drops the first one's answer.
type loseFirst struct{ sent atomic.Int32 }

func (l *loseFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || l.sent.Add(1) > 1 {
		return res, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("connection reset by the test after DynamoDB answered")
}
