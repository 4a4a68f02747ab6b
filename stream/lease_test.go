package stream_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/stream"
)

// syncBuffer is a log sink safe for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Two runners of one consumer: the second waits as a standby, says so
// loudly, handles nothing, and takes over when the first stops.
func TestSecondRunnerOfAConsumerWaits(t *testing.T) {
	for _, store := range []string{"memory", "table"} {
		t.Run(store, func(t *testing.T) {
			c, table, arn := newTable(t)
			var cps stream.Checkpoints = &stream.MemoryCheckpoints{}
			if store == "table" {
				tc := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
				if err := tc.CreateTable(context.Background()); err != nil {
					t.Fatal(err)
				}
				cps = tc
			}
			var mu sync.Mutex
			handledBy := map[string]int{}
			handler := func(name string) stream.Handler {
				return func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
					mu.Lock()
					handledBy[name] += len(ev.Records)
					mu.Unlock()
					return events.DynamoDBEventResponse{}, nil
				}
			}
			logs := &syncBuffer{}
			mk := func() *stream.Runner {
				r := newRunner(t, c.Streams, arn, "leased")
				r.Checkpoints = cps
				r.Lease = time.Second // renewed every third of it: slack for a loaded machine
				r.Logger = slog.New(slog.NewTextHandler(logs, nil))
				return r
			}
			first, second := mk(), mk()
			run1 := start(t, first, handler("first"))
			waitFor(t, "the first to be reading", func() bool { return len(first.Health().Shards) == 1 })
			run2 := start(t, second, handler("second"))
			waitFor(t, "the second to be a standby", func() bool { return second.Health().Status == stream.Standby })
			if h := second.Health(); !strings.Contains(h.Reason, "another runner of this consumer holds its lease") {
				t.Errorf("standby health: %+v", h)
			}
			putItems(t, c.DB, table, 0, 5)
			waitFor(t, "the first to handle 5", func() bool { mu.Lock(); defer mu.Unlock(); return handledBy["first"] == 5 })
			time.Sleep(1300 * time.Millisecond) // longer than the lease: renewals keep it
			mu.Lock()
			if handledBy["second"] != 0 {
				t.Errorf("the standby handled %d records", handledBy["second"])
			}
			mu.Unlock()
			if !strings.Contains(logs.String(), "ANOTHER RUNNER OF THIS CONSUMER IS RUNNING") {
				t.Errorf("no loud log line:\n%s", logs.String())
			}
			run1.stop() // releases the lease: the standby takes over at once
			waitFor(t, "the second to take over", func() bool { return len(second.Health().Shards) == 1 })
			putItems(t, c.DB, table, 5, 8)
			waitFor(t, "the second to handle the new 3", func() bool { mu.Lock(); defer mu.Unlock(); return handledBy["second"] == 3 })
			mu.Lock()
			if handledBy["first"] != 5 {
				t.Errorf("handled: %v", handledBy)
			}
			mu.Unlock()
			run2.stop()
		})
	}
}

