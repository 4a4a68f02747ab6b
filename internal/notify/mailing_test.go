package notify_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// barrier is a mail.Sender whose sends each wait until n are in flight at
// once (or fail after a while): it passes only if the notifier overlaps
// them.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
	sent    []string
}

func (b *barrier) Send(ctx context.Context, m mail.Message) (string, error) {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-time.After(5 * time.Second):
		return "", fmt.Errorf("send to %s: only %d of %d sends in flight together", m.To[0], b.arrived, b.n)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, m.IdempotencyKey)
	return "id-" + m.IdempotencyKey, nil
}

// invites writes n invites by address on one resource (one partition key,
// so one group of records) and captures their stream.
func invites(t *testing.T, n int) (*store.Store, *replayBatch) {
	return invitesTo(t, n, false)
}

// invitesTo is invites, to users u0, u1, … (in-app notifications, no
// e-mail: they have no address) when users is set.
func invitesTo(t *testing.T, n int, users bool) (*store.Store, *replayBatch) {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	if err := st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Task, ResourceID: "t1", Title: "Paint", OwnerID: "alice", CreatedAt: store.Timestamp(now)}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		inv := collab.Invite{InviteID: fmt.Sprintf("i%d", i), InviteeEmail: fmt.Sprintf("guest%d@example.com", i), InviterID: "alice",
			ResourceType: collab.Task, ResourceID: "t1", Status: collab.InvitePending,
			CreatedAt: store.Timestamp(now), UpdatedAt: store.Timestamp(now), ExpiresAt: store.Timestamp(now.Add(24 * time.Hour))}
		if users {
			inv.InviteeEmail, inv.InviteeID = "", fmt.Sprintf("u%d", i)
		}
		if err := st.Collab.CreateInvite(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	return st, &replayBatch{ev: ev, now: now}
}

// The e-mails of one key's records go out together, not one after the
// other: four sends of one resource's four invites are in flight at once
// (before the batch's e-mails started together, the first waited alone
// and timed out).
func TestBatchEmailsConcurrent(t *testing.T) {
	t.Parallel()
	st, b := invites(t, 4)
	box := &barrier{n: 4, open: make(chan struct{})}
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects:   &notify.Effects{Store: st, Mailer: box, Now: func() time.Time { return b.now }},
	}
	resp, err := n.Handle(context.Background(), b.ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle: %v %+v", err, resp)
	}
	if len(box.sent) != 4 {
		t.Fatalf("%d e-mails sent, want 4", len(box.sent))
	}
}

// A record delivered twice in one batch sends its e-mail once, and neither
// copy waits for the other's hold.
func TestBatchEmailTwiceInABatch(t *testing.T) {
	t.Parallel()
	st, b := invites(t, 2)
	b.ev.Records = append(b.ev.Records, b.ev.Records...)
	box := &mailbox{}
	var logs bytes.Buffer
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects: &notify.Effects{Store: st, Mailer: box, Now: func() time.Time { return b.now },
			Logger: slog.New(slog.NewTextHandler(&logs, nil))},
	}
	resp, err := n.Handle(context.Background(), b.ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle: %v %+v", err, resp)
	}
	if sends, resent := box.distinct(); len(sends) != 2 || resent != 0 {
		t.Errorf("e-mails %v (%d again), want each of the 2 once", sends, resent)
	}
	if strings.Contains(logs.String(), "held by another attempt") {
		t.Errorf("a copy waited for the other's hold:\n%s", logs.String())
	}
}

type replayBatch struct {
	ev  lambdaevents.DynamoDBEvent
	now time.Time
}

// panicky is a mail.Sender with a bug: it panics.
type panicky struct{}

func (panicky) Send(context.Context, mail.Message) (string, error) { panic("a Mailer's bug") }

// A Mailer that panics fails its records (they are retried) and does not
// take the process down: the e-mails run outside the groups, which
// recover a panic, so the mailing recovers it itself.
func TestBatchEmailPanicFailsTheRecord(t *testing.T) {
	t.Parallel()
	st, b := invites(t, 2)
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects:   &notify.Effects{Store: st, Mailer: panicky{}, Now: func() time.Time { return b.now }, Logger: slog.New(slog.DiscardHandler)},
		Logger:    slog.New(slog.DiscardHandler),
	}
	resp, err := n.Handle(context.Background(), b.ev)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("handle: %v %+v, want the resource's first invite reported (its group stops there)", err, resp)
	}
}

// batchWrites fails DynamoDB's BatchWriteItem calls with a 500 while fail
// is set, and passes every other request.
type batchWrites struct {
	fail atomic.Bool
}

func (b *batchWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.fail.Load() && strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".BatchWriteItem") {
		return &http.Response{StatusCode: 500, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"failed by the test"}`))}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// The in-app notifications are written while the e-mails go out, and a
// record whose notifications were not written fails at its step (its
// group stops there; the retry writes them).
func TestBatchNotificationsFailTheirRecord(t *testing.T) {
	t.Parallel()
	st, b := invitesTo(t, 2, true)
	rt := &batchWrites{}
	rt.fail.Store(true)
	st.DB = dynamodb.New(st.DB.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: rt}
		o.RetryMaxAttempts = 1
	})
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects:   &notify.Effects{Store: st, Mailer: &mailbox{}, Now: func() time.Time { return b.now }},
		Logger:    slog.New(slog.DiscardHandler),
	}
	resp, err := n.Handle(context.Background(), b.ev)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("handle with the notifications refused: %v %+v, want the group's first invite failed", err, resp)
	}
	rt.fail.Store(false)
	if resp, err := n.Handle(context.Background(), b.ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle again: %v %+v", err, resp)
	}
	for _, u := range []string{"u0", "u1"} {
		notes, _, err := st.Collab.ListNotifications(context.Background(), u, b.now, store.Page{})
		if err != nil || len(notes) != 1 {
			t.Errorf("%s's notifications: %+v %v, want the invite's", u, notes, err)
		}
	}
}
