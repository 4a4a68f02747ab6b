package eventbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dynastream/dynastream/awserr"
)

// API is the part of *eventbridge.Client the Publisher uses.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ API = (*eventbridge.Client)(nil)

// Limits and defaults.
const (
	// MaxEntriesLimit is the most entries PutEvents accepts in one call.
	MaxEntriesLimit = 10
	// DefaultMaxBytes is the PutEvents limit on the total size of a call's
	// entries (Entry.Size), 256 KB.
	DefaultMaxBytes    = 256 * 1024
	DefaultMaxAttempts = 5
	DefaultBackoff     = 100 * time.Millisecond
	// MaxBackoff caps a single pause between attempts.
	MaxBackoff = 5 * time.Second
	// DefaultCallTimeout is Publisher.CallTimeout's default.
	DefaultCallTimeout = 10 * time.Second
)

// Publisher publishes entries to one EventBridge bus with PutEvents. It is
// the one place that retries: the client must not retry on its own (build
// it with NewClient), otherwise attempts multiply and throttling gets
// worse. See the package documentation for the chunking, the failure
// classification and the delivery guarantees.
//
// A Publisher is safe for concurrent use when its Client, Sleep, Jitter
// and Logger are; Publish does not modify it.
type Publisher struct {
	Client API
	// BusName is set as EventBusName on every entry (name or ARN); ""
	// leaves it unset, which means the account's default bus.
	BusName string
	// MaxEntries bounds the entries per call (default and maximum 10).
	MaxEntries int
	// MaxBytes bounds the total size (Entry.Size) of a call's entries and
	// so the size of one entry (default 256 KB).
	MaxBytes int
	// MaxAttempts bounds the attempts per entry (default 5).
	MaxAttempts int
	// Backoff is the first pause's upper bound (default 100ms); it doubles
	// after each attempt, capped at MaxBackoff, and the actual pause is
	// drawn uniformly from [0, bound] (full jitter).
	Backoff time.Duration
	// Sleep pauses between attempts (default: a timer that returns
	// ctx.Err() early when ctx is done).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter draws the pause from [0, bound] (default: uniform random).
	// Tests inject it to get deterministic pauses.
	Jitter func(bound time.Duration) time.Duration
	// Logger receives entries that are dropped or given up on and retries
	// (default slog.Default()).
	Logger *slog.Logger
	// CallTimeout bounds one PutEvents call (default DefaultCallTimeout),
	// so that a call that hangs is retried within the invocation instead
	// of using up its time; the context's own deadline, when sooner, wins.
	// A call that timed out may have been accepted: the entries are sent
	// again (at least once).
	CallTimeout time.Duration
	// TooLarge, when set, is the claim check for an entry over MaxBytes:
	// it stores what the entry carries elsewhere (S3, a table) and returns
	// the entry to publish in its place, a reference to it. Without it, or
	// when its entry is still too large, the entry gets a *TooLargeError,
	// to dead-letter; when it fails, an error to redeliver (not
	// permanent). It runs before anything is sent, so it must be
	// idempotent too: the same record may come again.
	TooLarge func(ctx context.Context, e Entry) (Entry, error)
	// InOrder keeps a Publish's entries in their order under failures: a
	// chunk (one PutEvents call with its retries) that leaves an entry
	// failed for a reason that may pass — an error the caller sends again
	// later, not a permanent one — stops the Publish there, and the later
	// chunks' entries are not sent (ErrNotSent), so that none goes out
	// before an earlier one that will come again. A claim check that failed
	// (TooLarge) stops the entries after it the same way. Within one call
	// EventBridge can accept an entry after one it fails; that call's
	// accepted entries are out already. Off, every chunk is sent whatever
	// the others did.
	InOrder bool
	// OnCall, when set, is told about every PutEvents call: a metrics
	// hook (the count of entries, failures and throttles, the duration).
	// It must be quick and safe for concurrent use if Publish is called
	// concurrently.
	OnCall func(Call)
}

// Call is what one PutEvents call did, for Publisher.OnCall.
type Call struct {
	// Attempt is 1 for the first call of these entries, 2 for the first
	// retry, …
	Attempt int
	// Entries is how many entries the call carried, Bytes their size.
	Entries, Bytes int
	// Failed is how many of them were not accepted (all of them when the
	// call failed as a whole).
	Failed int
	// Throttled says the call, or one of its entries, was throttled.
	Throttled bool
	// Err is the call's own error (nil when EventBridge answered, even
	// with failed entries).
	Err      error
	Duration time.Duration
}

