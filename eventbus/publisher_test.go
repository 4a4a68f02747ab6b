package eventbus_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/eventbus"
)

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
	}
}

func callSizes(calls [][]wireEntry) (counts, sizes []int) {
	for _, c := range calls {
		total := 0
		for _, e := range c {
			total += wireSize(e)
		}
		counts = append(counts, len(c))
		sizes = append(sizes, total)
	}
	return counts, sizes
}

// checkGreedy checks that each call but the last was full: the first
// entry of the next call would not have fitted.
func checkGreedy(t *testing.T, calls [][]wireEntry, maxEntries, maxBytes int) {
	t.Helper()
	_, sizes := callSizes(calls)
	for i := 0; i+1 < len(calls); i++ {
		if len(calls[i]) < maxEntries && sizes[i]+wireSize(calls[i+1][0]) <= maxBytes {
			t.Errorf("call %d (%d entries, %d bytes) had room for the next entry (%d bytes)",
				i+1, len(calls[i]), sizes[i], wireSize(calls[i+1][0]))
		}
	}
}

func TestPublishChunksManySmallEntries(t *testing.T) {
	f := newFakeBus(t)
	sl := &sleeps{}
	var entries []eventbus.Entry
	for i := range 95 {
		entries = append(entries, entry(i))
	}
	errs := f.publisher(sl, &logBuffer{}).Publish(context.Background(), entries)
	if len(errs) != len(entries) {
		t.Fatalf("%d errors for %d entries", len(errs), len(entries))
	}
	noErrors(t, errs)

	calls := f.allCalls()
	counts, _ := callSizes(calls)
	if diff := cmp.Diff([]int{10, 10, 10, 10, 10, 10, 10, 10, 10, 5}, counts); diff != "" {
		t.Errorf("entries per call (-want +got):\n%s", diff)
	}
	var sent []wireEntry
	for _, c := range calls {
		sent = append(sent, c...)
	}
	if diff := cmp.Diff(entryDetails(entries), details(sent)); diff != "" {
		t.Errorf("order across calls (-want +got):\n%s", diff)
	}
	if len(sl.got()) != 0 {
		t.Errorf("sleeps %v, want none", sl.got())
	}
}

func TestPublishChunksLargeEntries(t *testing.T) {
	const limit = eventbus.DefaultMaxBytes // 262144
	tests := []struct {
		name  string
		sizes []int
		want  []int // entries per call
	}{
		{
			name:  "100KB entries, two per call",
			sizes: []int{100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000},
			want:  []int{2, 2, 2, 1},
		},
		{
			name: "mix",
			sizes: []int{
				150_000, 100_000, 1_000, 1_000, 1_000, // 253000, the next (200000) does not fit
				200_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, // 10 entries
				1_000, 1_000, 1_000, // the next is the limit on its own
				limit,
				1_000,
			},
			want: []int{5, 10, 3, 1, 1},
		},
		{
			name:  "exactly the limit in total",
			sizes: []int{limit / 2, limit / 2, limit/2 + 1, limit / 2},
			want:  []int{2, 1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBus(t)
			var entries []eventbus.Entry
			for i, sz := range tt.sizes {
				entries = append(entries, sized(i, sz))
			}
			errs := f.publisher(&sleeps{}, &logBuffer{}).Publish(context.Background(), entries)
			noErrors(t, errs)
			calls := f.allCalls()
			counts, sizes := callSizes(calls)
			if diff := cmp.Diff(tt.want, counts); diff != "" {
				t.Errorf("entries per call (-want +got):\n%s", diff)
			}
			for i, sz := range sizes {
				if sz > limit || len(calls[i]) > 10 {
					t.Errorf("call %d: %d entries, %d bytes", i+1, len(calls[i]), sz)
				}
			}
			checkGreedy(t, calls, 10, limit)
			var sent []wireEntry
			for _, c := range calls {
				sent = append(sent, c...)
			}
			if diff := cmp.Diff(entryDetails(entries), details(sent)); diff != "" {
				t.Errorf("order across calls differs")
			}
			for i, e := range sent {
				if got, want := wireSize(e), entries[i].Size(); got != want {
					t.Errorf("entry %d: size on the wire %d, Entry.Size %d", i, got, want)
				}
			}
		})
	}
}

