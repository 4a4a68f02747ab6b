package projections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// A call holding records of all eight of a recipe's pending items drains
// the recipe once: the projector keys a pending item's records by recipe
// (one group), so a hot recipe's totals are written once per call however
// many of its pending records the call holds (the combiner's invariant,
// internal/store/combiner.go; the project's own design, not AWS's).
func TestProjectorDrainsOncePerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	createPho(t, st)
	for n := range store.PendingShards { // a week's +1 on each pending item
		putWeekPending(t, c.DB, table, n, "")
	}
	pending := pendingRecords(t, c.Streams, arn)
	if len(pending) != store.PendingShards {
		t.Fatalf("%d pending records, want %d", len(pending), store.PendingShards)
	}
	before := c.Requests.Counts().ByOp
	out, err := (&projections.Projector{Store: st}).Handle(ctx, events.DynamoDBEvent{Records: pending})
	if err != nil || len(out.BatchItemFailures) > 0 {
		t.Fatalf("%+v %v", out, err)
	}
	after := c.Requests.Counts().ByOp
	reads, writes := after["TransactGetItems"]-before["TransactGetItems"], after["TransactWriteItems"]-before["TransactWriteItems"]
	if reads != 1 || writes != 1 {
		t.Errorf("%d snapshot reads and %d transactions for one call of %d pending records, want 1 and 1", reads, writes, len(pending))
	}
	top, _, err := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10})
	if err != nil || len(top) != 1 || top[0].Count != store.PendingShards {
		t.Errorf("the week: %s, %v", fmt.Sprint(top), err)
	}
}

// A drain that meets its recipe's partition over its throughput is owed,
// not failed: the call succeeds, one pending item of its records is
// nudged so that its record comes again, and the drain of all the
// recipe's items runs when it does (AWS: a partition takes up to 1,000
// write and 3,000 read units a second, bp-partition-key-design.html; the
// ddblocal Limiter holds DynamoDB Local to a hundredth of it here, on a
// clock the test moves).
// Nothing is lost and nothing counted twice; no other record of the call
// waits for the throttled recipe.
func TestProjectorOwesAThrottledDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, table, arn := ddbtest.Table(t)
	direct := store.New(c.DB, table)
	createPho(t, direct)
	for _, n := range []int{0, 3} { // a week's +1 on two pending items
		putWeekPending(t, c.DB, table, n, "chef")
	}
	clock := ddbtest.NewClock(time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC))
	lim := ddblocal.Limit(t, ddblocal.Limits{Scale: 0.01, Now: clock.Now}) // 30 read units a second a key
	db, _ := ddblocal.Clients(lim.Endpoint)
	p := &projections.Projector{Store: store.New(db, table)}
	for range 30 { // the recipe's partition has spent its second
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: store.RecipeKey("pho").AV(), ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	week := func() int { return weekCount(t, direct) }

	first := pendingRecords(t, c.Streams, arn)
	out, err := p.Handle(ctx, events.DynamoDBEvent{Records: first})
	if err != nil || len(out.BatchItemFailures) > 0 {
		t.Fatalf("the call with the throttled drain: %+v %v; want it to succeed", out, err)
	}
	if p.Owed() != 1 || week() != 0 {
		t.Fatalf("%d drains owed, the week at %d; want 1 owed and nothing moved yet", p.Owed(), week())
	}
	nudges := pendingRecords(t, c.Streams, arn)[len(first):]
	if len(nudges) != 1 {
		t.Fatalf("%d records of the pending items after the owed drain, want 1: one nudge asks for the drain of all", len(nudges))
	}

	clock.Add(time.Second) // the partition's units are back
	if out, err := p.Handle(ctx, events.DynamoDBEvent{Records: nudges}); err != nil || len(out.BatchItemFailures) > 0 {
		t.Fatalf("the nudges' call: %+v %v", out, err)
	}
	if week() != 2 || p.Owed() != 1 {
		t.Fatalf("the week at %d after the owed drain ran (%d owed), want 2", week(), p.Owed())
	}
	// delivered again, as at-least-once allows: nothing moves twice
	if _, err := p.Handle(ctx, events.DynamoDBEvent{Records: append(first, nudges...)}); err != nil || week() != 2 {
		t.Fatalf("the week at %d after the records came again (%v), want 2", week(), err)
	}
}

