package stream

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// GetRecords' retryer hands LimitExceededException back, retries what the
// client's own retries, and keeps an aws.RetryerV2's attempt tokens (the
// adaptive mode's client-side rate limit).
func TestLimitsNotRetried(t *testing.T) {
	o := dynamodbstreams.Options{Retryer: retry.NewAdaptiveMode()}
	noRetryOfLimits(&o)
	r, ok := o.Retryer.(aws.RetryerV2)
	if !ok {
		t.Fatal("the wrapped retryer is not an aws.RetryerV2")
	}
	if r.IsErrorRetryable(&types.LimitExceededException{}) {
		t.Error("LimitExceededException is retried")
	}
	if !r.IsErrorRetryable(&smithy.GenericAPIError{Code: "ThrottlingException"}) {
		t.Error("ThrottlingException is not retried")
	}
	if _, err := r.GetAttemptToken(context.Background()); err != nil {
		t.Errorf("GetAttemptToken: %v", err)
	}
	if r.IsErrorRetryable(errors.New("not an AWS error")) {
		t.Error("a plain error is retried")
	}
}
