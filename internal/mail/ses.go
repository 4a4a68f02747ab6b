package mail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// SESClient is the part of *sesv2.Client the SES sender uses.
type SESClient interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

var _ SESClient = (*sesv2.Client)(nil)

// Defaults for SES.
const (
	DefaultMaxAttempts = 5
	DefaultBackoff     = 200 * time.Millisecond
	// MaxBackoff caps a single pause between attempts.
	MaxBackoff = 10 * time.Second
)

// SES sends through Amazon SES v2 (SendEmail with simple content). It is
// the one place that retries sends: the client must not retry on its own
// (build it with NewSESClient), otherwise attempts multiply and throttling
// gets worse.
//
// Classification of failures:
//   - retried here, with exponential backoff and full jitter: throttling
//     (TooManyRequestsException, HTTP 429), server faults (HTTP 5xx,
//     InternalServiceErrorException, any error with a server fault) and
//     transport errors (connection refused/reset, timeouts);
//   - returned at once as *PermanentError: the message can never be sent as
//     it is (MessageRejected, BadRequestException, NotFoundException,
//     MailFromDomainNotVerifiedException, AccountSuspendedException,
//     SendingPausedException, invalid input) — dead-letter it;
//   - returned at once as an ordinary error: everything else, notably
//     LimitExceededException (a quota, which does not lift within seconds)
//     and authorization failures. They are not retried within the call but
//     are not permanent either: redelivery later may succeed.
//
// A retried attempt after an ambiguous failure (5xx, timeout) may deliver
// twice: delivery is at least once.
type SES struct {
	Client SESClient
	// From is the verified sender, "Name <addr>" or "addr". Required.
	// Addresses (From and Message.To) are parsed as RFC 5322 and sent
	// with non-ASCII display names RFC 2047-encoded, as SES requires; an
	// unparsable address is a *PermanentError.
	From string
	// ConfigurationSet is sent as ConfigurationSetName when not empty.
	ConfigurationSet string
	// MaxAttempts bounds the attempts per Send (default 5).
	MaxAttempts int
	// Backoff is the first pause's upper bound (default 200ms); it doubles
	// after each attempt, capped at MaxBackoff, and the actual pause is
	// drawn uniformly from [0, bound] (full jitter).
	Backoff time.Duration
	// Sleep pauses between attempts (default: a timer that returns
	// ctx.Err() early when ctx is done).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter draws the pause from [0, bound] (default: uniform random).
	// Tests inject it to get deterministic pauses.
	Jitter func(bound time.Duration) time.Duration
}

var _ Sender = (*SES)(nil)

