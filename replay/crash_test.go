package replay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/replay"
)

// hooks is a webhook receiver: it counts the deliveries it applied per
// event, and applies a request with an Idempotency-Key it has seen once.
type hooks struct {
	mu      sync.Mutex
	applied map[string]int
	keys    map[string]bool
}

func (h *hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		if h.keys[k] {
			w.WriteHeader(http.StatusOK)
			return
		}
		h.keys[k] = true
	}
	h.applied[string(body)]++
	w.WriteHeader(http.StatusAccepted)
}

func (h *hooks) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applied, h.keys = map[string]int{}, map[string]bool{}
}

func (h *hooks) state() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.applied)
}

// effects is what the handlers below work with: a table for their "done"
// markers and a webhook, through clients the kit can crash between two
// requests.
type effects struct {
	db    *dynamodb.Client
	table string
	run   atomic.Int64 // markers are per run, so Reset need not delete any
	http  *http.Client
	url   string
}

func newEffects(t *testing.T) (*effects, *hooks) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", ""))
	h := &hooks{}
	h.reset()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	db := dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, replay.APIOption)
	})
	return &effects{db: db, table: tbl.Name, http: &http.Client{Transport: replay.Transport(nil)}, url: srv.URL}, h
}

func (e *effects) marker(r events.DynamoDBEventRecord) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("run %d: %s", e.run.Load(), r.EventID)}}
}

func (e *effects) done(ctx context.Context, r events.DynamoDBEventRecord) (bool, error) {
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: e.marker(r), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, err
	}
	return out.Item != nil, nil
}

// mark writes the record's marker; with once, only if it is not there
// (written is false when it was).
func (e *effects) mark(ctx context.Context, r events.DynamoDBEventRecord, once bool) (written bool, err error) {
	in := &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: e.marker(r)}
	if once {
		in.ConditionExpression = aws.String("attribute_not_exists(PK)")
	}
	_, err = e.db.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
}

func (e *effects) notify(ctx context.Context, r events.DynamoDBEventRecord, withKey bool) error {
	key := ""
	if withKey {
		key = r.EventID
	}
	return hook(ctx, e.http, e.url, r, key)
}

// hook posts the record's webhook (its eventID as the body), with key as
// its Idempotency-Key unless that is "".
func hook(ctx context.Context, client *http.Client, url string, r events.DynamoDBEventRecord, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(r.EventID))
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("webhook: %s", resp.Status)
	}
	return nil
}

// perRecord makes a handler of one function per record; a failed record
// is reported with the rest of its batch, as a correct handler does.
func perRecord(f func(ctx context.Context, r events.DynamoDBEventRecord) error) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			if err := f(ctx, r); err != nil {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
}

func (e *effects) target(h *hooks, f func(ctx context.Context, r events.DynamoDBEventRecord) error) replay.Target {
	return replay.Target{
		Handler: perRecord(f),
		Reset:   func(context.Context) error { e.run.Add(1); h.reset(); return nil },
		State:   func(context.Context) (any, error) { return h.state(), nil },
	}
}

// onlyCrashesCatch checks that the kit catches the handler, and only with
// crashes between requests: every schedule without them passes it, as
// every schedule did before the kit could crash a call mid-way.
func onlyCrashesCatch(t *testing.T, rep replay.Report) {
	t.Helper()
	caught := 0
	for _, run := range rep.Runs {
		switch {
		case run.Differs() && run.Schedule.CrashBetweenRequests:
			caught++
		case run.Differs():
			t.Errorf("%s caught it without a crash", run.Schedule)
		case run.Schedule.CrashBetweenRequests:
			t.Errorf("%s did not catch it", run.Schedule)
		}
	}
	if caught == 0 || rep.Err() == nil {
		t.Fatalf("not caught: %s", rep.Summary())
	}
}

