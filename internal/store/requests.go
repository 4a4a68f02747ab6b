package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TypeRequest marks the records of requests sent with an Idempotency-Key.
const TypeRequest = "IdempotentRequest"

// RequestState is what BeginRequest found for an idempotency key.
type RequestState int

// The states.
const (
	// RequestStarted: the caller holds the key; run the request, then
	// EndRequest with its response (or AbortRequest).
	RequestStarted RequestState = iota + 1
	// RequestDone: the request ran before; answer its stored response.
	RequestDone
	// RequestBusy: the same request is running now (its hold has not
	// ended).
	RequestBusy
	// RequestMismatch: the key was used for another request.
	RequestMismatch
	// RequestStale: the key's first run was cut short (a crash) longer
	// ago than the request may be run as of then (MaxAsOf): its outcome
	// is unknown, and running it now, with the clock of then, could do
	// what is no longer allowed (accept an invite since expired).
	RequestStale
)

// A request record's status: running (claimed, its hold not ended) or
// completed (its response kept).
const (
	requestRunning   = "INPROGRESS"
	requestCompleted = "COMPLETED"
)

// MaxAsOf is how long after its first start a request cut short may be run
// again as of that start.
const MaxAsOf = 15 * time.Minute

// StoredResponse is what a request with an Idempotency-Key answered, kept
// to answer its repeats the same.
type StoredResponse struct {
	Status      int    `dynamodbav:"responseStatus"`
	ContentType string `dynamodbav:"responseType,omitempty"`
	Location    string `dynamodbav:"responseLocation,omitempty"`
	Body        string `dynamodbav:"responseBody,omitempty"`
}

// RequestClaim is a held idempotency key.
type RequestClaim struct {
	key   Key
	token string
	// StartedAt is when the key was first claimed: a request run again
	// after its first run crashed is run as of then (the same timestamps),
	// so that it writes what the first one wrote.
	StartedAt time.Time
	// Resumed says the key was claimed before, by a run that was cut
	// short or released (the record was there, with another claim or none):
	// this run continues that one, as of its start.
	Resumed bool
}

// RequestKey is a request record's key in the bookkeeping table: per
// caller (scope), so one user's key never reaches another's response.
func RequestKey(scope, key string) Key {
	return Key{"REQUEST#" + userScope(scope) + "#" + key, "IDEMPOTENCY"}
}

// userScope is a user id as the first part of a bookkeeping key: its
// length first, so that no id and suffix can make another user's key
// ("a#b" + "#c" and "a" + "#b#c" differ).
func userScope(userID string) string { return strconv.Itoa(len(userID)) + ":" + userID }