// NewClient builds the EventBridge client the Publisher expects: the SDK's
// own retries are off (one attempt per call, retry.AddWithMaxAttempts(
// retry.NewStandard(), 1)) so that retries live in Publisher.Publish only.
// endpoint, when not empty, overrides the service endpoint (tests, local
// stacks).
func NewClient(cfg aws.Config, endpoint string) *eventbridge.Client {
	return eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) {
		o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(), 1)
		// cfg.RetryMaxAttempts would otherwise re-wrap the retryer.
		o.RetryMaxAttempts = 1
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// settings are a Publisher's limits with the defaults applied.
type settings struct {
	maxEntries  int
	maxBytes    int
	maxAttempts int
	backoff     awserr.Backoff
	log         *slog.Logger
	callTimeout time.Duration
}

func (p *Publisher) settings() settings {
	s := settings{
		maxEntries:  p.MaxEntries,
		maxBytes:    p.MaxBytes,
		maxAttempts: p.MaxAttempts,
		backoff:     awserr.Backoff{Base: p.Backoff, Max: MaxBackoff, Sleep: p.Sleep, Jitter: p.Jitter},
		log:         p.Logger,
		callTimeout: p.CallTimeout,
	}
	if s.callTimeout <= 0 {
		s.callTimeout = DefaultCallTimeout
	}
	if s.maxEntries <= 0 || s.maxEntries > MaxEntriesLimit {
		s.maxEntries = MaxEntriesLimit
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	if s.maxAttempts <= 0 {
		s.maxAttempts = DefaultMaxAttempts
	}
	if s.backoff.Base <= 0 {
		s.backoff.Base = DefaultBackoff
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// Publish publishes entries and returns one error per entry, in input
// order: nil when EventBridge accepted the entry, otherwise why not —
// *TooLargeError or *PermanentError (see IsPermanent) for entries to
// dead-letter, any other error for entries to redeliver (report them as
// batch item failures). When ctx is done, the entries not yet published
// get an error that wraps ctx.Err().
func (p *Publisher) Publish(ctx context.Context, entries []Entry) []error {
	errs := make([]error, len(entries))
	if len(entries) == 0 {
		return errs
	}
	if p.Client == nil {
		err := errors.New("eventbus: no client")
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	s := p.settings()
	sizes := make([]int, len(entries))
	pending := make([]int, 0, len(entries))
	copied := false // entries is the caller's until a claim check replaces one
	for i, e := range entries {
		sizes[i] = e.Size()
		if sizes[i] > s.maxBytes {
			ref, err := p.claimCheck(ctx, s, e, i, sizes[i])
			if err != nil {
				errs[i] = err
				continue
			}
			if !copied {
				entries, copied = append([]Entry(nil), entries...), true
			}
			entries[i], sizes[i] = ref, ref.Size()
		}
		pending = append(pending, i)
	}
	held := len(entries) // with InOrder: the first entry a failure holds the later ones back at
	if p.InOrder {
		for i, err := range errs {
			if err != nil && !IsPermanent(err) {
				held = i
				break
			}
		}
	}
	for start := 0; start < len(pending); {
		end := nextChunk(pending, sizes, start, s.maxEntries, s.maxBytes)
		for k := start; k < end; k++ { // a chunk stops before a held-back entry
			if pending[k] > held {
				end = max(k, start)
				break
			}
		}
		if end == start {
			for _, i := range pending[start:] {
				errs[i] = fmt.Errorf("%w (entry %d waits for entry %d)", ErrNotSent, i, held)
			}
			break
		}
		chunk := pending[start:end]
		p.publishChunk(ctx, s, entries, sizes, chunk, errs)
		if p.InOrder {
			for _, i := range chunk {
				if errs[i] != nil && !IsPermanent(errs[i]) {
					held = min(held, i)
					break
				}
			}
		}
		start = end
	}
	return errs
}

// ErrNotSent is the error of an entry a Publisher with InOrder did not send
// because an earlier entry failed for a reason that may pass: send it again
// after that one.
var ErrNotSent = errors.New("eventbus: not sent: an earlier entry failed, and InOrder keeps the order")

// claimCheck handles e (entries[i]), too large at size: the TooLarge
// hook's replacement, or why there is none. A hook that fails gives an
// error to redeliver (its store may be back on the next try); a hook that
// does not shrink the entry, or no hook, a *TooLargeError, which is
// permanent.
func (p *Publisher) claimCheck(ctx context.Context, s settings, e Entry, i, size int) (Entry, error) {
	tl := &TooLargeError{Source: e.Source, DetailType: e.DetailType, Size: size, Limit: s.maxBytes}
	if p.TooLarge != nil {
		ref, err := p.TooLarge(ctx, e)
		if err != nil {
			s.log.Warn("eventbus: the TooLarge hook failed; the entry is not sent this time",
				"source", e.Source, "detail_type", e.DetailType, "size", size, "index", i, "error", err)
			return Entry{}, fmt.Errorf("eventbus: entry %s/%s is %d bytes; the TooLarge hook failed: %w", e.Source, e.DetailType, size, err)
		}
		if ref.Size() <= s.maxBytes {
			return ref, nil
		}
		tl.Err = fmt.Errorf("the TooLarge hook's entry is %d bytes, still over the limit", ref.Size())
	}
	s.log.Error("eventbus: entry too large for PutEvents, not sent",
		"source", e.Source, "detail_type", e.DetailType, "size", size, "limit", s.maxBytes, "index", i, "error", tl.Err)
	return Entry{}, tl
}

// nextChunk returns the end of the chunk of pending that starts at start:
// as many entries as fit, in order, within maxEntries entries and maxBytes
// total size. Every pending entry fits on its own, so a chunk is never
// empty.
func nextChunk(pending, sizes []int, start, maxEntries, maxBytes int) int {
	end, total := start, 0
	for end < len(pending) && end-start < maxEntries {
		sz := sizes[pending[end]]
		if end > start && total+sz > maxBytes {
			break
		}
		total += sz
		end++
	}
	return end
}

// publishChunk sends the entries idx (one chunk) until each is published,
// fails for good, or runs out of attempts, and records the outcome in errs.
// Only the entries that failed retryably are sent again.
func (p *Publisher) publishChunk(ctx context.Context, s settings, entries []Entry, sizes, idx []int, errs []error) {
	todo := idx
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			setAll(errs, todo, fmt.Errorf("eventbus: put events (attempt %d): %w", attempt, err))
			return
		}
		callCtx, cancel := context.WithTimeout(ctx, s.callTimeout)
		began := time.Now()
		out, err := p.Client.PutEvents(callCtx, p.input(entries, todo))
		timedOut := err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			err = fmt.Errorf("the call took longer than %v (it may have been accepted): %w", s.callTimeout, err)
		}
		if p.OnCall != nil {
			p.observe(Call{Attempt: attempt, Entries: len(todo), Bytes: sum(sizes, todo), Err: err, Duration: time.Since(began)}, out)
		}
		var retry []int
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				setAll(errs, todo, fmt.Errorf("eventbus: put events (attempt %d): %w", attempt, ctxErr))
				return
			}
			switch class := classifyCall(err); {
			case timedOut: // our own timeout: retryable
			case class == awserr.Permanent:
				setAll(errs, todo, &PermanentError{Code: awserr.Code(err), Message: err.Error()})
				s.log.Error("eventbus: put events rejected the input", "entries", len(todo), "error", err)
				return
			case class == awserr.Fatal:
				setAll(errs, todo, fmt.Errorf("eventbus: put events: %w", err))
				s.log.Error("eventbus: put events failed, not retried", "entries", len(todo), "code", awserr.Code(err), "error", err)
				return
			}
			setAll(errs, todo, fmt.Errorf("eventbus: put events (attempt %d): %w", attempt, err))
			retry = todo
		} else {
			retry = p.results(s, entries, todo, out, errs)
		}
		if len(retry) == 0 {
			return
		}
		if attempt >= s.maxAttempts {
			for _, i := range retry {
				errs[i] = fmt.Errorf("eventbus: giving up after %d attempts: %w", attempt, errs[i])
			}
			s.log.Error("eventbus: giving up on entries", "entries", len(retry), "attempts", attempt, "error", errs[retry[0]])
			return
		}
		pause := s.backoff.Draw(attempt - 1)
		s.log.Warn("eventbus: retrying entries", "entries", len(retry), "attempt", attempt, "pause", pause, "error", errs[retry[0]])
		if err := s.backoff.Pause(ctx, pause); err != nil {
			setAll(errs, retry, fmt.Errorf("eventbus: backoff after attempt %d: %w", attempt, err))
			return
		}
		todo = retry
	}
}

