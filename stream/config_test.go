package stream_test

import (
	"context"
	"reflect"
	"testing"
	"time"

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