func TestPublishSmallerLimits(t *testing.T) {
	f := newFakeBus(t)
	f.maxBytes = 1000
	p := f.publisher(&sleeps{}, &logBuffer{})
	p.MaxEntries = 3
	p.MaxBytes = 1000
	var entries []eventbus.Entry
	for i, sz := range []int{100, 100, 100, 100, 400, 400, 300, 999, 64} {
		entries = append(entries, sized(i, sz))
	}
	noErrors(t, p.Publish(context.Background(), entries))
	counts, _ := callSizes(f.allCalls())
	if diff := cmp.Diff([]int{3, 3, 1, 1, 1}, counts); diff != "" {
		t.Errorf("entries per call (-want +got):\n%s", diff)
	}
	checkGreedy(t, f.allCalls(), 3, 1000)
}

func TestPublishCarriesFields(t *testing.T) {
	f := newFakeBus(t)
	entries := []eventbus.Entry{
		{
			Source:      "dynastream.collab",
			DetailType:  "InviteAccepted",
			Detail:      []byte(`{"id":"a-1","data":{"name":"Zoë 😀"}}`),
			Time:        baseTime,
			Resources:   []string{"arn:aws:dynamodb:us-east-1:123456789012:table/Main", "arn:aws:x:::é"},
			TraceHeader: "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1",
		},
		{
			Source:     "dynastream.listing",
			DetailType: "ListingStatusChanged",
			Detail:     []byte(`{"id":"b-1"}`),
		},
	}
	noErrors(t, f.publisher(&sleeps{}, &logBuffer{}).Publish(context.Background(), entries))
	calls := f.allCalls()
	if len(calls) != 1 || len(calls[0]) != 2 {
		t.Fatalf("calls %v, want one call with 2 entries", calls)
	}
	for i, got := range calls[0] {
		want := entries[i]
		if got.EventBusName != "dynastream-domain" {
			t.Errorf("entry %d: EventBusName %q", i, got.EventBusName)
		}
		if got.Source != want.Source || got.DetailType != want.DetailType || got.Detail != string(want.Detail) {
			t.Errorf("entry %d: got %q/%q/%q", i, got.Source, got.DetailType, got.Detail)
		}
		if diff := cmp.Diff(want.Resources, got.Resources); diff != "" {
			t.Errorf("entry %d: Resources (-want +got):\n%s", i, diff)
		}
		if got.TraceHeader != want.TraceHeader {
			t.Errorf("entry %d: TraceHeader %q", i, got.TraceHeader)
		}
		switch {
		case want.Time.IsZero() && got.Time != nil:
			t.Errorf("entry %d: Time %v, want none", i, *got.Time)
		case !want.Time.IsZero() && (got.Time == nil || !wireTime(*got.Time).Equal(want.Time)):
			t.Errorf("entry %d: Time %v, want %v", i, got.Time, want.Time)
		}
		if wireSize(got) != want.Size() {
			t.Errorf("entry %d: size on the wire %d, Entry.Size %d", i, wireSize(got), want.Size())
		}
	}
}

func TestPublishDefaultBus(t *testing.T) {
	f := newFakeBus(t)
	p := f.publisher(&sleeps{}, &logBuffer{})
	p.BusName = ""
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(1)}))
	if got := f.allCalls()[0][0].EventBusName; got != "" {
		t.Errorf("EventBusName %q, want unset", got)
	}
}