// A runner whose lease is taken stops with ErrLeaseLost; a lease that
// expired (a crashed holder elsewhere) is taken over.
func TestLeaseLostAndExpired(t *testing.T) {
	ctx := context.Background()
	c, table, arn := newTable(t)
	tc := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
	if err := tc.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	other := stream.Owner{ID: "other", Host: "elsewhere", PID: 1}
	// an expired lease of a crashed runner elsewhere
	if _, ok, err := tc.Acquire(ctx, "c", other, now, now.Add(-time.Second)); err != nil || !ok {
		t.Fatal(ok, err)
	}
	r := newRunner(t, c.Streams, arn, "c")
	r.Checkpoints, r.Lease = tc, 300*time.Millisecond
	errc := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		errc <- r.Run(rctx, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, nil
		})
	}()
	waitFor(t, "the expired lease taken over", func() bool { return len(r.Health().Shards) == 1 })
	// another takes it (as after this one failed to renew in time)
	if err := tc.Renew(ctx, "c", other, now.Add(time.Hour)); !errors.Is(err, stream.ErrLeaseLost) {
		t.Fatalf("renewing another's lease: %v", err)
	}
	l, ok, err := tc.Acquire(ctx, "c", other, now.Add(time.Hour), now.Add(2*time.Hour)) // "now" past its expiry
	if err != nil || !ok || l.Owner.ID != "other" {
		t.Fatal(l, ok, err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, stream.ErrLeaseLost) {
			t.Fatalf("Run returned %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the runner went on without its lease")
	}
	// the holder on this host whose process is gone is taken over at once
	mine := stream.Owner{ID: "dead", Host: hostname(t), PID: 999999}
	cps := &stream.MemoryCheckpoints{}
	if _, ok, _ := cps.Acquire(ctx, "d", mine, now, now.Add(time.Hour)); !ok {
		t.Fatal("first acquire")
	}
	if _, ok, _ := cps.Acquire(ctx, "d", stream.Owner{ID: "new", Host: hostname(t), PID: 1}, now, now.Add(time.Hour)); !ok {
		t.Fatal("a dead process's lease was not taken over")
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// flakyLeases fails renewals while failing is set.
type flakyLeases struct {
	*stream.MemoryCheckpoints
	mu      sync.Mutex
	failing bool
	fails   int
}

func (f *flakyLeases) Renew(ctx context.Context, consumer string, me stream.Owner, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		f.fails++
		return errors.New("throttled")
	}
	return f.MemoryCheckpoints.Renew(ctx, consumer, me, until)
}

// Renewals that fail for a while (throttles) are retried: the runner keeps
// its lease and goes on; failing until the lease is about to expire, it
// stops with ErrLeaseLost.
func TestLeaseRenewalRetries(t *testing.T) {
	c, _, arn := newTable(t)
	fl := &flakyLeases{MemoryCheckpoints: &stream.MemoryCheckpoints{}}
	r := newRunner(t, c.Streams, arn, "flaky")
	r.Checkpoints, r.Lease = fl, 3*time.Second // renewed every second, retried every 150 ms
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		errc <- r.Run(ctx, func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, nil
		})
	}()
	waitFor(t, "the runner reading", func() bool { return len(r.Health().Shards) == 1 })
	fl.mu.Lock()
	fl.failing = true
	fl.mu.Unlock()
	time.Sleep(1100 * time.Millisecond) // a renewal fails, and its retries, for a while
	fl.mu.Lock()
	fl.failing = false
	fails := fl.fails
	fl.mu.Unlock()
	time.Sleep(3100 * time.Millisecond) // longer than the lease
	select {
	case err := <-errc:
		t.Fatalf("the runner stopped (%v) after %d failed renewals", err, fails)
	default:
	}
	if fails == 0 {
		t.Fatal("no renewal failed: the test tested nothing")
	}
	fl.mu.Lock()
	fl.failing = true
	fl.mu.Unlock()
	select {
	case err := <-errc:
		if !errors.Is(err, stream.ErrLeaseLost) {
			t.Fatalf("Run returned %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runner went on with a lease it could not renew")
	}
}

// TableCheckpoints keeps a checkpoint longer than an item (400 KB: "Item
// size", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html)
// in items of its own (chunks.go), reads it back whole (multi-byte text cut
// anywhere), and drops those of the checkpoint a Put replaces — only those.
func TestTableCheckpointsParts(t *testing.T) {
	ctx := context.Background()
	c, table, _ := newTable(t)
	tc := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
	if err := tc.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	parts := func() int {
		out, err := c.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tc.Table)})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, it := range out.Items {
			if s, ok := it["shardId"].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(s.Value, "#state#") {
				n++
			}
		}
		return n
	}
	for i, v := range []string{
		"seq-1\n" + strings.Repeat("é", 500<<10), // 1 MB: chunks beside the item
		"seq-2\n" + strings.Repeat("€", 300<<10), // 900 KB: replaces them
		"seq-3\n{}", // small: no parts
	} {
		if err := tc.Put(ctx, "c", "shard-1", v); err != nil {
			t.Fatal(err)
		}
		got, err := tc.Get(ctx, "c", "shard-1")
		if err != nil || got != v {
			t.Fatalf("step %d: read back %d bytes (want %d), %v", i, len(got), len(v), err)
		}
		if n := parts(); (n > 0) != (i < 2) {
			t.Errorf("step %d: %d part items; want some for a value over an item, none after", i, n)
		}
	}
}
