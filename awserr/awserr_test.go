package awserr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dynastream/dynastream/awserr"
)

// response is what the SDK returns for an answered call: a ResponseError
// with the status, wrapping the deserialized API error.
func response(status int, apiErr error) error {
	return &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      apiErr,
	}
}

func apiErr(code string, fault smithy.ErrorFault) *smithy.GenericAPIError {
	return &smithy.GenericAPIError{Code: code, Message: "scripted " + code, Fault: fault}
}

func TestClassify(t *testing.T) {
	throttle := map[string]bool{"ThrottlingException": true, "TooManyRequestsException": true}
	perm := map[string]bool{"MessageRejected": true}
	var invalid smithy.InvalidParamsError
	invalid.Context = "SendEmailInput"
	invalid.Add(smithy.NewErrParamRequired("FromEmailAddress"))
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

	tests := []struct {
		name string
		err  error
		perm map[string]bool
		want awserr.Class
	}{
		{"throttle code at 400", response(400, apiErr("ThrottlingException", smithy.FaultClient)), nil, awserr.Retryable},
		{"namespaced throttle code", response(400, apiErr("com.amazonaws.events#ThrottlingException", smithy.FaultClient)), nil, awserr.Retryable},
		{"throttle code without response", apiErr("TooManyRequestsException", smithy.FaultUnknown), nil, awserr.Retryable},
		{"429 with an unknown code", response(http.StatusTooManyRequests, apiErr("SlowDown", smithy.FaultUnknown)), nil, awserr.Retryable},
		{"500", response(500, apiErr("InternalFailure", smithy.FaultUnknown)), nil, awserr.Retryable},
		{"503 without an API error", response(503, errors.New("bad gateway")), nil, awserr.Retryable},
		{"server fault without response", apiErr("InternalServiceErrorException", smithy.FaultServer), nil, awserr.Retryable},
		{"400 validation", response(400, apiErr("ValidationException", smithy.FaultClient)), nil, awserr.Fatal},
		{"403 access denied", response(403, apiErr("AccessDeniedException", smithy.FaultClient)), nil, awserr.Fatal},
		{"404 no such bus", response(404, apiErr("ResourceNotFoundException", smithy.FaultClient)), nil, awserr.Fatal},
		{"permanent code given", response(400, apiErr("MessageRejected", smithy.FaultClient)), perm, awserr.Permanent},
		{"permanent code not given", response(400, apiErr("MessageRejected", smithy.FaultClient)), nil, awserr.Fatal},
		{"permanent code wins over 5xx", response(500, apiErr("MessageRejected", smithy.FaultServer)), perm, awserr.Permanent},
		{"invalid params", fmt.Errorf("op: %w", invalid), nil, awserr.Permanent},
		{"invalid params pointer", fmt.Errorf("op: %w", &invalid), nil, awserr.Permanent},
		{"request send error", &smithyhttp.RequestSendError{Err: io.EOF}, nil, awserr.Retryable},
		{"connection refused", refused, nil, awserr.Retryable},
		{"no response: status 0, transport error", response(0, &smithyhttp.RequestSendError{Err: refused}), nil, awserr.Retryable},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), nil, awserr.Retryable},
		{"wrapped 500", fmt.Errorf("put: %w", response(502, apiErr("", smithy.FaultUnknown))), nil, awserr.Retryable},
		{"200 whose body was cut off", response(200, &smithy.DeserializationError{Err: &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}}), nil, awserr.Retryable},
		{"200 whose body ended early", response(200, &smithy.DeserializationError{Err: io.ErrUnexpectedEOF}), nil, awserr.Retryable},
		{"200 whose body is not JSON", response(200, &smithy.DeserializationError{Err: errors.New("invalid character")}), nil, awserr.Fatal},
		{"anything else", errors.New("boom"), nil, awserr.Fatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := awserr.Classify(tt.err, throttle, tt.perm); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestCode(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{apiErr("MessageRejected", smithy.FaultClient), "MessageRejected"},
		{apiErr("com.amazonaws.eventbridge#ThrottlingException", smithy.FaultClient), "ThrottlingException"},
		{apiErr("ValidationException:http://internal.amazon.com/coral/com.amazon.coral.validate/", smithy.FaultClient), "ValidationException"},
		{apiErr("aws.protocoltests#FooError:http://internal.amazon.com/", smithy.FaultClient), "FooError"},
		{fmt.Errorf("send: %w", response(400, apiErr("BadRequestException", smithy.FaultClient))), "BadRequestException"},
		{response(500, errors.New("no API error")), ""},
		{errors.New("boom"), ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := awserr.Code(tt.err); got != tt.want {
			t.Errorf("Code(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[awserr.Class]string{awserr.Retryable: "retryable", awserr.Fatal: "fatal", awserr.Permanent: "permanent", 7: "Class(7)"} {
		if got := c.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(c), got, want)
		}
	}
}

func TestBackoffBound(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		b       awserr.Backoff
		attempt int
		want    time.Duration
	}{
		{"first", awserr.Backoff{Base: 100 * ms, Max: 5 * time.Second}, 0, 100 * ms},
		{"doubles", awserr.Backoff{Base: 100 * ms, Max: 5 * time.Second}, 3, 800 * ms},
		{"capped", awserr.Backoff{Base: 100 * ms, Max: 5 * time.Second}, 6, 5 * time.Second},
		{"capped far out", awserr.Backoff{Base: 100 * ms, Max: 5 * time.Second}, 1000, 5 * time.Second},
		{"base above max", awserr.Backoff{Base: time.Hour, Max: 10 * time.Second}, 0, 10 * time.Second},
		{"no cap, no overflow", awserr.Backoff{Base: 100 * ms}, 1000, math.MaxInt64},
		{"no cap", awserr.Backoff{Base: 100 * ms}, 10, 102400 * ms},
		{"negative attempt", awserr.Backoff{Base: 100 * ms, Max: time.Second}, -1, 100 * ms},
		{"zero base", awserr.Backoff{Max: time.Second}, 3, 0},
	}
	for _, tt := range tests {
		if got := tt.b.Bound(tt.attempt); got != tt.want {
			t.Errorf("%s: Bound(%d) = %v, want %v", tt.name, tt.attempt, got, tt.want)
		}
	}
}