func TestPublishTooLarge(t *testing.T) {
	f := newFakeBus(t)
	log := &logBuffer{}
	entries := []eventbus.Entry{
		entry(0),
		sizedAs(1, eventbus.DefaultMaxBytes+1, "dynastream.media", "AttachmentAdded"),
		entry(2),
		sized(3, eventbus.DefaultMaxBytes),
	}
	errs := f.publisher(&sleeps{}, log).Publish(context.Background(), entries)

	var tl *eventbus.TooLargeError
	if !errors.As(errs[1], &tl) {
		t.Fatalf("entry 1: %v, want *TooLargeError", errs[1])
	}
	want := eventbus.TooLargeError{Source: "dynastream.media", DetailType: "AttachmentAdded", Size: eventbus.DefaultMaxBytes + 1, Limit: eventbus.DefaultMaxBytes}
	if *tl != want {
		t.Errorf("TooLargeError %+v, want %+v", *tl, want)
	}
	if !eventbus.IsPermanent(errs[1]) {
		t.Error("a too large entry is not permanent")
	}
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Errorf("entry %d: %v", i, errs[i])
		}
	}
	if n := f.timesSeen(entries[1].Detail); n != 0 {
		t.Errorf("too large entry sent %d times", n)
	}
	counts, _ := callSizes(f.allCalls())
	if diff := cmp.Diff([]int{2, 1}, counts); diff != "" {
		t.Errorf("entries per call (-want +got):\n%s", diff)
	}
	out := log.String()
	for _, s := range []string{"level=ERROR", "too large", "source=dynastream.media", "detail_type=AttachmentAdded", "size=262145", "limit=262144"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
}

func TestPublishRetriesFailedEntriesOnly(t *testing.T) {
	f := newFakeBus(t)
	var entries []eventbus.Entry
	for i := range 10 {
		entries = append(entries, entry(i))
	}
	failing := map[string]string{
		string(entries[2].Detail): "InternalFailure",
		string(entries[5].Detail): "ThrottlingException",
		string(entries[7].Detail): "InternalFailure",
	}
	f.failEntry = func(e wireEntry, seen int) string {
		if seen <= 2 {
			return failing[e.Detail]
		}
		return ""
	}
	sl := &sleeps{}
	errs := f.publisher(sl, &logBuffer{}).Publish(context.Background(), entries)
	noErrors(t, errs)

	calls := f.allCalls()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	retried := []string{string(entries[2].Detail), string(entries[5].Detail), string(entries[7].Detail)}
	for _, c := range calls[1:] {
		if diff := cmp.Diff(retried, details(c)); diff != "" {
			t.Errorf("resent entries (-want +got):\n%s", diff)
		}
	}
	for i, e := range entries {
		want := 1
		if failing[string(e.Detail)] != "" {
			want = 3
		}
		if got := f.timesSeen(e.Detail); got != want {
			t.Errorf("entry %d sent %d times, want %d", i, got, want)
		}
	}
	if diff := cmp.Diff([]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, sl.got()); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
}

func TestPublishPermanentEntryFailure(t *testing.T) {
	f := newFakeBus(t)
	log := &logBuffer{}
	var entries []eventbus.Entry
	for i := range 6 {
		entries = append(entries, entry(i))
	}
	f.failEntry = func(e wireEntry, seen int) string {
		switch e.Detail {
		case string(entries[3].Detail):
			return "MalformedDetail"
		case string(entries[4].Detail):
			if seen == 1 {
				return "InternalFailure"
			}
		}
		return ""
	}
	sl := &sleeps{}
	errs := f.publisher(sl, log).Publish(context.Background(), entries)

	var pe *eventbus.PermanentError
	if !errors.As(errs[3], &pe) {
		t.Fatalf("entry 3: %v, want *PermanentError", errs[3])
	}
	if pe.Code != "MalformedDetail" || pe.Message != "scripted MalformedDetail" {
		t.Errorf("PermanentError %+v", *pe)
	}
	if !eventbus.IsPermanent(errs[3]) {
		t.Error("IsPermanent = false")
	}
	for i, err := range errs {
		if i != 3 && err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
	}
	if n := f.timesSeen(entries[3].Detail); n != 1 {
		t.Errorf("permanently failed entry sent %d times, want 1", n)
	}
	if n := f.timesSeen(entries[4].Detail); n != 2 {
		t.Errorf("transiently failed entry sent %d times, want 2", n)
	}
	if len(f.allCalls()) != 2 || len(sl.got()) != 1 {
		t.Errorf("%d calls, sleeps %v; want 2 calls, 1 sleep", len(f.allCalls()), sl.got())
	}
	if out := log.String(); !strings.Contains(out, "code=MalformedDetail") {
		t.Errorf("log lacks the permanent failure:\n%s", out)
	}
}

