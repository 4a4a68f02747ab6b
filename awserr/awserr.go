package awserr

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Class is what a failed call's error means for a retry.
type Class int

const (
	// Retryable: try again within this call, after a pause.
	Retryable Class = iota
	// Fatal: not retried here and not permanent either: redelivery after
	// a fix (configuration, quota, permissions) may succeed.
	Fatal
	// Permanent: the same input never succeeds; dead-letter it.
	Permanent
)

func (c Class) String() string {
	switch c {
	case Retryable:
		return "retryable"
	case Fatal:
		return "fatal"
	case Permanent:
		return "permanent"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Classify is the retry decision for an error from an AWS SDK call, in
// this order:
//   - an error code (see Code) in permanentCodes: Permanent;
//   - an error code in throttleCodes: Retryable, whatever the HTTP status
//     (some services answer throttling with 400);
//   - an API error with a server fault: Retryable;
//   - an HTTP response (smithyhttp.ResponseError with a status): 429 and
//     5xx are Retryable, any other status is Fatal;
//   - the SDK's own input validation (smithy.InvalidParamsError): Permanent,
//     as the same input fails again without reaching the service;
//   - a transport error (smithyhttp.RequestSendError, net.Error,
//     io.ErrUnexpectedEOF): Retryable;
//   - anything else: Fatal.
//
// Either map may be nil.
func Classify(err error, throttleCodes, permanentCodes map[string]bool) Class {
	code := Code(err)
	switch {
	case permanentCodes[code]:
		return Permanent
	case throttleCodes[code]:
		return Retryable
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultServer {
		return Retryable
	}
	// The SDK wraps every failed attempt in a ResponseError; its status is
	// 0 when no response arrived (transport error, handled below).
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		st := re.HTTPStatusCode()
		switch {
		case st == http.StatusTooManyRequests || st >= 500:
			return Retryable
		case st < 300 && lostInTransit(err):
			// A success whose body was cut off on the way (the connection
			// dropped while it was read): the answer is lost, not wrong.
			return Retryable
		}
		return Fatal
	}
	var invalid smithy.InvalidParamsError
	var invalidPtr *smithy.InvalidParamsError
	if errors.As(err, &invalid) || errors.As(err, &invalidPtr) {
		return Permanent
	}
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	if errors.As(err, &sendErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Retryable
	}
	return Fatal
}

// lostInTransit reports a transport failure in err's chain.
func lostInTransit(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// Code returns the error code of the smithy.APIError in err's chain, ""
// when there is none. A namespace prefix ("com.amazonaws.events#") and a
// ":"-suffix ("…:http://internal.amazon.com/…") are stripped, as the SDK's
// deserializers do, so the result is the bare code ("ThrottlingException").
func Code(err error) string {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return ""
	}
	code := apiErr.ErrorCode()
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return code
}

// Backoff is exponential backoff with full jitter and a cap. The zero
// value waits not at all; callers set Base and Max (their defaults).
type Backoff struct {
	// Base is the upper bound of the first pause (attempt 0); it doubles
	// with each attempt.
	Base time.Duration
	// Max caps the bound; 0 or less means no cap.
	Max time.Duration
	// Sleep pauses (default SleepCtx).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter draws the pause from [0, bound] (default: uniform random).
	Jitter func(bound time.Duration) time.Duration
}

// Bound is the upper bound of the pause after attempt (0 for the first
// pause): min(Base<<attempt, Max), without overflow.
func (b Backoff) Bound(attempt int) time.Duration {
	d := b.Base
	if d <= 0 {
		return 0
	}
	for range max(attempt, 0) {
		if b.Max > 0 && d >= b.Max {
			break
		}
		if d > (1<<63-1)/2 {
			d = 1<<63 - 1
			break
		}
		d *= 2
	}
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	return d
}

// Draw is the pause after attempt: Jitter(Bound(attempt)).
func (b Backoff) Draw(attempt int) time.Duration {
	bound := b.Bound(attempt)
	if b.Jitter != nil {
		return b.Jitter(bound)
	}
	if bound <= 0 {
		return 0
	}
	return rand.N(bound + 1)
}

// Pause sleeps d with Sleep (default SleepCtx).
func (b Backoff) Pause(ctx context.Context, d time.Duration) error {
	if b.Sleep != nil {
		return b.Sleep(ctx, d)
	}
	return SleepCtx(ctx, d)
}

// Wait pauses after attempt (0 for the first pause): Pause(ctx,
// Draw(attempt)). It returns ctx.Err() when ctx is done first.
func (b Backoff) Wait(ctx context.Context, attempt int) error {
	return b.Pause(ctx, b.Draw(attempt))
}

// SleepCtx waits d or until ctx is done, whichever comes first; it returns
// ctx.Err() in the latter case.
func SleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