// NewSESClient builds the SES v2 client the SES sender expects: the SDK's
// own retries are off (one attempt per call, retry.AddWithMaxAttempts(
// retry.NewStandard(), 1)) so that retries live in SES.Send only. endpoint,
// when not empty, overrides the service endpoint (tests, local stacks).
func NewSESClient(cfg aws.Config, endpoint string) *sesv2.Client {
	return sesv2.NewFromConfig(cfg, func(o *sesv2.Options) {
		o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(), 1)
		// cfg.RetryMaxAttempts would otherwise re-wrap the retryer.
		o.RetryMaxAttempts = 1
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// Send implements Sender. It returns the SES message id.
func (s *SES) Send(ctx context.Context, m Message) (string, error) {
	if s.Client == nil {
		return "", errors.New("mail: ses: no client")
	}
	if strings.TrimSpace(s.From) == "" {
		return "", &PermanentError{Err: errors.New("mail: ses: no From address")}
	}
	if err := m.validate(); err != nil {
		return "", fmt.Errorf("mail: ses: %w", err)
	}
	in, err := s.input(m)
	if err != nil {
		return "", fmt.Errorf("mail: ses: %w", err)
	}
	attempts := s.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	bound := s.Backoff
	if bound <= 0 {
		bound = DefaultBackoff
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		out, err := s.Client.SendEmail(ctx, in)
		if err == nil {
			if out == nil || out.MessageId == nil {
				return "", nil
			}
			return *out.MessageId, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", fmt.Errorf("mail: ses send (attempt %d): %w", attempt, ctxErr)
		}
		switch classify(err) {
		case permanent:
			return "", &PermanentError{Code: errorCode(err), Err: fmt.Errorf("mail: ses send: %w", err)}
		case fatal:
			return "", fmt.Errorf("mail: ses send: %w", err)
		}
		lastErr = err
		if attempt >= attempts {
			break
		}
		if err := s.sleep(ctx, s.jitter(bound)); err != nil {
			return "", fmt.Errorf("mail: ses send: backoff after attempt %d: %w", attempt, err)
		}
		bound = min(bound*2, MaxBackoff)
	}
	return "", fmt.Errorf("mail: ses send: giving up after %d attempts: %w", attempts, lastErr)
}

func (s *SES) input(m Message) (*sesv2.SendEmailInput, error) {
	from, err := formatAddress(s.From)
	if err != nil {
		return nil, err
	}
	to := make([]string, 0, len(m.To))
	for _, addr := range m.To {
		a, err := formatAddress(addr)
		if err != nil {
			return nil, err
		}
		to = append(to, a)
	}
	charset := aws.String("UTF-8")
	simple := &types.Message{
		Subject: &types.Content{Data: aws.String(oneLine(m.Subject, 0)), Charset: charset},
		Body:    &types.Body{},
	}
	if m.Text != "" {
		simple.Body.Text = &types.Content{Data: aws.String(m.Text), Charset: charset}
	}
	if m.HTML != "" {
		simple.Body.Html = &types.Content{Data: aws.String(m.HTML), Charset: charset}
	}
	if key := oneLine(m.IdempotencyKey, 0); key != "" {
		simple.Headers = []types.MessageHeader{{Name: aws.String(IdempotencyHeader), Value: aws.String(key)}}
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(from),
		Destination:      &types.Destination{ToAddresses: to},
		Content:          &types.EmailContent{Simple: simple},
		EmailTags:        sesTags(m),
	}
	if s.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(s.ConfigurationSet)
	}
	return in, nil
}

// sesTags turns Message.Tags and the idempotency key into SES message tags,
// sorted by name. SES accepts only [A-Za-z0-9_-], at most 256 characters,
// in tag names and values: other characters become '_'; tags whose name
// or value ends up empty are dropped rather than failing the send.
func sesTags(m Message) []types.MessageTag {
	tags := make(map[string]string, len(m.Tags)+1)
	for k, v := range m.Tags {
		if k, v := sesTagText(k), sesTagText(v); k != "" && v != "" {
			tags[k] = v
		}
	}
	if v := sesTagText(m.IdempotencyKey); v != "" {
		tags[IdempotencyTag] = v
	}
	if len(tags) == 0 {
		return nil
	}
	names := make([]string, 0, len(tags))
	for k := range tags {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]types.MessageTag, 0, len(names))
	for _, k := range names {
		out = append(out, types.MessageTag{Name: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func sesTagText(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		if b.Len() == 256 {
			break
		}
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func (s *SES) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	return sleepCtx(ctx, d)
}

func (s *SES) jitter(bound time.Duration) time.Duration {
	if s.Jitter != nil {
		return s.Jitter(bound)
	}
	if bound <= 0 {
		return 0
	}
	return rand.N(bound + 1)
}

// sleepCtx waits d or until ctx is done, whichever comes first.
func sleepCtx(ctx context.Context, d time.Duration) error {
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

type class int

const (
	retryable class = iota // try again within this call
	permanent              // never succeeds as is: dead-letter
	fatal                  // not retried here, may succeed on redelivery
)

// permanentCodes are the SES v2 SendEmail errors that no retry can fix.
var permanentCodes = map[string]bool{
	"BadRequestException":                true,
	"MessageRejected":                    true,
	"MailFromDomainNotVerifiedException": true,
	"AccountSuspendedException":          true,
	"SendingPausedException":             true,
	"NotFoundException":                  true,
}

// throttleCodes are retried like HTTP 429 whatever the status code.
var throttleCodes = map[string]bool{
	"TooManyRequestsException": true,
	"ThrottlingException":      true,
	"Throttling":               true,
}

// classify is the single retry decision for SendEmail errors.
func classify(err error) class {
	code := errorCode(err)
	switch {
	case permanentCodes[code]:
		return permanent
	case throttleCodes[code]:
		return retryable
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultServer {
		return retryable
	}
	// The SDK wraps every failed attempt in a ResponseError; its status is
	// 0 when no response arrived (transport error, handled below).
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		if st := re.HTTPStatusCode(); st == http.StatusTooManyRequests || st >= 500 {
			return retryable
		}
		return fatal
	}
	var invalid smithy.InvalidParamsError
	var invalidPtr *smithy.InvalidParamsError
	if errors.As(err, &invalid) || errors.As(err, &invalidPtr) {
		return permanent // the SDK's input validation: the same input fails again
	}
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	if errors.As(err, &sendErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return retryable
	}
	return fatal
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