func TestPublishConfigurationEntryFailureIsNotRetried(t *testing.T) {
	for _, code := range []string{"NotAuthorizedForSourceException", "NotAuthorizedForDetailTypeException", "AccessDeniedException"} {
		t.Run(code, func(t *testing.T) {
			f := newFakeBus(t)
			entries := []eventbus.Entry{entry(0), entry(1)}
			f.failEntry = func(e wireEntry, _ int) string {
				if e.Detail == string(entries[1].Detail) {
					return code
				}
				return ""
			}
			sl := &sleeps{}
			errs := f.publisher(sl, &logBuffer{}).Publish(context.Background(), entries)
			if errs[0] != nil {
				t.Errorf("entry 0: %v", errs[0])
			}
			var ee *eventbus.EntryError
			if !errors.As(errs[1], &ee) || ee.Code != code {
				t.Fatalf("entry 1: %v, want *EntryError %s", errs[1], code)
			}
			if eventbus.IsPermanent(errs[1]) {
				t.Error("a configuration failure is permanent")
			}
			if len(f.allCalls()) != 1 || len(sl.got()) != 0 {
				t.Errorf("%d calls, sleeps %v; want 1 call, no sleep", len(f.allCalls()), sl.got())
			}
		})
	}
}

func TestPublishGivesUpAfterMaxAttempts(t *testing.T) {
	f := newFakeBus(t)
	log := &logBuffer{}
	entries := []eventbus.Entry{entry(0), entry(1), entry(2)}
	f.failEntry = func(e wireEntry, _ int) string {
		if e.Detail == string(entries[1].Detail) {
			return "InternalFailure"
		}
		return ""
	}
	sl := &sleeps{}
	p := f.publisher(sl, log)
	p.MaxAttempts = 4
	errs := p.Publish(context.Background(), entries)

	var ee *eventbus.EntryError
	if !errors.As(errs[1], &ee) || ee.Code != "InternalFailure" {
		t.Fatalf("entry 1: %v, want *EntryError InternalFailure", errs[1])
	}
	if eventbus.IsPermanent(errs[1]) {
		t.Error("a retryable failure is permanent after the last attempt")
	}
	if !strings.Contains(errs[1].Error(), "giving up after 4 attempts") {
		t.Errorf("error %q", errs[1])
	}
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("errors %v", errs)
	}
	if n := f.timesSeen(entries[1].Detail); n != 4 {
		t.Errorf("failing entry sent %d times, want 4", n)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if diff := cmp.Diff(want, sl.got()); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
	if out := log.String(); !strings.Contains(out, "giving up") {
		t.Errorf("log lacks the give-up:\n%s", out)
	}
}

func TestPublishBackoffIsCapped(t *testing.T) {
	f := newFakeBus(t)
	f.failEntry = func(wireEntry, int) string { return "ThrottlingException" }
	sl := &sleeps{}
	p := f.publisher(sl, &logBuffer{})
	p.Backoff = 2 * time.Second
	errs := p.Publish(context.Background(), []eventbus.Entry{entry(0)})
	if errs[0] == nil {
		t.Fatal("no error")
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, sl.got()); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
	if n := len(f.allCalls()); n != 5 {
		t.Errorf("%d calls, want 5 (default MaxAttempts)", n)
	}
}

func TestPublishJitterDrawsWithinBound(t *testing.T) {
	f := newFakeBus(t)
	f.failEntry = func(_ wireEntry, seen int) string {
		if seen < 5 {
			return "InternalFailure"
		}
		return ""
	}
	sl := &sleeps{}
	p := f.publisher(sl, &logBuffer{})
	p.Jitter = nil // the default: uniform in [0, bound]
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(0)}))
	bounds := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	got := sl.got()
	if len(got) != len(bounds) {
		t.Fatalf("sleeps %v", got)
	}
	for i, d := range got {
		if d < 0 || d > bounds[i] {
			t.Errorf("pause %d = %v, want within [0, %v]", i, d, bounds[i])
		}
	}
}