// results records the outcome of each entry of a successful call (matched
// by position, as PutEvents documents) and returns those to send again.
func (p *Publisher) results(s settings, entries []Entry, todo []int, out *eventbridge.PutEventsOutput, errs []error) []int {
	if out == nil || out.FailedEntryCount == 0 {
		setAll(errs, todo, nil)
		return nil
	}
	if len(out.Entries) != len(todo) {
		// Failures that cannot be matched to entries: send them all again
		// (at least once).
		setAll(errs, todo, &EntryError{Message: fmt.Sprintf(
			"put events reported %d failed entries but %d results for %d entries",
			out.FailedEntryCount, len(out.Entries), len(todo))})
		return todo
	}
	var retry []int
	for k, i := range todo {
		r := out.Entries[k]
		code, msg := aws.ToString(r.ErrorCode), aws.ToString(r.ErrorMessage)
		if code == "" {
			if aws.ToString(r.EventId) != "" {
				errs[i] = nil
				continue
			}
			// A failure without a code: treat it as transient.
			errs[i] = &EntryError{Message: "no event id and no error code in the result"}
			retry = append(retry, i)
			continue
		}
		switch classifyEntry(code) {
		case awserr.Retryable:
			errs[i] = &EntryError{Code: code, Message: msg}
			retry = append(retry, i)
		case awserr.Permanent:
			errs[i] = &PermanentError{Code: code, Message: msg}
			s.log.Error("eventbus: entry rejected permanently",
				"source", entries[i].Source, "detail_type", entries[i].DetailType, "code", code, "message", msg, "index", i)
		default:
			errs[i] = &EntryError{Code: code, Message: msg}
			s.log.Error("eventbus: entry rejected, not retried",
				"source", entries[i].Source, "detail_type", entries[i].DetailType, "code", code, "message", msg, "index", i)
		}
	}
	return retry
}

