package replay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/idempotency"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

var onceTables atomic.Int64

// onceSetup is what the once-only example needs around it: a table for
// the Guard's records (on the test binary's DynamoDB Local), its client
// options, a webhook receiver that applies each Idempotency-Key once, and
// a stream (12 records of three items).
func onceSetup() (opts dynamodb.Options, table string, receiver *hooks, webhookURL string, ev events.DynamoDBEvent, cleanup func()) {
	db, _ := ddblocal.Clients(ddblocal.Endpoint())
	in := ddblocal.Schema("PK", "SK")
	table = ddblocal.TableName(fmt.Sprintf("once-%d", onceTables.Add(1)))
	in.TableName = aws.String(table)
	in.BillingMode = types.BillingModePayPerRequest
	if _, err := ddblocal.CreateTable(context.Background(), db, &in); err != nil {
		panic(err)
	}
	receiver = &hooks{}
	receiver.reset()
	srv := httptest.NewServer(receiver)
	return db.Options(), table, receiver, srv.URL, stream3x4(), func() {
		srv.Close()
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}
}

// post sends the record's webhook with its eventID as the Idempotency-Key
// (the receiver dedupes the one window Do cannot close).
func post(ctx context.Context, client *http.Client, url string, r events.DynamoDBEventRecord) error {
	return hook(ctx, client, url, r, idempotency.Key(r))
}