func TestPublishRetriesWholeCall(t *testing.T) {
	tests := []struct {
		name     string
		failures []*callFailure
	}{
		{"throttled", []*callFailure{throttled(), throttled()}},
		{"throttled with a namespaced code", []*callFailure{{status: http.StatusBadRequest, body: `{"__type":"com.amazonaws.eventbridge#ThrottlingException","message":"Rate exceeded"}`}}},
		{"429", []*callFailure{{status: http.StatusTooManyRequests, body: `{}`}}},
		{"5xx", []*callFailure{apiError(http.StatusInternalServerError, "InternalException"), {status: http.StatusServiceUnavailable}}},
		{"connection closed", []*callFailure{{hijack: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBus(t)
			f.failCall = func(call int) *callFailure {
				if call <= len(tt.failures) {
					return tt.failures[call-1]
				}
				return nil
			}
			var entries []eventbus.Entry
			for i := range 4 {
				entries = append(entries, entry(i))
			}
			sl := &sleeps{}
			errs := f.publisher(sl, &logBuffer{}).Publish(context.Background(), entries)
			noErrors(t, errs)
			calls := f.allCalls()
			if len(calls) != len(tt.failures)+1 {
				t.Fatalf("%d calls, want %d", len(calls), len(tt.failures)+1)
			}
			for i, c := range calls {
				if diff := cmp.Diff(entryDetails(entries), details(c)); diff != "" {
					t.Errorf("call %d does not resend the whole chunk (-want +got):\n%s", i+1, diff)
				}
			}
			if len(sl.got()) != len(tt.failures) {
				t.Errorf("sleeps %v, want %d", sl.got(), len(tt.failures))
			}
		})
	}
}

func TestPublishAlwaysThrottled(t *testing.T) {
	f := newFakeBus(t)
	f.failCall = func(int) *callFailure { return throttled() }
	sl := &sleeps{}
	p := f.publisher(sl, &logBuffer{})
	p.MaxAttempts = 3
	errs := p.Publish(context.Background(), []eventbus.Entry{entry(0), entry(1)})
	for i, err := range errs {
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" {
			t.Errorf("entry %d: %v, want ThrottlingException", i, err)
		}
		if eventbus.IsPermanent(err) {
			t.Errorf("entry %d: throttling is permanent", i)
		}
	}
	if n := len(f.allCalls()); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	if len(sl.got()) != 2 {
		t.Errorf("sleeps %v", sl.got())
	}
}

func TestPublishClientErrorIsNotRetried(t *testing.T) {
	for _, code := range []string{"ResourceNotFoundException", "AccessDeniedException", "ValidationException"} {
		t.Run(code, func(t *testing.T) {
			f := newFakeBus(t)
			f.failCall = func(int) *callFailure { return apiError(http.StatusBadRequest, code) }
			sl := &sleeps{}
			log := &logBuffer{}
			errs := f.publisher(sl, log).Publish(context.Background(), []eventbus.Entry{entry(0), entry(1)})
			for i, err := range errs {
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != code {
					t.Errorf("entry %d: %v, want %s", i, err, code)
				}
				if eventbus.IsPermanent(err) {
					t.Errorf("entry %d: %s is permanent", i, code)
				}
			}
			if len(f.allCalls()) != 1 || len(sl.got()) != 0 {
				t.Errorf("%d calls, sleeps %v; want 1 call, no sleep", len(f.allCalls()), sl.got())
			}
			if !strings.Contains(log.String(), "code="+code) {
				t.Errorf("log lacks the failure:\n%s", log.String())
			}
		})
	}
}