func TestBackoffWaitUsesJitterAndSleep(t *testing.T) {
	var bounds, slept []time.Duration
	b := awserr.Backoff{
		Base: 200 * time.Millisecond,
		Max:  time.Second,
		Jitter: func(bound time.Duration) time.Duration {
			bounds = append(bounds, bound)
			return bound / 2
		},
		Sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		},
	}
	for attempt := range 5 {
		if err := b.Wait(context.Background(), attempt); err != nil {
			t.Fatal(err)
		}
	}
	wantBounds := []time.Duration{200, 400, 800, 1000, 1000}
	for i, ms := range wantBounds {
		if bounds[i] != ms*time.Millisecond || slept[i] != ms*time.Millisecond/2 {
			t.Errorf("wait %d: bound %v slept %v, want %v and half", i, bounds[i], slept[i], ms*time.Millisecond)
		}
	}
}

func TestBackoffDefaultJitterWithinBound(t *testing.T) {
	b := awserr.Backoff{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	for attempt := range 4 {
		bound := b.Bound(attempt)
		for range 200 {
			if d := b.Draw(attempt); d < 0 || d > bound {
				t.Fatalf("Draw(%d) = %v, want within [0, %v]", attempt, d, bound)
			}
		}
	}
	if d := (awserr.Backoff{}).Draw(3); d != 0 {
		t.Errorf("zero Backoff draws %v, want 0", d)
	}
}

func TestBackoffWaitCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	b := awserr.Backoff{Base: time.Hour, Max: time.Hour, Jitter: func(d time.Duration) time.Duration { return d }}
	// an hour's wait ends in the test's lifetime only if the
	// cancellation ends it: its error says so (no wall-clock bound)
	err := b.Wait(ctx, 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestSleepCtx(t *testing.T) {
	if err := awserr.SleepCtx(context.Background(), time.Millisecond); err != nil {
		t.Errorf("short sleep: %v", err)
	}
	if err := awserr.SleepCtx(context.Background(), 0); err != nil {
		t.Errorf("zero sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := awserr.SleepCtx(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("zero sleep, done ctx: %v, want context.Canceled", err)
	}
	if err := awserr.SleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("long sleep, done ctx: %v, want context.Canceled", err)
	}
}
