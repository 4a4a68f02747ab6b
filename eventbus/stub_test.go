package eventbus_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/dynastream/dynastream/eventbus"
)

// stubAPI is an in-memory eventbus.API: it records each call's entries
// and answers with respond (default: every entry accepted).
type stubAPI struct {
	calls   [][]types.PutEventsRequestEntry
	respond func(call int, in *eventbridge.PutEventsInput) *eventbridge.PutEventsOutput
}

func (s *stubAPI) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	s.calls = append(s.calls, in.Entries)
	if s.respond != nil {
		return s.respond(len(s.calls), in), nil
	}
	out := &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}
	for i := range out.Entries {
		out.Entries[i].EventId = aws.String("id")
	}
	return out, nil
}

func requestSize(e types.PutEventsRequestEntry) int {
	n := 0
	if e.Time != nil {
		n += 14
	}
	n += len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestPublishChunkingProperties publishes random batches and checks every
// call against the limits, the order, and greediness.
func TestPublishChunkingProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		maxEntries := 1 + rng.IntN(10)
		maxBytes := 200 + rng.IntN(5000)
		var entries []eventbus.Entry
		n := rng.IntN(60)
		for i := range n {
			size := 64 + rng.IntN(maxBytes+50) // some are too large
			if rng.IntN(4) == 0 {
				size = 64 + rng.IntN(100)
			}
			entries = append(entries, sized(i, size))
		}
		api := &stubAPI{}
		p := &eventbus.Publisher{Client: api, MaxEntries: maxEntries, MaxBytes: maxBytes, Logger: quiet()}
		errs := p.Publish(context.Background(), entries)

		var want []string
		for i, e := range entries {
			if e.Size() > maxBytes {
				if !eventbus.IsPermanent(errs[i]) {
					t.Fatalf("trial %d: entry %d (%d > %d bytes): %v", trial, i, e.Size(), maxBytes, errs[i])
				}
				continue
			}
			if errs[i] != nil {
				t.Fatalf("trial %d: entry %d: %v", trial, i, errs[i])
			}
			want = append(want, string(e.Detail))
		}
		var got []string
		sizes := make([]int, len(api.calls))
		for c, call := range api.calls {
			for _, e := range call {
				got = append(got, aws.ToString(e.Detail))
				sizes[c] += requestSize(e)
			}
			if len(call) == 0 || len(call) > maxEntries || sizes[c] > maxBytes {
				t.Fatalf("trial %d: call %d has %d entries, %d bytes (limits %d, %d)", trial, c, len(call), sizes[c], maxEntries, maxBytes)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d: sent out of order or not all", trial)
		}
		for c := 0; c+1 < len(api.calls); c++ {
			if len(api.calls[c]) < maxEntries && sizes[c]+requestSize(api.calls[c+1][0]) <= maxBytes {
				t.Fatalf("trial %d: call %d not full", trial, c)
			}
		}
	}
}

func TestPublishLimitsClamped(t *testing.T) {
	api := &stubAPI{}
	p := &eventbus.Publisher{Client: api, MaxEntries: 50, Logger: quiet()}
	var entries []eventbus.Entry
	for i := range 25 {
		entries = append(entries, entry(i))
	}
	noErrors(t, p.Publish(context.Background(), entries))
	if len(api.calls) != 3 || len(api.calls[0]) != 10 {
		t.Errorf("%d calls, first of %d entries; want 3 calls of at most 10", len(api.calls), len(api.calls[0]))
	}
}

// TestPublishUnmatchedResults: a response whose results cannot be matched
// to the entries by position makes every entry of the call go again.
func TestPublishUnmatchedResults(t *testing.T) {
	api := &stubAPI{respond: func(call int, in *eventbridge.PutEventsInput) *eventbridge.PutEventsOutput {
		if call == 1 {
			return &eventbridge.PutEventsOutput{FailedEntryCount: 1}
		}
		return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}
	}}
	sl := &sleeps{}
	p := &eventbus.Publisher{Client: api, Sleep: sl.sleep, Jitter: fullBound, Logger: quiet()}
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(0), entry(1)}))
	if len(api.calls) != 2 || len(api.calls[1]) != 2 || len(sl.got()) != 1 {
		t.Errorf("%d calls, sleeps %v; want the whole call resent once", len(api.calls), sl.got())
	}
}

// TestPublishFailureWithoutCode: a failed result with neither event id nor
// error code is retried.
func TestPublishFailureWithoutCode(t *testing.T) {
	api := &stubAPI{respond: func(call int, in *eventbridge.PutEventsInput) *eventbridge.PutEventsOutput {
		out := &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}
		for i := range out.Entries {
			out.Entries[i].EventId = aws.String("id")
		}
		if call == 1 {
			out.Entries[1].EventId = nil
			out.FailedEntryCount = 1
		}
		return out
	}}
	p := &eventbus.Publisher{Client: api, Sleep: (&sleeps{}).sleep, Logger: quiet()}
	noErrors(t, p.Publish(context.Background(), []eventbus.Entry{entry(0), entry(1), entry(2)}))
	if len(api.calls) != 2 || len(api.calls[1]) != 1 || aws.ToString(api.calls[1][0].Detail) != string(entry(1).Detail) {
		t.Errorf("calls %d; want the entry without result resent alone", len(api.calls))
	}
}

// BenchmarkPublish10000 sizes, chunks and builds the requests of 10,000
// small entries against an in-memory API (no network).
func BenchmarkPublish10000(b *testing.B) {
	entries := make([]eventbus.Entry, 10_000)
	for i := range entries {
		entries[i] = entry(i)
		if i%100 == 0 {
			entries[i] = sized(i, 100_000)
		}
	}
	api := &stubAPI{}
	p := &eventbus.Publisher{Client: api, Logger: quiet()}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		api.calls = api.calls[:0]
		errs := p.Publish(ctx, entries)
		if errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
	b.ReportMetric(float64(len(api.calls)), "calls/op")
}