func TestPublishCancelDuringBackoff(t *testing.T) {
	f := newFakeBus(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.failCall = func(int) *callFailure { return throttled() }
	f.onCall = func(int) { time.AfterFunc(50*time.Millisecond, cancel) }
	p := f.publisher(nil, &logBuffer{})
	p.Sleep = nil // the real, cancellable sleep
	p.Backoff = time.Hour
	var entries []eventbus.Entry
	for i := range 15 { // two chunks
		entries = append(entries, entry(i))
	}
	// The backoff (capped at MaxBackoff, 5 s) is ended by the
	// cancellation, not waited out: the first chunk's entries have the
	// wait's error, not a second attempt's (no wall-clock bound).
	errs := p.Publish(ctx, entries)
	waited := 0
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), "backoff after attempt 1") {
			waited++
		}
	}
	if waited == 0 {
		t.Errorf("no entry's error is the cancelled backoff's: %v", errs)
	}
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("entry %d: %v, want context.Canceled", i, err)
		}
	}
	if n := len(f.allCalls()); n != 1 {
		t.Errorf("%d calls, want 1 (the second chunk is never sent)", n)
	}
}

func TestPublishCancelled(t *testing.T) {
	f := newFakeBus(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := f.publisher(&sleeps{}, &logBuffer{}).Publish(ctx, []eventbus.Entry{entry(0), entry(1)})
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("entry %d: %v, want context.Canceled", i, err)
		}
	}
	if n := len(f.allCalls()); n != 0 {
		t.Errorf("%d calls, want none", n)
	}
}

func TestPublishNothing(t *testing.T) {
	f := newFakeBus(t)
	if errs := f.publisher(&sleeps{}, &logBuffer{}).Publish(context.Background(), nil); len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}
	if n := len(f.allCalls()); n != 0 {
		t.Errorf("%d calls, want none", n)
	}
}

func TestPublishWithoutClient(t *testing.T) {
	errs := (&eventbus.Publisher{}).Publish(context.Background(), []eventbus.Entry{entry(0), entry(1)})
	for i, err := range errs {
		if err == nil || eventbus.IsPermanent(err) {
			t.Errorf("entry %d: %v, want a non-permanent error", i, err)
		}
	}
}

// InOrder: a chunk left with an entry failed for a reason that may pass
// stops the Publish, and the later chunks are not sent (ErrNotSent, to send
// again), so no entry goes out before an earlier one that will come again;
// a permanent failure stops nothing. Without InOrder every chunk is sent.
func TestPublishInOrder(t *testing.T) {
	var entries []eventbus.Entry
	for i := range 25 { // chunks of 10, 10 and 5
		entries = append(entries, entry(i))
	}
	for _, tt := range []struct {
		name      string
		inOrder   bool
		failCall  bool   // the first chunk's calls fail whole
		failEntry string // entry 12 fails with this code on every attempt
		sent      int    // entries that reached the bus
		notSent   []int  // entries held back
	}{
		{"whole call failed", true, true, "", 10, seq(10, 25)},
		{"whole call failed, not in order", false, true, "", 25, nil},
		{"an entry failed", true, false, "InternalFailure", 20, seq(20, 25)},
		{"an entry rejected", true, false, "MalformedDetail", 25, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBus(t)
			if tt.failCall {
				f.failCall = func(call int) *callFailure {
					if call <= 2 {
						return apiError(http.StatusInternalServerError, "InternalException")
					}
					return nil
				}
			}
			f.failEntry = func(e wireEntry, _ int) string {
				if e.Detail == string(entries[12].Detail) {
					return tt.failEntry
				}
				return ""
			}
			p := f.publisher(&sleeps{}, &logBuffer{})
			p.MaxAttempts, p.InOrder = 2, tt.inOrder
			errs := p.Publish(context.Background(), entries)
			seen := map[string]bool{}
			for _, c := range f.allCalls() {
				for _, d := range details(c) {
					seen[d] = true
				}
			}
			if len(seen) != tt.sent {
				t.Errorf("%d entries reached the bus, want %d", len(seen), tt.sent)
			}
			var notSent []int
			for i, err := range errs {
				if errors.Is(err, eventbus.ErrNotSent) {
					notSent = append(notSent, i)
					if eventbus.IsPermanent(err) || seen[string(entries[i].Detail)] {
						t.Errorf("entry %d: %v, sent %v; want it unsent, to send again", i, err, seen[string(entries[i].Detail)])
					}
				}
			}
			if !slices.Equal(notSent, tt.notSent) {
				t.Errorf("held back %v, want %v", notSent, tt.notSent)
			}
		})
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
