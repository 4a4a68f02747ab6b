package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/idempotency"
)

func TestMain(m *testing.M) {
	ddblocal.MainLimited(m, ddblocal.Limits{Scale: 0.1, Unprocessed: 0.05, Seed: 1})
}

func count(t *testing.T, tbl *ddblocal.Table) string {
	t.Helper()
	out, err := tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "COUNTER"}, "SK": &types.AttributeValueMemberS{Value: "C"}}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := out.Item["n"].(*types.AttributeValueMemberN)
	if n == nil {
		return ""
	}
	return n.Value
}

// The marker in the handler's own transaction: an increment applied once
// however often the record comes.
func TestMarkerInTheSameTransaction(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	ctx := context.Background()
	apply := func(eventID string) error {
		_, err := tbl.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(tbl.Name),
				Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "COUNTER"}, "SK": &types.AttributeValueMemberS{Value: "C"}},
				UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
			g.Marker(eventID),
		}})
		return err
	}
	if err := apply("ev-1"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		err := apply("ev-1")
		if !idempotency.IsDuplicate(err, 1) {
			t.Fatalf("repeat: %v", err)
		}
		if idempotency.IsDuplicate(err, 0) {
			t.Fatal("the counter's update was taken for the marker")
		}
	}
	if err := apply("ev-2"); err != nil {
		t.Fatal(err)
	}
	if got := count(t, tbl); got != "2" {
		t.Fatalf("count %s, want 2", got)
	}
	if idempotency.IsDuplicate(errors.New("other"), 0) || idempotency.IsDuplicate(nil, 0) {
		t.Fatal("IsDuplicate of another error")
	}
	marked, err := g.Marked(ctx, "ev-1")
	if err != nil || !marked {
		t.Fatalf("Marked(ev-1) = %v, %v", marked, err)
	}
	out, _ := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY#MARKER#ev-1"}, "SK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"}}})
	if d, _ := out.Item["derived"].(*types.AttributeValueMemberBOOL); d == nil || !d.Value || out.Item["ttl"] == nil {
		t.Fatalf("marker %v: want derived = true (the loop guard skips it) and a ttl", out.Item)
	}
}

// A marker beside the counter it guards: in the counter's partition, read
// with it, with the marker's record and a ttl from the injected clock.
func TestMarkerIn(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	at := time.Now().Add(-time.Minute).Truncate(time.Second) // a record's time, a minute ago
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Prefix: "COUNTED#", ItemType: "CounterMarker", Expiry: time.Hour, Now: func() time.Time { return at }}
	ctx := context.Background()
	apply := func(eventID string) error {
		_, err := tbl.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(tbl.Name),
				Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "COUNTER"}, "SK": &types.AttributeValueMemberS{Value: "C"}},
				UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
			g.MarkerIn("COUNTER", eventID),
		}})
		return err
	}
	for _, id := range []string{"ev-1", "ev-1", "ev-2", "ev-1"} {
		if err := apply(id); err != nil && !idempotency.IsDuplicate(err, 1) {
			t.Fatal(err)
		}
	}
	if got := count(t, tbl); got != "2" {
		t.Fatalf("count %s, want 2", got)
	}
	out, err := tbl.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl.Name), Key: g.MarkerKeyIn("COUNTER", "ev-1")})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := out.Item["SK"].(*types.AttributeValueMemberS)
	ttl, _ := out.Item["ttl"].(*types.AttributeValueMemberN)
	typ, _ := out.Item["itemType"].(*types.AttributeValueMemberS)
	if sk == nil || sk.Value != "COUNTED#ev-1" || ttl == nil || ttl.Value != fmt.Sprint(at.Add(time.Hour).Unix()) || typ == nil || typ.Value != "CounterMarker" {
		t.Fatalf("marker %v", out.Item)
	}
}

