package ddb

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/awserr"
	"github.com/dynastream/dynastream/stream"
)

// The DynamoDB retry policy: short pauses, as AWS's own SDKs have long
// used for DynamoDB (a 25–50 ms base rather than the generic second), with
// full jitter, doubling up to MaxBackoff. With DefaultMaxAttempts the
// pauses add up to about 2.5 s at worst (1.3 s on average), well inside a
// batch's deadline; the context's deadline ends them sooner.
const (
	BaseBackoff        = 25 * time.Millisecond
	MaxBackoff         = time.Second
	DefaultMaxAttempts = 8
)

// throttleCodes are DynamoDB's transient error codes (retried whatever the
// HTTP status); permanentCodes are those the same request always gets.
var (
	throttleCodes = map[string]bool{
		"ThrottlingException": true, "ProvisionedThroughputExceededException": true, "RequestLimitExceeded": true,
		"TransactionInProgressException": true, "TransactionConflictException": true, "InternalServerError": true,
		"ServiceUnavailable": true, "LimitExceededException": true,
	}
	permanentCodes = map[string]bool{
		"ConditionalCheckFailedException": true, "ValidationException": true, "SerializationException": true,
		"ItemCollectionSizeLimitExceededException": true, "DuplicateItemException": true,
		"IdempotentParameterMismatchException": true,
	}
)

// Transient reports whether a DynamoDB error is worth retrying: throttling,
// 5xx, timeouts, connection resets, and transactions cancelled only by
// conflicts or throttling. Everything else — a condition that failed, a
// bad request, a missing table — fails the same way again. This is the
// one classification the clients' retryer uses (awserr.Classify with
// DynamoDB's codes).
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		conflict := false
		for _, r := range tc.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "", "None":
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
				conflict = true
			default:
				return false // a condition or a validation: permanent
			}
		}
		return conflict
	}
	return awserr.Classify(err, throttleCodes, permanentCodes) == awserr.Retryable
}

// NewRetryer is the DynamoDB clients' retryer: Transient decides, pauses
// per BaseBackoff/MaxBackoff, and no client-side retry quota — the SDK's
// token bucket would refuse retries exactly when a burst of faults makes
// them needed (the time budget bounds them instead).
func NewRetryer(maxAttempts int) aws.Retryer {
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	b := awserr.Backoff{Base: BaseBackoff, Max: MaxBackoff}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = MaxBackoff
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return b.Draw(attempt - 1), nil
		})
		o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			return aws.BoolTernary(Transient(err))
		})}
		o.RateLimiter = ratelimit.None
	})
}

// Permanent reports whether a DynamoDB error fails the same way however
// often the request is made again: a condition or a validation that fails,
// a transaction cancelled for either, an input the SDK itself refuses.
func Permanent(err error) bool {
	if err == nil || Transient(err) {
		return false
	}
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		return true // not only conflicts (Transient said so)
	}
	return awserr.Classify(err, throttleCodes, permanentCodes) == awserr.Permanent
}

// MarkPermanent marks err with stream.Permanent when Permanent says so, so
// that stream.Keyed dead-letters its record at once instead of retrying it.
func MarkPermanent(err error) error {
	if Permanent(err) {
		return stream.Permanent(err)
	}
	return err
}