// A webhook once per record, with idempotency.Guard.Do, proven under
// schedules that crash every handler call after each of its requests in
// turn: a crash after the claim, after the POST, or after the done mark
// leaves the claim held, and the next delivery waits out the hold (in the
// kit's own time) and takes it over. This is docs/library.md's example
// ("The loop guard and once-per-record effects"); the lines between the
// readme markers are that page's code.
func ExampleCheck_onceOnly() {
	opts, table, receiver, webhookURL, ev, cleanup := onceSetup()
	defer cleanup()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a test's deadline is not the calls'
	defer cancel()

	// readme: begin
	// Clients the kit can crash between two requests (outside a replay they only pass requests on).
	db := dynamodb.New(opts, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	webhooks := &http.Client{Transport: replay.Transport(nil)}

	guard := idempotency.Guard{DB: db, Table: table}
	handler := stream.Keyed{}.Handler(stream.Each(func(ctx context.Context, r events.DynamoDBEventRecord) error {
		return guard.Do(ctx, idempotency.Key(r), func(ctx context.Context) error {
			return post(ctx, webhooks, webhookURL, r) // with the record's eventID as Idempotency-Key
		})
	}))

	guards := replay.TableState{DB: db, Table: table, Derived: replay.DerivedFlag} // the Guard's records
	schedules := replay.Schedules(42, 8)
	for i := range schedules {
		schedules[i].CrashBetweenRequests = true
	}
	report, err := replay.Check(ctx, ev, replay.Target{
		Handler: handler,
		Reset:   func(ctx context.Context) error { receiver.reset(); return guards.Reset(ctx) },
		State:   func(context.Context) (any, error) { return receiver.state(), nil }, // webhooks applied, per record
	}, schedules)
	if err == nil {
		err = report.Err() // a schedule that differs, or a crash schedule that crashed nothing
	}
	// readme: end
	fmt.Println(report.Summary())
	fmt.Println("each record's webhook applied once:", onceEach(report.Baseline, ev))
	fmt.Println("error:", err)
	// Output:
	// 0 of 12 schedules differ from the baseline
	// each record's webhook applied once: true
	// error: <nil>
}

func onceEach(state any, ev events.DynamoDBEvent) bool {
	got, _ := state.(map[string]int)
	if len(got) != len(ev.Records) {
		return false
	}
	for _, r := range ev.Records {
		if got[r.EventID] != 1 {
			return false
		}
	}
	return true
}

// beginOrFail is Do as it was: Begin, and a held key is a failure. After a
// crash the claim stays held, every redelivery fails on it, the retries run
// out and the records are dead-lettered, their webhooks never sent.
func beginOrFail(ctx context.Context, g idempotency.Guard, key string, effect func(context.Context) error) error {
	c, err := g.Begin(ctx, key, nil)
	switch {
	case err != nil:
		return err
	case c.State == idempotency.Done:
		return nil
	case c.State == idempotency.Busy:
		return fmt.Errorf("%w (%s)", idempotency.ErrInProgress, key)
	}
	if err := effect(ctx); err != nil {
		return errors.Join(err, g.Abort(context.WithoutCancel(ctx), key))
	}
	return g.End(context.WithoutCancel(ctx), key, "")
}

// The old Do, failing on a held key, is caught by the same schedules: its
// crashed records are dead-lettered.
func TestCrashCatchesAClaimThatIsNeverTakenOver(t *testing.T) {
	opts, table, receiver, webhookURL, ev, cleanup := onceSetup()
	defer cleanup()
	db := dynamodb.New(opts, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	webhooks := &http.Client{Transport: replay.Transport(nil)}
	guard := idempotency.Guard{DB: db, Table: table}
	handler := stream.Keyed{}.Handler(stream.Each(func(ctx context.Context, r events.DynamoDBEventRecord) error {
		return beginOrFail(ctx, guard, idempotency.Key(r), func(ctx context.Context) error {
			return post(ctx, webhooks, webhookURL, r)
		})
	}))
	guards := replay.TableState{DB: db, Table: table, Derived: replay.DerivedFlag}
	schedules := replay.Schedules(42, 8)
	for i := range schedules {
		schedules[i].CrashBetweenRequests = true
	}
	rep, err := replay.Check(context.Background(), ev, replay.Target{
		Handler: handler,
		Reset:   func(ctx context.Context) error { receiver.reset(); return guards.Reset(ctx) },
		State:   func(context.Context) (any, error) { return receiver.state(), nil },
	}, schedules)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() == nil {
		t.Fatal("a claim never taken over passed every crash schedule")
	}
	lost := 0
	for _, run := range rep.Runs {
		for _, dl := range run.Stats.DeadLetters {
			if !strings.Contains(dl.Error, "another attempt holds this key") {
				t.Errorf("%s: dead-lettered for %q", run.Schedule, dl.Error)
			}
			lost += len(dl.Event.Records)
		}
	}
	if lost == 0 {
		t.Fatalf("caught, but nothing dead-lettered on a held key: %v", rep.Err())
	}
	t.Logf("%s; %d records dead-lettered on a held key", rep.Summary(), lost)
}

// A handler whose clients the kit does not see (no APIOption, no
// Transport) cannot be crashed between requests: a webhook sent before
// the write that records it passes every schedule, and the report says
// that its crash schedules crashed nothing — which fails Err.
func TestCrashSchedulesThatCrashNothingFail(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", ""))
	receiver := &hooks{}
	receiver.reset()
	srv := httptest.NewServer(receiver)
	defer srv.Close()
	e := &effects{db: tbl.DB, table: tbl.Name, http: srv.Client(), url: srv.URL} // plain clients
	target := e.target(receiver, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		if done, err := e.done(ctx, r); err != nil || done {
			return err
		}
		if err := e.notify(ctx, r, false); err != nil { // before the commit: wrong
			return err
		}
		_, err := e.mark(ctx, r, false)
		return err
	})
	schedules := replay.Schedules(11, 4)
	rep, err := replay.Check(context.Background(), stream3x4(), target, schedules)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Differing()); n != 0 {
		t.Fatalf("%d schedules differ; this handler's bug only shows with crashes", n)
	}
	crashSchedules := 0
	for _, s := range append(replay.Fixed(), schedules...) {
		if s.CrashBetweenRequests {
			crashSchedules++
		}
	}
	if got := len(rep.CrashedNothing()); got != crashSchedules || got == 0 {
		t.Fatalf("%d crash schedules crashed nothing, want all %d", got, crashSchedules)
	}
	err = rep.Err()
	if err == nil || !strings.Contains(err.Error(), "crashed nothing") || !strings.Contains(err.Error(), "APIOption") ||
		!strings.Contains(rep.Summary(), fmt.Sprintf("%d crash schedule(s) crashed nothing", crashSchedules)) {
		t.Fatalf("the report does not say so: %v", err)
	}
	// Built with the hooks, the same handler is caught.
	e.db = dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	e.http = &http.Client{Transport: replay.Transport(nil)}
	rep, err = replay.Check(context.Background(), stream3x4(), target, schedules)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.CrashedNothing()) != 0 || len(rep.Differing()) == 0 {
		t.Fatalf("with the hooks: %s", rep.Summary())
	}
}
