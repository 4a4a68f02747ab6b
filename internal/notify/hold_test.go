package notify_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/idempotency"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// A notifier that crashed between claiming an e-mail and sending it leaves
// the claim in progress. The next attempt waits for the claim's hold to end
// and sends: the crash delays the e-mail, it never loses it. When the hold
// ends past the attempt's budget, the record fails (to come again) rather
// than being given up. The claims live in the bookkeeping table, so none
// of them is in the streamed table.
func TestCrashedSendIsTakenOverAfterItsHold(t *testing.T) {
	c, table, bk, st, ev := collabStream(t)
	ctx := context.Background()
	// bob's invite is the first record whose e-mail goes to bob.
	var inv stream.Change
	for _, r := range ev.Records {
		ch, err := stream.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if ch.ItemType() == store.TypeInvite && ch.Kind == stream.Insert && ch.New["inviteeId"] != nil {
			var v struct {
				InviteeID string `dynamodbav:"inviteeId"`
			}
			if err := ch.DecodeNew(&v); err == nil && v.InviteeID == "bob" {
				inv = ch
				break
			}
		}
	}
	if inv.EventID == "" {
		t.Fatal("no invite to bob on the stream")
	}
	key := "invite#" + inv.EventID + "#bob"
	const hold = 1500 * time.Millisecond
	// The crashed worker's claim.
	if c, err := st.Requests.OnceGuard(time.Now, hold, time.Hour).Begin(ctx, key, nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("claim: %+v %v", c, err)
	}

	box := &mailbox{}
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: filepath.Join(t.TempDir(), "events.jsonl")},
		Effects:   &notify.Effects{Store: st, Mailer: box, Now: time.Now, Hold: hold},
	}
	// An attempt whose budget ends before the hold: bob's record fails.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	resp, err := n.Handle(short, ev)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) == 0 {
		t.Fatal("the held send did not fail an attempt that cannot wait for it")
	}
	if slices.Contains(box.delivered(), `bob@example.com | You have been invited to collaborate on a goal`) {
		t.Fatal("sent while another worker held the send")
	}
	// The redelivery (a normal budget) waits for the hold and sends.
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err = n.Handle(long, ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("redelivery: %v %+v", err, resp.BatchItemFailures)
	}
	got := 0
	for _, d := range box.delivered() {
		if d == `bob@example.com | You have been invited to collaborate on a goal` {
			got++
		}
	}
	if got != 1 {
		t.Fatalf("bob's invite e-mail sent %d times, want 1: %v", got, box.delivered())
	}
	for name, want := range map[string]bool{table: false, bk: true} {
		if n := claimsIn(t, c, name); (n > 0) != want {
			t.Errorf("table %s holds %d idempotency records; want some: %v", name, n, want)
		}
	}
}

// rejecting refuses e-mails to one address for good, as SES's
// MessageRejected does, and sends the rest.
type rejecting struct {
	mailbox
	to string
}

func (r *rejecting) Send(ctx context.Context, msg mail.Message) (string, error) {
	if msg.To[0] == r.to {
		return "", &mail.PermanentError{Code: "MessageRejected", Err: errors.New("Email address is not verified.")}
	}
	return r.mailbox.Send(ctx, msg)
}

// An e-mail SES rejects for good is recorded as done, not retried: the
// record's other e-mails, notifications and events go on, and a redelivery
// does not try it again.
func TestRejectedEmailIsNotRetried(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	ctx := context.Background()
	st := store.New(c.DB, table)
	collabScenario(t, st)
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	box := &rejecting{to: "carol@example.com"}
	pub := &fakePublisher{}
	n := &notify.Notifier{Publisher: pub, Effects: &notify.Effects{Store: st, Mailer: box, Now: time.Now}}
	for range 2 {
		resp, err := n.Handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%v %+v: a rejected e-mail failed its record", err, resp.BatchItemFailures)
		}
	}
	got := box.delivered()
	for _, d := range got {
		if strings.HasPrefix(d, "carol@") {
			t.Errorf("sent to the rejected address: %s", d)
		}
	}
	if len(got) == 0 || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("the other e-mails: %v (each once)", got)
	}
}

// The e-mails' claims moved from the bookkeeping table to the effects
// table (Store.Effects). A record handled before the move comes again
// after it: with the bookkeeping table as EffectsPrevious, nothing is sent
// again and the claims are now in the effects table; without it, every
// e-mail would go out twice.
func TestEmailsSentBeforeTheMoveAreNotResent(t *testing.T) {
	c, table, bk, st, ev := collabStream(t)
	ctx := context.Background()
	fx := store.EffectsTableName(table) // made by ddbtest.Bookkeeping
	box := &mailbox{}
	handle := func(st *store.Store) {
		t.Helper()
		n := &notify.Notifier{Publisher: &fakePublisher{}, Effects: &notify.Effects{Store: st, Mailer: box, Now: time.Now}}
		if resp, err := n.Handle(ctx, ev); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%v %+v", err, resp.BatchItemFailures)
		}
	}
	claims := func(name string) int { return claimsIn(t, c, name) }

	handle(st) // before the move: claims in the bookkeeping table
	sent := len(box.delivered())
	if sent == 0 || claims(bk) != sent || claims(fx) != 0 {
		t.Fatalf("before the move: %d sent, %d claims in bookkeeping, %d in effects", sent, claims(bk), claims(fx))
	}
	moved := store.New(c.DB, table)
	moved.Bookkeeping, moved.Effects, moved.EffectsPrevious = bk, fx, bk
	handle(moved)
	if got := len(box.delivered()); got != sent {
		t.Fatalf("after the move with the previous table: %d e-mails, want the %d sent before", got, sent)
	}
	if claims(fx) != sent {
		t.Errorf("effects table holds %d claims, want the %d moved over", claims(fx), sent)
	}
	// What the previous table prevents: a store without it, on a fresh
	// effects table, sends them all again.
	if _, err := c.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(fx)}); err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureBookkeepingTable(ctx, c.DB, fx); err != nil {
		t.Fatal(err)
	}
	moved.EffectsPrevious = ""
	handle(moved)
	if got := len(box.delivered()); got != 2*sent {
		t.Errorf("without the previous table: %d e-mails, want %d (all again)", got, 2*sent)
	}
}

// collabStream writes the collaboration scenario on a fresh table whose
// store has its bookkeeping table (and, beside it, the effects table:
// ddbtest.Bookkeeping), and captures the table's stream.
func collabStream(t *testing.T) (c *ddb.Clients, table, bk string, st *store.Store, ev lambdaevents.DynamoDBEvent) {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	bk = ddbtest.Bookkeeping(t, c, table)
	st = store.New(c.DB, table)
	st.Bookkeeping = bk
	collabScenario(t, st)
	ev, err := replay.Capture(context.Background(), c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	return c, table, bk, st, ev
}

// claimsIn counts the idempotency records (e-mail claims) in a table.
func claimsIn(t *testing.T, c *ddb.Clients, name string) int {
	t.Helper()
	out, err := c.DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(name), FilterExpression: aws.String("itemType = :t"),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":t": &dtypes.AttributeValueMemberS{Value: store.TypeIdempotency}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}