// BeginRequest claims an idempotency key for a request (fingerprint: what
// makes it the same request), as Begin claims a stream record's key: a
// record in progress until held (hold), then kept for keep (24 hours,
// ttl). A claim whose answer was lost and that the SDK sent again is the
// caller's own (its token). It returns the stored response when the
// request ran before, and when the running one's hold ends when busy.
func (s Requests) BeginRequest(ctx context.Context, scope, key, fingerprint string, now time.Time, hold, keep time.Duration) (RequestState, RequestClaim, StoredResponse, time.Time, error) {
	tok := make([]byte, 12)
	_, _ = rand.Read(tok)
	claim := RequestClaim{key: RequestKey(scope, key), token: hex.EncodeToString(tok)}
	num := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.book()), Key: claim.key.AV(),
		UpdateExpression: aws.String("SET itemType = :type, derived = :true, #status = :running, holdUntil = :hold, claim = :claim, fingerprint = :fp, #ttl = :ttl, startedAt = if_not_exists(startedAt, :now)"),
		ConditionExpression: aws.String("attribute_not_exists(PK) OR claim = :claim OR " +
			"(#status = :running AND holdUntil < :now AND fingerprint = :fp AND startedAt > :oldest)"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#ttl": AttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":type": strAV(TypeRequest), ":true": &types.AttributeValueMemberBOOL{Value: true}, ":running": strAV(requestRunning),
			":hold": num(now.Add(hold).UnixMilli()), ":now": num(now.UnixMilli()), ":claim": strAV(claim.token),
			":fp": strAV(fingerprint), ":ttl": num(now.Add(keep).Unix()), ":oldest": num(now.Add(-MaxAsOf).UnixMilli()),
		},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		var old struct {
			Status      string `dynamodbav:"status"`
			Fingerprint string `dynamodbav:"fingerprint"`
			HoldUntil   int64  `dynamodbav:"holdUntil"`
			StartedAt   int64  `dynamodbav:"startedAt"`
			TTL         int64  `dynamodbav:"ttl"`
			StoredResponse
		}
		if err := attributevalue.UnmarshalMap(cf.Item, &old); err != nil {
			return 0, claim, StoredResponse{}, time.Time{}, fmt.Errorf("store: idempotency record %s: %w", key, err)
		}
		if old.TTL > 0 && old.TTL < now.Unix() && !expiredRetry(ctx) {
			// An expired record is absent (DynamoDB deletes it late,
			// DynamoDB Local never): delete it, as it stands, and claim
			// the key afresh, with this request's own start.
			_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.book()), Key: claim.key.AV(),
				ConditionExpression:       aws.String("#ttl = :ttl"),
				ExpressionAttributeNames:  map[string]string{"#ttl": AttrTTL},
				ExpressionAttributeValues: map[string]types.AttributeValue{":ttl": num(old.TTL)}})
			if err != nil && !isConditionFailed(err) {
				return 0, claim, StoredResponse{}, time.Time{}, fmt.Errorf("store: delete expired idempotency record: %w", err)
			}
			return s.BeginRequest(context.WithValue(ctx, expiredRetryKey{}, true), scope, key, fingerprint, now, hold, keep)
		}
		switch {
		case old.Fingerprint != fingerprint:
			return RequestMismatch, claim, StoredResponse{}, time.Time{}, nil
		case old.Status == requestCompleted:
			return RequestDone, claim, old.StoredResponse, time.Time{}, nil
		case old.HoldUntil < now.UnixMilli():
			return RequestStale, claim, StoredResponse{}, time.UnixMilli(old.StartedAt), nil
		}
		return RequestBusy, claim, StoredResponse{}, time.UnixMilli(old.HoldUntil), nil
	}
	if err != nil {
		return 0, claim, StoredResponse{}, time.Time{}, fmt.Errorf("store: begin idempotent request: %w", err)
	}
	// The record as it was before this claim: a run that was cut short or
	// released left its start (startedAt is kept), and this run resumes it;
	// the caller's own claim sent again by the SDK is not another's.
	claim.StartedAt = time.UnixMilli(now.UnixMilli())
	if n, ok := out.Attributes["startedAt"].(*types.AttributeValueMemberN); ok {
		if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			claim.StartedAt = time.UnixMilli(ms)
			prev, _ := out.Attributes["claim"].(*types.AttributeValueMemberS)
			claim.Resumed = prev == nil || prev.Value != claim.token
		}
	}
	return RequestStarted, claim, StoredResponse{}, time.Time{}, nil
}

// expiredRetryKey marks a BeginRequest made again after deleting an
// expired record: once is enough.
type expiredRetryKey struct{}

func expiredRetry(ctx context.Context) bool { b, _ := ctx.Value(expiredRetryKey{}).(bool); return b }

// EndRequest records a claimed request's response: its repeats answer it.
func (s Requests) EndRequest(ctx context.Context, c RequestClaim, r StoredResponse) error {
	av, err := attributevalue.MarshalMap(r)
	if err != nil {
		return fmt.Errorf("store: marshal response: %w", err)
	}
	sets := []string{"#status = :done"}
	vals := map[string]types.AttributeValue{":done": strAV(requestCompleted), ":claim": strAV(c.token)}
	names := map[string]string{"#status": "status"}
	for _, k := range slices.Sorted(maps.Keys(av)) {
		names["#"+k], vals[":"+k] = k, av[k]
		sets = append(sets, "#"+k+" = :"+k)
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.book()), Key: c.key.AV(),
		UpdateExpression:         aws.String("SET " + strings.Join(sets, ", ") + " REMOVE holdUntil"),
		ConditionExpression:      aws.String("claim = :claim"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals})
	if err != nil {
		return fmt.Errorf("store: end idempotent request: %w", err)
	}
	return nil
}

// ReleaseRequest frees a claimed key whose request failed for a reason a
// retry may cure (a 5xx): the retry takes it over at once and runs as of
// the first start (StartedAt kept), so whatever the failed run wrote
// before it failed is its own.
func (s Requests) ReleaseRequest(ctx context.Context, c RequestClaim) error {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.book()), Key: c.key.AV(),
		UpdateExpression:          aws.String("SET holdUntil = :zero REMOVE claim"),
		ConditionExpression:       aws.String("claim = :claim"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":claim": strAV(c.token), ":zero": &types.AttributeValueMemberN{Value: "0"}}})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("store: release idempotent request: %w", err)
	}
	return nil
}

// AbortRequest forgets a claimed key whose request did nothing and must
// run afresh, with the clock of its retry: a 429 (a limit's window is
// counted from now), or a 5xx of a run that wrote nothing (ddb.Writes), so
// the retry writes no history in the past.
func (s Requests) AbortRequest(ctx context.Context, c RequestClaim) error {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.book()), Key: c.key.AV(),
		ConditionExpression:       aws.String("claim = :claim"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":claim": strAV(c.token)}})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("store: abort idempotent request: %w", err)
	}
	return nil
}
