package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TypeIdempotency marks idempotency records.
const TypeIdempotency = "IdempotencyRecord"

// OnceState is what Begin found for an idempotency key.
type OnceState int

// The states.
const (
	// OnceStarted: the caller holds the key and must do the work, then End
	// (or Abort on failure).
	OnceStarted OnceState = iota + 1
	// OnceDone: the work was done before; skip it.
	OnceDone
	// OnceBusy: another worker holds the key and its hold has not expired;
	// try again later.
	OnceBusy
)

// Idempotency record statuses.
const (
	onceInProgress = "INPROGRESS"
	onceCompleted  = "COMPLETED"
)

func onceKey(key string) Key { return Key{"IDEMPOTENCY#" + key, "IDEMPOTENCY"} }

// BeginOnce claims an idempotency key, as AWS Lambda Powertools' idempotency
// utility does: a record in progress with an expiry (hold), completed when
// the work is done. A holder that crashed loses the key when its hold
// expires, so the work is then done again: at most once, except for a crash
// between the work and End. Records are kept for keep, then TTL removes them.
// They live in the bookkeeping table (Store.Bookkeeping), which has no
// stream; marked derived, so that consumers would ignore them on a stream.
//
// For OnceBusy it also returns when the other holder's hold ends.
func (s *Store) BeginOnce(ctx context.Context, key string, now time.Time, hold, keep time.Duration) (OnceState, time.Time, error) {
	k := onceKey(key)
	item := k.AV()
	item[AttrItemType] = &types.AttributeValueMemberS{Value: TypeIdempotency}
	item[AttrDerived] = &types.AttributeValueMemberBOOL{Value: true}
	item["status"] = &types.AttributeValueMemberS{Value: onceInProgress}
	// The claim's own token: when the response to a claim that succeeded
	// is lost and the SDK retries it, the retry's condition fails on the
	// claim itself, which the token recognises.
	token := strconv.FormatUint(rand.Uint64(), 36)
	item["claim"] = &types.AttributeValueMemberS{Value: token}
	item["holdUntil"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(hold).UnixMilli(), 10)}
	item[AttrTTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(keep).Unix(), 10)}
	_, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.book()), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(PK) OR (#status = :inprogress AND holdUntil < :now)"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": &types.AttributeValueMemberS{Value: onceInProgress},
			":now":        &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		if st, ok := cf.Item["status"].(*types.AttributeValueMemberS); ok && st.Value == onceCompleted {
			return OnceDone, time.Time{}, nil
		}
		if c, ok := cf.Item["claim"].(*types.AttributeValueMemberS); ok && c.Value == token {
			return OnceStarted, time.Time{}, nil
		}
		until := now.Add(hold)
		if h, ok := cf.Item["holdUntil"].(*types.AttributeValueMemberN); ok {
			if ms, err := strconv.ParseInt(h.Value, 10, 64); err == nil {
				until = time.UnixMilli(ms)
			}
		}
		return OnceBusy, until, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: begin %s: %w", key, err)
	}
	return OnceStarted, time.Time{}, nil
}

// EndOnce marks the work of a key done, recording its result.
func (s *Store) EndOnce(ctx context.Context, key, result string) error {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.book()), Key: onceKey(key).AV(),
		UpdateExpression:         aws.String("SET #status = :done, #result = :r REMOVE holdUntil"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#result": "result"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":done": &types.AttributeValueMemberS{Value: onceCompleted}, ":r": &types.AttributeValueMemberS{Value: result},
		},
	})
	if err != nil {
		return fmt.Errorf("store: end %s: %w", key, err)
	}
	return nil
}

// AbortOnce releases a key whose work failed, so a retry can do it.
func (s *Store) AbortOnce(ctx context.Context, key string) error {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.book()), Key: onceKey(key).AV(),
		ConditionExpression:       aws.String("#status = :inprogress"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":inprogress": &types.AttributeValueMemberS{Value: onceInProgress}},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("store: abort %s: %w", key, err)
	}
	return nil
}