func schedulesWithAndWithoutCrashes() []replay.Schedule {
	ss := replay.Schedules(11, 8)
	for i := range ss {
		ss[i].CrashBetweenRequests = i%2 == 0
	}
	return ss
}

// Must catch: a handler that calls a webhook before it writes the marker
// saying it did. A crash between the two sends the webhook again on the
// retry.
func TestCrashCatchesAWebhookBeforeItsCommit(t *testing.T) {
	e, h := newEffects(t)
	target := e.target(h, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		if done, err := e.done(ctx, r); err != nil || done {
			return err
		}
		if err := e.notify(ctx, r, false); err != nil {
			return err
		}
		_, err := e.mark(ctx, r, false)
		return err
	})
	rep, err := replay.Check(context.Background(), stream3x4(), target, schedulesWithAndWithoutCrashes())
	if err != nil {
		t.Fatal(err)
	}
	onlyCrashesCatch(t, rep)
	if err := rep.Err(); !strings.Contains(err.Error(), "schedule crash between requests [stream order, batches of 1, crashes between requests]: derived state differs") {
		t.Errorf("the report does not name the schedule: %v", err)
	}
}

// Must catch: a handler that writes its marker first, conditionally, and
// skips the webhook when the marker is already there. A crash after the
// write (its answer lost) makes the retry skip the webhook for good.
func TestCrashCatchesAnEffectSkippedOnADuplicate(t *testing.T) {
	e, h := newEffects(t)
	target := e.target(h, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		written, err := e.mark(ctx, r, true)
		if err != nil || !written {
			return err // a duplicate: "already handled"
		}
		return e.notify(ctx, r, false)
	})
	rep, err := replay.Check(context.Background(), stream3x4(), target, schedulesWithAndWithoutCrashes())
	if err != nil {
		t.Fatal(err)
	}
	onlyCrashesCatch(t, rep)
}

// The same effects in a correct handler pass: the webhook carries a key
// derived from the record, so the receiver applies it once however often
// it is sent, and the marker only saves a request.
func TestCrashPassesAnIdempotentSend(t *testing.T) {
	e, h := newEffects(t)
	target := e.target(h, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		if done, err := e.done(ctx, r); err != nil || done {
			return err
		}
		if err := e.notify(ctx, r, true); err != nil {
			return err
		}
		_, err := e.mark(ctx, r, false)
		return err
	})
	want := map[string]int{}
	for _, r := range stream3x4().Records {
		want[r.EventID] = 1
	}
	target.Expect = replay.Want(want)
	var restarts atomic.Int64 // a process that died starts again: Restart once per crash
	target.Restart = func(context.Context) error { restarts.Add(1); return nil }
	rep, err := replay.Check(context.Background(), stream3x4(), target, schedulesWithAndWithoutCrashes())
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	var crashes, allCrashes int
	for _, run := range rep.Runs {
		allCrashes += run.Stats.Crashes
		if run.Schedule.Name == "crash between requests" {
			crashes = run.Stats.InjectedFailures
		}
	}
	if int(restarts.Load()) != allCrashes || allCrashes == 0 {
		t.Errorf("Restart was called %d times for %d crashes", restarts.Load(), allCrashes)
	}
	// 12 records, each 3 requests: a crash after each of them
	if crashes != 36 {
		t.Errorf("crash between requests injected %d crashes, want 36", crashes)
	}
}

// Outside a replay the transport and the SDK option only pass requests on.
func TestCrashHooksPassThroughOutsideAReplay(t *testing.T) {
	e, h := newEffects(t)
	ctx := context.Background()
	r := stream3x4().Records[0]
	for range 2 {
		if err := e.notify(ctx, r, false); err != nil {
			t.Fatal(err)
		}
		if _, err := e.mark(ctx, r, false); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := e.done(ctx, r); err != nil || !done {
		t.Fatalf("done %v, %v", done, err)
	}
	if got := h.state()["ev-1"]; got != 2 {
		t.Errorf("webhook applied %d times, want 2", got)
	}
}
