package awserr_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/smithy-go"

	"github.com/dynastream/dynastream/awserr"
)

// The retry decision for an SDK error: a throttle is retried here, a code
// the caller names permanent is dead-lettered, anything the service did
// not answer with a fault or a status is fatal (redelivered after a fix).
func ExampleClassify() {
	throttles := map[string]bool{"ThrottlingException": true}
	permanent := map[string]bool{"ValidationException": true}
	for _, err := range []error{
		&smithy.GenericAPIError{Code: "com.amazonaws.events#ThrottlingException", Message: "slow down"},
		&smithy.GenericAPIError{Code: "ValidationException", Message: "bad input"},
		&smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer},
		errors.New("something else"),
	} {
		fmt.Printf("%s: %s\n", awserr.Code(err), awserr.Classify(err, throttles, permanent))
	}
	// Output:
	// ThrottlingException: retryable
	// ValidationException: permanent
	// InternalFailure: retryable
	// : fatal
}

// Exponential backoff with full jitter and a cap: each pause is drawn from
// [0, min(Base<<attempt, Max)]. Jitter and Sleep are replaceable (here the
// bound itself is drawn, and nothing sleeps) for tests.
func ExampleBackoff() {
	var slept []time.Duration
	b := awserr.Backoff{Base: 50 * time.Millisecond, Max: time.Second,
		Jitter: func(bound time.Duration) time.Duration { return bound },
		Sleep:  func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	for attempt := range 6 {
		_ = b.Wait(context.Background(), attempt)
	}
	fmt.Println(slept)
	// Output:
	// [50ms 100ms 200ms 400ms 800ms 1s]
}