// A projector with DrainEvery drains a recipe at most once per DrainEvery:
// a drain asked for sooner is owed (its pending item nudged) and runs when
// the nudge's record comes after DrainEvery; nothing is lost (the
// project's own bound: a drain per call took all of the hot recipe's
// partition at a hundredth of AWS's limits).
func TestProjectorSpacesARecipesDrains(t *testing.T) {
	t.Parallel()
	f := newSpacedDrains(t)
	p, clock := f.p, f.clock
	add := func(n int) { addWeek(t, f.c.DB, f.table, n) }
	deliverNew := func() { handleAll(t, p, f.read()) }
	week := func() int { return weekCount(t, f.st) }
	add(1)
	deliverNew()
	if week() != 1 || p.Owed() != 0 {
		t.Fatalf("first drain: the week at %d, %d owed; want 1 and none", week(), p.Owed())
	}
	clock.Add(500 * time.Millisecond)
	add(2)
	deliverNew() // the add's record and the first drain's own: too soon
	if week() != 1 || p.Owed() != 1 {
		t.Fatalf("half a second later: the week at %d, %d owed; want 1 and the drain owed", week(), p.Owed())
	}
	clock.Add(500 * time.Millisecond)
	deliverNew() // the nudge's record, a second after the first drain
	if week() != 2 || p.Owed() != 1 {
		t.Fatalf("a second after the first drain: the week at %d, %d owed; want 2", week(), p.Owed())
	}
}

// An owed drain nudges the items that asked until one still holds deltas:
// an item a drain emptied since its record gives a record that asks for
// nothing, so nudging it alone would leave the others' deltas until the
// recipe's next change (the project's own rule: the drain of the last
// change leaves nothing behind).
func TestOwedDrainNudgesPastAnEmptiedItem(t *testing.T) {
	t.Parallel()
	f := newSpacedDrains(t)
	p, clock, read, c, table := f.p, f.clock, f.read, f.c, f.table
	other := &projections.Projector{Store: f.st} // another lane's or instance's
	handle := func(p *projections.Projector, recs []events.DynamoDBEventRecord) { handleAll(t, p, recs) }
	week := func() int { return weekCount(t, f.st) }
	addWeek(t, c.DB, table, 0)
	handle(p, read()) // p's drain: the week at 1
	clock.Add(100 * time.Millisecond)
	addWeek(t, c.DB, table, 1)
	first := read() // item 1 holds +1
	handle(other, first)
	if week() != 2 {
		t.Fatalf("the other projector's drain: the week at %d, want 2", week())
	}
	addWeek(t, c.DB, table, 2)
	handle(p, append(first, read()...)) // item 1's record again (emptied since), item 2's: owed
	if p.Owed() != 1 {
		t.Fatalf("%d drains owed, want 1", p.Owed())
	}
	clock.Add(time.Second)
	handle(p, read()) // the nudges' records
	if week() != 3 {
		t.Fatalf("after the owed drain: the week at %d, want 3: item 2's +1 was left behind", week())
	}
}

// A record that comes again after its drain moved the counts, while the
// drain is spaced (DrainEvery), still has its weeks checked for the top
// 10: its first delivery's check may have failed (here: its notification
// is gone), and the owed drain's nudge raises nothing, as its item is
// empty. The owed path reads the recipe and checks them.
func TestOwedDrainStillChecksTheTopTen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	createPho(t, st)
	putWeekPending(t, c.DB, table, 1, "") // an item written before items named their author
	recs := pendingRecords(t, c.Streams, arn)
	clock := ddbtest.NewClock(time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC))
	p := &projections.Projector{Store: st, DrainEvery: time.Second, Now: clock.Now}
	start, _ := cooking.WeekStart("2026-W02")
	note := store.NotificationKey("chef", store.Timestamp(start), "top10-2026-W02-pho")
	stored := func() bool {
		out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: note.AV(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}
	if out, err := p.Handle(ctx, events.DynamoDBEvent{Records: recs}); err != nil || len(out.BatchItemFailures) > 0 || !stored() {
		t.Fatalf("first delivery: %+v %v, notification stored: %v", out, err, stored())
	}
	if _, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: note.AV()}); err != nil {
		t.Fatal(err)
	}
	clock.Add(100 * time.Millisecond) // the record again, within DrainEvery
	if out, err := p.Handle(ctx, events.DynamoDBEvent{Records: recs}); err != nil || len(out.BatchItemFailures) > 0 {
		t.Fatalf("redelivery: %+v %v", out, err)
	}
	if p.Owed() != 1 || !stored() {
		t.Fatalf("redelivery within DrainEvery: %d owed, notification stored: %v; want the drain owed and the top 10 checked", p.Owed(), stored())
	}
}

