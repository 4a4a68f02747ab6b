package audit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/audit"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) { ddbtest.MainLimited(m) }

// flaky fails every third call of its sink (a call of any lane), but
// never three calls in a row that start at one entry: the Fanout's branch
// would give that entry up into its dead letters (MaxAttempts 3), as it
// should, and the trail would rightly miss it.
type flaky struct {
	audit.Sink
	n      atomic.Int64
	mu     sync.Mutex
	failed map[string]int // failed calls, by the eventID of their first entry
}

func (f *flaky) Append(ctx context.Context, es []audit.Entry) (int, error) {
	if f.n.Add(1)%3 == 0 && len(es) > 0 {
		f.mu.Lock()
		if f.failed == nil {
			f.failed = map[string]int{}
		}
		fail := f.failed[es[0].EventID] < 2
		if fail {
			f.failed[es[0].EventID]++
		}
		f.mu.Unlock()
		if fail {
			return 0, errors.New("disk full")
		}
	}
	return f.Sink.Append(ctx, es)
}

// The projector and the audit trail on one reader (stream.Fanout), under
// the replay kit: every schedule (duplicates, shuffles, failures, crashes
// between requests, ParallelizationFactor 10) leaves the derived items the
// projector alone leaves, and a trail of exactly one entry per core change
// — though the trail's sink fails a third of its calls, which brings
// batches back that the projector had finished.
func TestFanoutProjectorAndTrail(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	tick := func() string { at = at.Add(time.Second); return store.Timestamp(at) }
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		if _, err := st.Rooms.CreateRoom(ctx, room.Room{RoomID: id, Name: "room " + id, CreatedByUserID: "alice", CreatedAt: tick(),
			SearchType: room.SearchRent, Context: room.Context{CombineMode: room.ModeMixed}}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"bob", "carol"} {
			if err := st.Rooms.AddMember(ctx, room.Member{RoomID: id, UserID: u, Role: room.RoleMember, JoinedAt: tick()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	var core []string // the core changes' eventIDs, in stream order
	for _, r := range ev.Records {
		if !stream.SkipDerived(r) {
			core = append(core, r.EventID)
		}
	}

	trail, err := audit.OpenFile(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	var handler atomic.Pointer[stream.Handler]
	fresh := func() error { // a new process: the fan-out remembers nothing
		fan := &stream.Fanout{RetryDelay: time.Millisecond, Branches: []stream.Branch{
			{Name: "projector", Handler: p.Handle, DeadLetters: &stream.MemoryDeadLetters{}},
			{Name: "audit", Handler: audit.Handler(&flaky{Sink: trail}), DeadLetters: &stream.MemoryDeadLetters{}},
		}}
		h, err := fan.Handler()
		if err == nil {
			handler.Store(&h)
		}
		return err
	}
	if err := fresh(); err != nil {
		t.Fatal(err)
	}
	ts := replay.TableState{DB: c.DB, Table: table, Derived: replay.DerivedFlag}
	type state struct {
		Table any
		Trail []string // eventIDs, sorted
	}
	rep, err := replay.Check(ctx, ev, replay.Target{
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return (*handler.Load())(ctx, ev)
		},
		Filter: stream.LoopGuard(store.AttrPK),
		// The template's MaximumRetryAttempts (3, stream.DefaultMaxRetries):
		// the sink's failures are retried within the Fanout's call and never
		// use up the reader's retries, so a fresh Fanout after every crash
		// cannot turn them into the reader's dead letter
		// (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html,
		// MaximumRetryAttempts).
		OnFailure: replay.OnFailure{MaxRetries: stream.Retries(stream.DefaultMaxRetries)},
		Reset: func(ctx context.Context) error {
			return errors.Join(ts.Reset(ctx), trail.Reset(), fresh())
		},
		Restart: func(context.Context) error { return fresh() },
		State: func(ctx context.Context) (any, error) {
			tbl, err := ts.State(ctx)
			if err != nil {
				return nil, err
			}
			es, err := trail.Entries()
			if err != nil {
				return nil, err
			}
			var ids []string
			for _, e := range es {
				ids = append(ids, e.EventID)
			}
			slices.Sort(ids)
			return state{tbl, ids}, nil
		},
		Expect: func(s any) error {
			got := s.(state).Trail
			want := slices.Sorted(slices.Values(core))
			if !slices.Equal(got, want) {
				return fmt.Errorf("the trail has %d entries, want one per core change (%d)", len(got), len(want))
			}
			return nil
		},
	}, slices.Concat(replay.Schedules(20261128, 10), replay.Parallel(replay.Schedules(20261129, 10), 10),
		// as a Kinesis data stream for DynamoDB delivers: repeated, one
		// item's records out of order
		replay.KinesisSchedules(20261130, 2), replay.Parallel(replay.KinesisSchedules(20261131, 2), 10)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if len(core) != 21 {
		t.Errorf("%d core changes captured, want 21 (3 rooms with their owner as member, 6 members; each member twice: Member and UserRoom)", len(core))
	}
}

// The file sink writes an entry once, across reopening, and a line cut
// short by a crash neither counts nor swallows the next.
func TestFileOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := func(id string) audit.Entry {
		return audit.Entry{EventID: id, Event: "INSERT", PK: "ROOM#" + id, SK: "ROOM"}
	}
	if n, err := f.Append(ctx, []audit.Entry{e("1"), e("2")}); n != 2 || err != nil {
		t.Fatalf("append: %d, %v", n, err)
	}
	if _, err := f.Append(ctx, []audit.Entry{e("2"), e("3"), e("3")}); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString(`{"eventId":"4","ev`) // a crash mid-line
	out.Close()
	f, err = audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Append(ctx, []audit.Entry{e("1"), e("4")}); err != nil {
		t.Fatal(err)
	}
	wantTrail(t, f, "1,2,3,4")
}

// Two processes on one trail (a standby that takes over) and a write cut
// short while running: each entry stays once, and the entry after a cut
// line starts a line of its own.
func TestFileSharedAndCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx := context.Background()
	e := func(id string) audit.Entry { return audit.Entry{EventID: id, Event: "INSERT", PK: "P", SK: "S"} }
	active, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	standby, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := active.Append(ctx, []audit.Entry{e("1"), e("2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := standby.Append(ctx, []audit.Entry{e("2"), e("3")}); err != nil { // takes over from 2
		t.Fatal(err)
	}
	out, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString(`{"eventId":"4","ev`) // a write cut short
	out.Close()
	if _, err := standby.Append(ctx, []audit.Entry{e("3"), e("4")}); err != nil {
		t.Fatal(err)
	}
	wantTrail(t, standby, "1,2,3,4")
}

// wantTrail checks f's trail: its eventIDs in file order, each once.
func wantTrail(t *testing.T, f *audit.File, want string) {
	t.Helper()
	es, err := f.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range es {
		ids = append(ids, x.EventID)
	}
	if strings.Join(ids, ",") != want {
		t.Errorf("trail %v, want %s once each", ids, want)
	}
}
