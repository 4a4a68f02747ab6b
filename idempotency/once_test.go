package idempotency_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/idempotency"
)

// The same key with another payload is a reused key, not a repeat: an
// error (permanent: retrying cannot help), never the first request's
// result, and the effect does not run.
func TestPayloadMismatch(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	ctx := context.Background()
	runs := 0
	effect := func(context.Context) (string, error) { runs++; return "sent " + strconv.Itoa(runs), nil }
	if _, err := g.Once(ctx, "k", []byte(`{"to":"ann"}`), effect); err != nil {
		t.Fatal(err)
	}
	for _, other := range [][]byte{[]byte(`{"to":"bob"}`), nil} {
		_, err := g.Once(ctx, "k", other, effect)
		if !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Fatalf("payload %q: %v, want ErrPayloadMismatch", other, err)
		}
		var p interface{ Permanent() bool }
		if !errors.As(err, &p) || !p.Permanent() {
			t.Fatalf("%v does not say it is permanent", err)
		}
	}
	out, err := g.Once(ctx, "k", []byte(`{"to":"ann"}`), effect)
	if err != nil || !out.Repeat || out.Result != "sent 1" || runs != 1 {
		t.Fatalf("repeat: %+v %v after %d runs", out, err, runs)
	}
	// while the key is held, too
	if c, err := g.Begin(ctx, "held", []byte("a")); err != nil || c.State != idempotency.Started {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := g.Begin(ctx, "held", []byte("b")); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Fatalf("held with another payload: %v", err)
	}
	if c, err := g.Begin(ctx, "held", []byte("a")); err != nil || c.State != idempotency.Busy {
		t.Fatalf("held with the same payload: %+v %v, want Busy", c, err)
	}
}

// The result End records is what a repeat gets back.
func TestResultIsReadBack(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	ctx := context.Background()
	out, err := g.Once(ctx, "mail", nil, func(context.Context) (string, error) { return "ses-0001", nil })
	if err != nil || out.Repeat || out.Result != "ses-0001" {
		t.Fatalf("first: %+v %v", out, err)
	}
	out, err = g.Once(ctx, "mail", nil, func(context.Context) (string, error) { t.Error("ran again"); return "", nil })
	if err != nil || !out.Repeat || out.Result != "ses-0001" {
		t.Fatalf("repeat: %+v %v", out, err)
	}
	if c, err := g.Begin(ctx, "mail", nil); err != nil || c.State != idempotency.Done || c.Result != "ses-0001" {
		t.Fatalf("Begin: %+v %v", c, err)
	}
	if c, _ := g.Begin(ctx, "manual", nil); c.State == idempotency.Started {
		if err := g.End(ctx, "manual", "by hand"); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := g.Begin(ctx, "manual", nil); err != nil || c.Result != "by hand" {
		t.Fatalf("after End: %+v %v", c, err)
	}
}

// Marked reads Marker's records and MarkedIn MarkerIn's.
func TestMarkedIn(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Prefix: "COUNTED#"}
	ctx := context.Background()
	if _, err := tbl.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{g.MarkerIn("COUNTER#1", "ev-1")}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		partition, key string
		want           bool
	}{{"COUNTER#1", "ev-1", true}, {"COUNTER#1", "ev-2", false}, {"COUNTER#2", "ev-1", false}} {
		if got, err := g.MarkedIn(ctx, c.partition, c.key); err != nil || got != c.want {
			t.Errorf("MarkedIn(%s, %s) = %v, %v; want %v", c.partition, c.key, got, err, c.want)
		}
	}
	if got, _ := g.Marked(ctx, "ev-1"); got {
		t.Error("Marked found a MarkerIn's record (they are kept apart: Marked reads Marker's)")
	}
}