// Do: once when done, ErrInProgress while held, again after a failure or
// after a crashed attempt's hold.
func TestDo(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Hold: 10 * time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()
	runs := 0
	effect := func(context.Context) error { runs++; return nil }
	for range 3 {
		if err := g.Do(ctx, "mail-1", effect); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Fatalf("effect ran %d times", runs)
	}
	// a failed effect releases the claim: the retry runs it
	runs = 0
	boom := errors.New("smtp down")
	if err := g.Do(ctx, "mail-2", func(context.Context) error { runs++; return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := g.Do(ctx, "mail-2", effect); err != nil || runs != 2 {
		t.Fatalf("%d runs, %v", runs, err)
	}
	// held by an attempt under way
	runs = 0
	err := g.Do(ctx, "mail-3", func(ctx context.Context) error {
		runs++
		return g.Do(ctx, "mail-3", effect)
	})
	if !errors.Is(err, idempotency.ErrInProgress) || runs != 1 {
		t.Fatalf("nested: %d runs, %v", runs, err)
	}
	// an attempt that crashed after claiming: after the hold, another takes over
	_, err = tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY#mail-4"}, "SK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"},
		"status": &types.AttributeValueMemberS{Value: "INPROGRESS"}, "holdUntil": &types.AttributeValueMemberN{Value: "0"},
		"claim": &types.AttributeValueMemberS{Value: "then"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	runs = 0
	if err := g.Do(ctx, "mail-4", effect); err != nil || runs != 1 {
		t.Fatalf("takeover: %d runs, %v", runs, err)
	}
	if done, _ := g.Done(ctx, "mail-4"); !done {
		t.Fatal("mail-4 not done")
	}
}

// resent sends every PutItem twice and answers with the second's outcome,
// as when the first's answer is lost and the SDK sends the request again.
type resent struct{ *dynamodb.Client }

func (r resent) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	_, _ = r.Client.PutItem(ctx, in, optFns...)
	return r.Client.PutItem(ctx, in, optFns...)
}

// A claim whose answer was lost and that was sent again is the caller's
// own: it goes on with the work instead of waiting out its own hold.
func TestBeginRecognisesItsOwnResentClaim(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: resent{tbl.DB}, Table: tbl.Name}
	c, err := g.Begin(context.Background(), "k", nil)
	if err != nil || c.State != idempotency.Started {
		t.Fatalf("Begin = %+v, %v; want Started", c, err)
	}
	other := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	if c, err := other.Begin(context.Background(), "k", nil); err != nil || c.State != idempotency.Busy || c.Until.IsZero() {
		t.Fatalf("another attempt: %+v %v; want Busy with the hold's end", c, err)
	}
}

// Marker and Do are two uses of a Guard, each with its own records: an
// effect done with Do for a key a Marker has recorded still runs (a
// handler that writes with a marker and then e-mails for the same record
// gets its e-mail), and a completed Do leaves no claim behind (a replay
// comparing records sees one state however the claims went).
func TestMarkerAndDoKeepApart(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name}
	ctx := context.Background()
	if _, err := tbl.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{g.Marker("rec-1")}}); err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := g.Do(ctx, "rec-1", func(context.Context) error { ran = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Error("Do after a Marker of the same key did not run the effect")
	}
	out, err := tbl.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl.Name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 2 {
		t.Errorf("%d records, want the marker's and Do's", len(out.Items))
	}
	for _, it := range out.Items {
		if _, ok := it["claim"]; ok {
			t.Errorf("a completed record keeps its claim: %v", it)
		}
	}
}

// Without a Hold of its own, a claim made under a deadline (a Lambda
// invocation's) is held for what is left of it: another attempt before
// then is Busy until then, one after it takes over. A Hold set is kept.
func TestHoldFollowsTheDeadline(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	now := start
	g := idempotency.Guard{DB: tbl.DB, Table: tbl.Name, Now: func() time.Time { return now }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c, err := g.Begin(ctx, "k", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("first: %v %v", c, err)
	}
	// The deadline is real time, the clock the Guard's: the hold is what
	// was left of the deadline, counted from the Guard's now.
	now = start.Add(58 * time.Second)
	c, err := g.Begin(context.Background(), "k", nil)
	if err != nil || c.State != idempotency.Busy || c.Until.Before(start.Add(55*time.Second)) || c.Until.After(start.Add(time.Minute)) {
		t.Fatalf("before the deadline: %+v %v; want Busy until about %v", c, err, start.Add(time.Minute))
	}
	now = start.Add(61 * time.Second) // inside the default 30 s, past the deadline
	if c, err := g.Begin(context.Background(), "k", nil); err != nil || c.State != idempotency.Started {
		t.Fatalf("after the deadline: %+v %v, want a takeover", c, err)
	}
	// A Hold set: the deadline does not shorten or lengthen it.
	g.Hold = time.Hour
	now = start
	if c, err := g.Begin(ctx, "k2", nil); err != nil || c.State != idempotency.Started || !c.Until.Equal(start.Add(time.Hour)) {
		t.Fatalf("k2: %+v %v", c, err)
	}
	now = start.Add(2 * time.Minute)
	if c, err := g.Begin(context.Background(), "k2", nil); err != nil || c.State != idempotency.Busy {
		t.Fatalf("k2 past the deadline, inside its Hold: %+v %v, want Busy", c, err)
	}
}
