package mail

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/dynastream/dynastream/awserr"
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
	backoff := awserr.Backoff{Base: s.Backoff, Max: MaxBackoff, Sleep: s.Sleep, Jitter: s.Jitter}
	if backoff.Base <= 0 {
		backoff.Base = DefaultBackoff
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
		switch awserr.Classify(err, throttleCodes, permanentCodes) {
		case awserr.Permanent:
			return "", &PermanentError{Code: awserr.Code(err), Err: fmt.Errorf("mail: ses send: %w", err)}
		case awserr.Fatal:
			return "", fmt.Errorf("mail: ses send: %w", err)
		}
		lastErr = err
		if attempt >= attempts {
			break
		}
		if err := backoff.Wait(ctx, attempt-1); err != nil {
			return "", fmt.Errorf("mail: ses send: backoff after attempt %d: %w", attempt, err)
		}
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

// permanentCodes are the SES v2 SendEmail errors that no retry can fix
// (awserr.Classify adds the SDK's own input validation).
var permanentCodes = map[string]bool{
	"BadRequestException":                true,
	"MessageRejected":                    true,
	"MailFromDomainNotVerifiedException": true,
	"AccountSuspendedException":          true,
	"SendingPausedException":             true,
	"NotFoundException":                  true,
}

// throttleCodes are retried like HTTP 429 whatever the status code. The
// rest of the decision (server faults, 429/5xx, other 4xx, transport
// errors) is awserr.Classify's.
var throttleCodes = map[string]bool{
	"TooManyRequestsException": true,
	"ThrottlingException":      true,
	"Throttling":               true,
}
