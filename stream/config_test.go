package stream_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// The Runner goes by its own copy of the Config it was given, as
// franz-go's client and watermill's router do: Run fills in the defaults
// there, Bootstrap changes its filter, loop guard, starting position and
// record age there for its run, and the caller's Runner keeps what the
// caller wrote (a zero BatchSize stays zero, a nil Logger nil), so that
// two runs of one Runner, or a Config shared by two Runners, start from
// the same settings.
func TestRunnerNeverWritesItsConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c, table, arn := f.c, f.table, f.arn
	for i := range 3 {
		putLedgerItem(t, c.DB, table, i, 1, i)
	}
	r := newRunner(t, c.Streams, arn, "untouched")
	r.Logger = nil
	r.Filter = filter.MustCriteria(`{"eventName":["INSERT","MODIFY"]}`)
	r.StartingPosition, r.MaxRecordAge = stream.Latest, time.Hour
	want := r.Config
	check := func(when string) {
		t.Helper()
		if !reflect.DeepEqual(r.Config, want) {
			t.Errorf("%s: the Runner's Config is\n%+v\nwant what the caller wrote\n%+v", when, r.Config, want)
		}
		if r.Logger != nil || r.Now != nil || r.InvocationID != nil {
			t.Errorf("%s: the Runner's Logger, Now or InvocationID were set", when)
		}
	}
	l := &ledger{version: map[string]int{}}
	b := &stream.Bootstrap{Runner: r, DB: c.DB, Table: table, Segments: 1}
	if _, err := b.Run(context.Background(), l.handle); err != nil {
		t.Fatal(err)
	}
	check("after Bootstrap")
	if h := r.Health(); h.Consumer != "untouched" {
		t.Errorf("Health's consumer %q", h.Consumer)
	}
	putLedgerItem(t, c.DB, table, 1, 2, 10)
	seqs := rawSeqs(readStream(t, c.Streams, arn, 4))
	run := start(t, r, l.handle)
	waitCheckpoint(t, r.Checkpoints, "untouched", f.shard, seqs[3])
	run.stop()
	check("after Run")
}

// ---------------------------------------------------------------------------
// 9. Configuration.

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, api := ddblocal.Clients(ddblocal.Endpoint())
	const arn = "arn:aws:dynamodb:ddblocal:000000000000:table/none/stream/2024-01-01T00:00:00.000"
	valid := func() *stream.Runner {
		return &stream.Runner{
			Config:      stream.Config{StreamARN: arn, Consumer: "c"},
			API:         api,
			Checkpoints: &stream.MemoryCheckpoints{},
			DeadLetters: &stream.MemoryDeadLetters{},
			Logger:      testLogger(t),
		}
	}
	cases := []struct {
		name    string
		change  func(r *stream.Runner)
		wantErr string // "" means valid
	}{
		{"defaults", func(*stream.Runner) {}, ""},
		{"BatchSize 1", func(r *stream.Runner) { r.BatchSize = 1 }, ""},
		{"BatchSize 10000", func(r *stream.Runner) { r.BatchSize = 10000 }, ""},
		{"MaxRetries forever", func(r *stream.Runner) { r.MaxRetries = stream.Retries(stream.Forever) }, ""},
		{"no Consumer", func(r *stream.Runner) { r.Consumer = "" }, "Consumer is required"},
		{"no StreamARN", func(r *stream.Runner) { r.StreamARN = "" }, "StreamARN is required"},
		{"BatchSize negative", func(r *stream.Runner) { r.BatchSize = -1 }, "BatchSize -1 out of range"},
		{"BatchSize too big", func(r *stream.Runner) { r.BatchSize = 10001 }, "BatchSize 10001 out of range"},
		{"BatchWindow negative", func(r *stream.Runner) { r.BatchWindow = -time.Second }, "BatchWindow"},
		{"BatchWindow too long", func(r *stream.Runner) { r.BatchWindow = 301 * time.Second }, "BatchWindow"},
		{"MaxRetries none", func(r *stream.Runner) { r.MaxRetries = stream.Retries(0) }, ""},
		{"MaxRetries below -1", func(r *stream.Runner) { r.MaxRetries = stream.Retries(-2) }, "MaxRetries -2"},
		{"MaxRetries above 10000", func(r *stream.Runner) { r.MaxRetries = stream.Retries(10001) }, "MaxRetries 10001"},
		{"StartingPosition unknown", func(r *stream.Runner) { r.StartingPosition = "AT_TIMESTAMP" }, `StartingPosition "AT_TIMESTAMP"`},
		{"no API", func(r *stream.Runner) { r.API = nil }, "needs API"},
		{"no Checkpoints", func(r *stream.Runner) { r.Checkpoints = nil }, "needs API, Checkpoints"},
		{"no DeadLetters", func(r *stream.Runner) { r.DeadLetters = nil }, "DeadLetters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.change(r)
			// A cancelled context: a valid runner returns nil at once, an
			// invalid one its configuration error.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := r.Run(ctx, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return events.DynamoDBEventResponse{}, nil
			})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Run: %v, want a valid configuration", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Run: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// A Runner without a dead-letter sink (its on-failure destination) does
// not start, and says which field is missing. (Lambda's mapping runs
// without a destination and drops what it gives up on; the Runner refuses
// to, so that nothing is lost without a word: the mapping's optional
// destination is https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html.)
func TestRunNeedsDeadLetters(t *testing.T) {
	f := newFixture(t)
	r := newRunner(t, f.c.Streams, f.arn, "no-sink")
	r.DeadLetters = nil
	err := r.Run(context.Background(), func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "DeadLetters (its on-failure destination) not set") {
		t.Errorf("Run without DeadLetters: %v", err)
	}
}