// input builds the PutEvents request for entries[idx...].
func (p *Publisher) input(entries []Entry, idx []int) *eventbridge.PutEventsInput {
	var bus *string
	if p.BusName != "" {
		bus = aws.String(p.BusName)
	}
	req := make([]types.PutEventsRequestEntry, len(idx))
	for k, i := range idx {
		e := &entries[i]
		r := &req[k]
		r.EventBusName = bus
		r.Source = aws.String(e.Source)
		r.DetailType = aws.String(e.DetailType)
		if len(e.Detail) > 0 {
			r.Detail = aws.String(string(e.Detail))
		}
		if !e.Time.IsZero() {
			t := e.Time
			r.Time = &t
		}
		if len(e.Resources) > 0 {
			r.Resources = e.Resources
		}
		if e.TraceHeader != "" {
			r.TraceHeader = aws.String(e.TraceHeader)
		}
	}
	return &eventbridge.PutEventsInput{Entries: req}
}

// observe tells OnCall about a call.
func (p *Publisher) observe(c Call, out *eventbridge.PutEventsOutput) {
	switch {
	case c.Err != nil:
		c.Failed = c.Entries
		var re *smithyhttp.ResponseError
		c.Throttled = throttleCodes[awserr.Code(c.Err)] || (errors.As(c.Err, &re) && re.HTTPStatusCode() == http.StatusTooManyRequests)
	case out != nil:
		c.Failed = int(out.FailedEntryCount)
		for _, r := range out.Entries {
			if throttleCodes[aws.ToString(r.ErrorCode)] {
				c.Throttled = true
			}
		}
	}
	p.OnCall(c)
}

func sum(sizes, idx []int) int {
	n := 0
	for _, i := range idx {
		n += sizes[i]
	}
	return n
}

func setAll(errs []error, idx []int, err error) {
	for _, i := range idx {
		errs[i] = err
	}
}