// A Guard whose clock is fixed in the past (to make markers equal across
// runs) cannot write a marker that TTL deletes at once: DynamoDB Local,
// with TTL on, deletes an expired item within about a second, and a
// duplicate of the record would then be applied again.
func TestAFixedClockCannotWriteExpiredMarkers(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	if _, err := tbl.DB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl.Name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	fixed := time.Now().Add(-72 * time.Hour) // older than the 48 h Expiry
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Now: func() time.Time { return fixed }}
	write := func() error {
		_, err := tbl.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{g.Marker("ev-1")}})
		return err
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	// A control item that has expired: once TTL has deleted it, TTL has
	// had its chance at the marker too.
	expired := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	control := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "CONTROL"}, "SK": &types.AttributeValueMemberS{Value: "C"}}
	item := map[string]types.AttributeValue{"ttl": &types.AttributeValueMemberN{Value: expired}}
	for k, v := range control {
		item[k] = v
	}
	if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: item}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: control, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("DynamoDB Local's TTL did not delete an expired item in 20 s: this test cannot tell anything")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if marked, err := g.Marked(ctx, "ev-1"); err != nil || !marked {
		t.Fatalf("the marker is gone (%v, %v): TTL deleted it", marked, err)
	}
	if err := write(); !idempotency.IsDuplicate(err, 0) {
		t.Fatalf("the duplicate: %v, want it refused on the marker", err)
	}
}

// fakeClock is a Clock whose Sleep moves its time instead of waiting.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.slept = c.now.Add(d), c.slept+d
	return ctx.Err()
}