// createPho creates recipe pho, by chef.
func createPho(t *testing.T, st *store.Store) {
	t.Helper()
	if err := st.Cooking.CreateRecipe(context.Background(), cooking.Recipe{RecipeID: "pho", AuthorID: "chef", Title: "Pho", Method: "simmer", Servings: 2, CreatedAt: "2025-10-01T08:00:00.000Z"}); err != nil {
		t.Fatal(err)
	}
}

// putWeekPending writes pho's pending item n holding a +1 of 2026-W02, as
// a projector call adds it, with the recipe's author when author is set.
func putWeekPending(t *testing.T, db *dynamodb.Client, table string, n int, author string) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	k := store.PendingKey("pho", n)
	it := map[string]types.AttributeValue{"PK": s(k.PK), "SK": s(k.SK), "itemType": s(store.TypeCookingPending),
		"derived": &types.AttributeValueMemberBOOL{Value: true}, "recipeId": s("pho"), "w#2026-W02": &types.AttributeValueMemberN{Value: "1"}}
	if author != "" {
		it[store.AttrPendingAuthor] = s(author)
	}
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatal(err)
	}
}

// spacedDrains is the set-up of the DrainEvery tests: recipe pho, a
// projector that drains it at most once a second on a test clock, and a
// reader of the pending items' records that reads on from its last call.
type spacedDrains struct {
	c     *ddb.Clients
	table string
	st    *store.Store
	clock *ddbtest.Clock
	p     *projections.Projector
	read  func() []events.DynamoDBEventRecord
}

func newSpacedDrains(t *testing.T) spacedDrains {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	createPho(t, st)
	clock := ddbtest.NewClock(time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC))
	next := ddbtest.FollowPending(t, c.Streams, arn)
	read := func() []events.DynamoDBEventRecord {
		recs, err := next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	return spacedDrains{c, table, st, clock, &projections.Projector{Store: st, DrainEvery: time.Second, Now: clock.Now}, read}
}

// handleAll hands recs to p in one call and fails the test unless every
// record succeeds.
func handleAll(t *testing.T, p *projections.Projector, recs []events.DynamoDBEventRecord) {
	t.Helper()
	if out, err := p.Handle(context.Background(), events.DynamoDBEvent{Records: recs}); err != nil || len(out.BatchItemFailures) > 0 {
		t.Fatalf("%+v %v", out, err)
	}
}

// addWeek adds a week's +1 to pho's pending item n, as a projector call
// does.
func addWeek(t *testing.T, db *dynamodb.Client, table string, n int) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: store.PendingKey("pho", n).AV(),
		UpdateExpression:          aws.String("SET itemType = :t, derived = :d, recipeId = :r ADD #w :one"),
		ExpressionAttributeNames:  map[string]string{"#w": "w#2026-W02"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": s(store.TypeCookingPending), ":d": &types.AttributeValueMemberBOOL{Value: true}, ":r": s("pho"), ":one": &types.AttributeValueMemberN{Value: "1"}}}); err != nil {
		t.Fatal(err)
	}
}

// pendingRecords are the pending items' records on the stream so far.
func pendingRecords(t *testing.T, streams stream.API, arn string) []events.DynamoDBEventRecord {
	t.Helper()
	ev, err := replay.Capture(context.Background(), streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.DynamoDBEventRecord
	for _, r := range ev.Records {
		if store.IsPendingKey(r.Change.Keys["PK"].String(), r.Change.Keys["SK"].String()) {
			out = append(out, r)
		}
	}
	return out
}

// weekCount is pho's count in 2026-W02's ranking (0: not in it).
func weekCount(t *testing.T, st *store.Store) int {
	t.Helper()
	top, _, err := st.Cooking.TrendingRecipes(context.Background(), "2026-W02", store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(top) == 0 {
		return 0
	}
	return top[0].Count
}