// A claim left by a crashed attempt is waited out and taken over when its
// hold ends within the budget (the effect runs, once); when it does not,
// ErrInProgress, and the effect does not run.
func TestACrashedClaimIsTakenOver(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	crashed := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Hold: 800 * time.Millisecond}
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	runs := 0
	effect := func(context.Context) error { runs++; return nil }

	// Real time: an attempt with 10 s left waits out the 0.8 s hold.
	if c, err := crashed.Begin(ctx, "a", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("%+v %v", c, err)
	}
	long, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := g.Do(long, "a", effect); err != nil || runs != 1 {
		t.Fatalf("takeover: %d runs, %v", runs, err)
	}
	// An attempt with less time left than the hold plus a second to run
	// the effect does not wait: the record is retried later.
	if c, err := crashed.Begin(ctx, "b", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("%+v %v", c, err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := g.Do(short, "b", effect); !errors.Is(err, idempotency.ErrInProgress) || runs != 1 {
		t.Fatalf("short budget: %d runs, %v; want ErrInProgress", runs, err)
	}

	// A context's Clock: the 30 s default hold is waited out in its time,
	// and OnWait is told.
	var told time.Duration
	g.OnWait = func(key string, wait time.Duration) { told = wait }
	clk := &fakeClock{now: time.Now()}
	cctx := idempotency.WithClock(ctx, clk)
	if c, err := g.Begin(cctx, "c", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("%+v %v", c, err)
	}
	if err := g.Do(cctx, "c", effect); err != nil || runs != 2 {
		t.Fatalf("with a Clock: %d runs, %v", runs, err)
	}
	if clk.slept < 30*time.Second || told != clk.slept {
		t.Fatalf("the Clock slept %v, OnWait was told %v; want the 30 s hold, both", clk.slept, told)
	}
	if done, _ := g.Done(ctx, "c"); !done {
		t.Fatal("c not done")
	}
}

// The effect's context ends before the claim's hold, so a live holder is
// done before another attempt may take over.
func TestTheEffectEndsBeforeItsHold(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Hold: 5 * time.Second}
	start := time.Now()
	err := g.Do(context.Background(), "k", func(ctx context.Context) error {
		d, ok := ctx.Deadline()
		if !ok || d.After(start.Add(5*time.Second)) {
			t.Errorf("the effect's deadline is %v (set: %v), want before the hold ends at %v", d, ok, start.Add(5*time.Second))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Records that moved to another table (Previous: where they were) are
// not done again: a key completed in the old table is Done in the new one,
// with its result, and recorded there (and Done says so); a claim still
// held there holds the key until its hold ends, one whose hold ended is
// taken over, and no record is a new claim; another payload is still a
// reused key; and
// when the old table cannot be read, the key is reused or the copy fails,
// the claim is released, not kept.
func TestRecordsMovedToAnotherTable(t *testing.T) {
	old := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	before := idempotency.Guard{DB: old.DB, Table: old.Name}
	if _, err := before.Once(ctx, "sent", []byte("p"), func(context.Context) (string, error) { return "ses-1", nil }); err != nil {
		t.Fatal(err)
	}
	// a claim made before the move whose attempt crashed (its hold ends
	// soon: on a clock of the test's, whose time moves only when a Guard
	// waits), and one still held
	crashed := idempotency.Guard{DB: old.DB, Table: old.Name, Hold: 300 * time.Millisecond}
	clk := &fakeClock{now: time.Now()}
	cctx := idempotency.WithClock(ctx, clk)
	if c, err := crashed.Begin(cctx, "crashed", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := before.Begin(ctx, "held", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("%+v %v", c, err)
	}

	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Previous: old.Name}
	if done, err := g.Done(ctx, "sent"); err != nil || !done {
		t.Fatalf("Done of a key completed before the move: %v, %v", done, err)
	}
	out, err := g.Once(ctx, "sent", []byte("p"), func(context.Context) (string, error) { t.Error("sent again"); return "", nil })
	if err != nil || !out.Repeat || out.Result != "ses-1" {
		t.Fatalf("moved key: %+v %v, want a repeat of ses-1", out, err)
	}
	// recorded in the new table: found there without Previous
	alone := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	if c, err := alone.Begin(ctx, "sent", []byte("p")); err != nil || c.State != idempotency.Done || c.Result != "ses-1" {
		t.Fatalf("new table after the move: %+v %v", c, err)
	}
	// a claim held there holds the key here: Busy until its hold ends,
	// waited out by Once when it ends within the budget
	if c, err := g.Begin(ctx, "held", nil); err != nil || c.State != idempotency.Busy || time.Until(c.Until) < 25*time.Second {
		t.Fatalf("a key held before the move: %+v %v, want Busy for the 30 s hold", c, err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := g.Once(short, "held", nil, func(context.Context) (string, error) { t.Error("ran while held"); return "", nil }); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("a key held before the move, with 2 s left: %v, want ErrInProgress", err)
	}
	if c, err := alone.Begin(ctx, "held", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("the refused claim must be released here: %+v %v", c, err)
	}
	// a claim there without a hold (not a Guard's) is over: taken over
	if _, err := old.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(old.Name), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY#holdless"}, "SK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"},
		"status": &types.AttributeValueMemberS{Value: "INPROGRESS"}}}); err != nil {
		t.Fatal(err)
	}
	if c, err := g.Begin(ctx, "holdless", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("a claim without a hold before the move: %+v %v, want Started", c, err)
	}
	for _, key := range []string{"crashed", "new"} {
		out, err := g.Once(cctx, key, nil, func(context.Context) (string, error) { return "ran " + key, nil })
		if err != nil || out.Repeat || out.Result != "ran "+key {
			t.Fatalf("%s: %+v %v, want the effect run", key, out, err)
		}
		if key == "crashed" && clk.slept < 300*time.Millisecond {
			t.Errorf("a crashed claim of before the move was taken over after %v of its 300 ms hold", clk.slept)
		}
	}
	if _, err := before.Once(ctx, "reused", []byte("a"), func(context.Context) (string, error) { return "x", nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Begin(ctx, "reused", []byte("b")); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Fatalf("reused key: %v, want ErrPayloadMismatch", err)
	}
	if c, err := alone.Begin(ctx, "reused", []byte("b")); err != nil || c.State != idempotency.Started {
		t.Fatalf("after the mismatch the claim must be released: %+v %v", c, err)
	}

	// The copy of a completed record fails: the claim is released, so the
	// next attempt copies it (not waiting out a hold), and runs nothing.
	if _, err := before.Once(ctx, "copy", nil, func(context.Context) (string, error) { return "ses-2", nil }); err != nil {
		t.Fatal(err)
	}
	flaky := g
	flaky.DB = &failUpdates{API: tbl.DB, left: 1}
	if _, err := flaky.Begin(ctx, "copy", nil); err == nil {
		t.Fatal("a failed copy: no error")
	}
	if c, err := g.Begin(ctx, "copy", nil); err != nil || c.State != idempotency.Done || c.Result != "ses-2" {
		t.Fatalf("after a failed copy: %+v %v, want Done with ses-2 at once", c, err)
	}

	broken := g
	broken.Previous = "no-such-table"
	if _, err := broken.Begin(ctx, "unread", nil); err == nil {
		t.Fatal("Begin with an unreadable previous table: no error")
	}
	if c, err := alone.Begin(ctx, "unread", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("after an unreadable previous table the claim must be released: %+v %v", c, err)
	}
}

// failUpdates fails the next left UpdateItem calls.
type failUpdates struct {
	idempotency.API
	left int
}

func (f *failUpdates) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.left > 0 {
		f.left--
		return nil, errors.New("injected UpdateItem failure")
	}
	return f.API.UpdateItem(ctx, in, optFns...)
}

// slowPuts answers every PutItem late: after DynamoDB took it, as when the
// SDK's retries or a slow network delay the answer.
type slowPuts struct {
	idempotency.API
	delay time.Duration
}

func (s slowPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := s.API.PutItem(ctx, in, optFns...)
	time.Sleep(s.delay)
	return out, err
}

// A once-only claim never outlives its effect: the effect's context ends
// before the hold stored with the claim, by the clocks' margin, even when
// the claim's answer came 1.5 s late.
func TestAClaimAnsweredLateNeverOutlivesItsHold(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: slowPuts{tbl.DB, 1500 * time.Millisecond}, Table: tbl.Name, Hold: 5 * time.Second}
	ran := false
	err := g.Do(context.Background(), "k", func(ctx context.Context) error {
		ran = true
		d, ok := ctx.Deadline()
		out, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY#k"}, "SK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"}}})
		if err != nil {
			return err
		}
		ms, _ := strconv.ParseInt(out.Item["holdUntil"].(*types.AttributeValueMemberN).Value, 10, 64)
		hold := time.UnixMilli(ms)
		if !ok || d.After(hold.Add(-100*time.Millisecond)) {
			t.Errorf("the effect's deadline is %v after the stored hold (set: %v); want it 100 ms before at least", d.Sub(hold), ok)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("ran %v: %v", ran, err)
	}
}

// Another attempt takes a claim over only once its hold is past by the
// clocks' margin (100 ms), by the taker's clock.
func TestATakeoverWaitsForTheClocksMargin(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	ctx := context.Background()
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	claim := func(key string, hold time.Time) {
		t.Helper()
		_, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY#" + key}, "SK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"},
			"status": &types.AttributeValueMemberS{Value: "INPROGRESS"}, "claim": &types.AttributeValueMemberS{Value: "another"},
			"holdUntil": &types.AttributeValueMemberN{Value: strconv.FormatInt(hold.UnixMilli(), 10)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	g.Now = func() time.Time { return now }
	claim("just-past", now.Add(-50*time.Millisecond))
	claim("past", now.Add(-150*time.Millisecond))
	if c, err := g.Begin(ctx, "just-past", nil); err != nil || c.State != idempotency.Busy {
		t.Errorf("a hold 50 ms past: %+v %v, want Busy", c, err)
	}
	if c, err := g.Begin(ctx, "past", nil); err != nil || c.State != idempotency.Started {
		t.Errorf("a hold 150 ms past: %+v %v, want Started", c, err)
	}
}
