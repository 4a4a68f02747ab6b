package store_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/store"
)

// afterFirstRead runs then once, after the first answer to a read of
// several items (BatchGetItem or TransactGetItems) it carries, and keeps
// the operations of those that read a pending item.
type afterFirstRead struct {
	once sync.Once
	then func()

	mu    sync.Mutex
	reads []string
}

func (a *afterFirstRead) RoundTrip(req *http.Request) (*http.Response, error) {
	target := req.Header.Get("X-Amz-Target")
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if strings.HasSuffix(target, ".BatchGetItem") || strings.HasSuffix(target, ".TransactGetItems") {
		if bytes.Contains(body, []byte(strings.TrimSuffix(store.PendingPK("pho", 0), "0"))) {
			a.mu.Lock()
			a.reads = append(a.reads, target[strings.LastIndex(target, ".")+1:])
			a.mu.Unlock()
		}
		a.once.Do(a.then)
	}
	return resp, err
}

// sourceIn finds a change id whose call adds to pending item n.
func sourceIn(t *testing.T, prefix string, n int) string {
	t.Helper()
	for i := range 1000 {
		if id := fmt.Sprint(prefix, i); store.PendingShardForTest(id) == n {
			return id
		}
	}
	t.Fatalf("no id for pending item %d", n)
	return ""
}

// The drain reads the recipe's pending items as one snapshot. A BatchGetItem
// is not one: "BatchGetItem … the individual item reads … are not
// serializable as a unit" — only TransactGetItems is ("Amazon DynamoDB
// Transactions: how it works", isolation levels, amazondynamodb/latest/
// developerguide/transaction-apis.html#transaction-isolation), and AWS may
// answer any of its keys unprocessed (API_BatchGetItem), a hot recipe's
// first. The scenario: a cooking is counted in pending item A (+1) and its
// removal in pending item B (−1); a drain read A before the +1 and B (left
// unprocessed by its partition's limit, read again) after the −1. It summed
// −1 and moved it: the week's −1 went to a Trending item that did not exist
// (a delete of nothing), the rating's count went to −1, and the +1 drained
// later left Trending at 1 for a week with no cooking. With a snapshot the
// drain sees both or neither, and a week whose total would go below 0 is
// not moved (it stays pending).
func TestDrainReadsASnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := newStore(t) // the cooking calls, straight to DynamoDB Local
	createPho(t, direct)
	ins, rem := sourceIn(t, "ev-insert-", 2), sourceIn(t, "ev-remove-", 5)

	clock := ddbtest.NewClock(time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC))
	lim := ddblocal.Limit(t, ddblocal.Limits{Scale: 0.01, Now: clock.Now}) // 30 read units a second a key
	hook := &afterFirstRead{then: func() {
		// between the drain's first read and its next: the cooking, then
		// its removal, are counted; a second goes by
		for _, d := range []store.CookingDelta{cookDelta(ins, "an", 1, 4, false), cookDelta(rem, "an", -1, 4, true)} {
			if _, err := direct.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{d}, time.Hour); err != nil {
				t.Error(err)
			}
		}
		clock.Add(time.Second)
	}}
	db, _ := ddblocal.Clients(lim.Endpoint)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: hook}
		o.Retryer = ddb.NewRetryer(0)
	})
	drainer := store.New(db, direct.Table)

	// the hot recipe's pending item B has spent its read units this second
	for range 30 {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(direct.Table), Key: store.PendingKey("pho", 5).AV(), ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (store.Combiner{Store: drainer}).DrainPending(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	r, err := direct.Cooking.GetRecipe(ctx, "pho")
	if err != nil || r.Rating.RatingCount < 0 || r.Rating.RatingSum < 0 {
		t.Errorf("rating after the drain: %+v, %v; a count never goes below 0", r.Rating, err)
	}
	// whatever is left, later drains move
	for range 3 {
		if _, err := (store.Combiner{Store: direct}).DrainPending(ctx, "pho"); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := direct.Cooking.GetRecipe(ctx, "pho"); err != nil || r.Rating.RatingCount != 0 || r.Rating.RatingSum != 0 {
		t.Errorf("rating at the end: %+v, %v; want none (cooked and removed)", r.Rating, err)
	}
	if top, _, err := direct.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10}); err != nil || len(top) != 0 {
		t.Errorf("the week's ranking at the end: %+v, %v; want none (cooked and removed)", top, err)
	}
	if held := pendingHolding(t, direct, "pho"); len(held) != 0 {
		t.Errorf("pending items still holding counts: %v", held)
	}
	// Every read of the drain's items was one snapshot: with the no-clamp
	// rule alone a split read leaves the same totals in this scenario, so
	// the read itself is what is asserted.
	hook.mu.Lock()
	if len(hook.reads) == 0 {
		t.Error("no read of the pending items was seen")
	}
	for _, op := range hook.reads {
		if op != "TransactGetItems" {
			t.Errorf("the drain read its items with %s (reads: %v), want TransactGetItems only", op, hook.reads)
		}
	}
	hook.mu.Unlock()
	if c := lim.Counts(); c.Throttled+c.Unprocessed == 0 {
		t.Errorf("the drain's first read met no limit (%+v): the scenario did not happen", c)
	}
}

// putPending writes a recipe's pending item n with the given week deltas
// (and rating deltas), as a projector call would have added them.
func putPending(t *testing.T, st *store.Store, n int, weeks map[string]int, count, sum int) {
	t.Helper()
	k := store.PendingKey("pho", n)
	it := map[string]types.AttributeValue{"PK": sv(k.PK), "SK": sv(k.SK), "itemType": sv(store.TypeCookingPending),
		"derived": &types.AttributeValueMemberBOOL{Value: true}, "recipeId": sv("pho"),
		"ratingCount": nv(count), "ratingSum": nv(sum)}
	for w, v := range weeks {
		it["w#"+w] = nv(v)
	}
	if _, err := st.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(st.Table), Item: it}); err != nil {
		t.Fatal(err)
	}
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }

// A week whose total would go below 0, and a rating whose count would, are
// not moved: they stay pending, never clamped, until what they lack is
// counted (the project's own invariant: AWS documents nothing of it).
func TestDrainNeverClamps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	createPho(t, st)
	putPending(t, st, 3, map[string]int{"2026-W02": -1, "2026-W03": 1}, -1, -4)
	a, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho")
	if err != nil || a.Applied != 1 {
		t.Fatalf("drain: %+v, %v", a, err)
	}
	held := pendingHolding(t, st, "pho")[3]
	if held.Weeks["2026-W02"] != -1 || held.Weeks["2026-W03"] != 0 || held.RatingCount != -1 || held.RatingSum != -4 {
		t.Fatalf("pending after the drain: %+v; want W02's -1 and the rating left, W03 moved", held)
	}
	if r, _ := st.Cooking.GetRecipe(ctx, "pho"); r.Rating.RatingCount != 0 || r.Rating.RatingSum != 0 {
		t.Errorf("rating: %+v", r.Rating)
	}
	if top, _, err := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10}); err != nil || len(top) != 0 {
		t.Errorf("W02: %+v, %v", top, err)
	}
	// what they lacked comes: all is moved, to nothing
	putPending(t, st, 6, map[string]int{"2026-W02": 1}, 1, 4)
	if _, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	if held := pendingHolding(t, st, "pho"); len(held) != 0 {
		t.Errorf("pending items still holding counts: %v", held)
	}
	if r, _ := st.Cooking.GetRecipe(ctx, "pho"); r.Rating.RatingCount != 0 || r.Rating.RatingSum != 0 {
		t.Errorf("rating at the end: %+v", r.Rating)
	}
	if top, _, _ := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10}); len(top) != 0 {
		t.Errorf("W02 at the end: %+v", top)
	}
}

// One transaction moves at most 80 weeks and notifications (100 items
// with the pending items and the recipe: "TransactWriteItems … up to 100
// actions", amazondynamodb/latest/developerguide/transaction-apis.html).
// What is past the cap is drained by the same call: before, pending item A
// with weeks w1–w80 and B with w81 were drained A first, and A's record,
// empty, asked for nothing; w81 waited for the recipe's next change.
func TestDrainPastItsCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	createPho(t, st)
	var weeks []string
	for y := 2024; y <= 2025; y++ {
		for w := 1; w <= 52 && len(weeks) < 81; w++ {
			weeks = append(weeks, fmt.Sprintf("%d-W%02d", y, w))
		}
	}
	a := map[string]int{}
	for _, w := range weeks[:80] {
		a[w] = 1
	}
	putPending(t, st, 1, a, 0, 0)
	putPending(t, st, 6, map[string]int{weeks[80]: 1}, 0, 0)
	if _, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	if held := pendingHolding(t, st, "pho"); len(held) != 0 {
		t.Fatalf("pending items still holding counts after one call: %v", held)
	}
	for _, w := range []string{weeks[0], weeks[79], weeks[80]} {
		if top, _, err := st.Cooking.TrendingRecipes(ctx, w, store.Page{Limit: 10}); err != nil || len(top) != 1 || top[0].Count != 1 {
			t.Errorf("week %s: %+v, %v", w, top, err)
		}
	}
}

// Weeks stuck below 0 do not take the cap's places: with 80 weeks that
// wait for what they lack (a removal counted, its insert not yet) sorted
// first, a later week that can move is moved, and the 80 stay pending.
func TestDrainCapSkipsStuckWeeks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	createPho(t, st)
	stuck := map[string]int{}
	for i := range 80 {
		stuck[fmt.Sprintf("%d-W%02d", 2020+i/50, 1+i%50)] = -1
	}
	putPending(t, st, 1, stuck, 0, 0)
	putPending(t, st, 6, map[string]int{"2026-W02": 1}, 0, 0)
	if _, err := (store.Combiner{Store: st}).DrainPending(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	if top, _, err := st.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10}); err != nil || len(top) != 1 || top[0].Count != 1 {
		t.Fatalf("the week that can move: %+v, %v; want pho at 1", top, err)
	}
	held := pendingHolding(t, st, "pho")
	if len(held) != 1 || len(held[1].Weeks) != 80 {
		t.Fatalf("pending after the drain: %d items; want item 1 alone, its 80 weeks left", len(held))
	}
}

// A change added to a pending item between a drain's read and its write
// stays there for the next drain: the drain takes off what it read with
// an ADD of the negated deltas, never a SET (the project's own invariant).
func TestDrainLeavesWhatCameMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := newStore(t)
	createPho(t, direct)
	first := sourceIn(t, "ev-first-", 4)
	if _, err := direct.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{cookDelta(first, "an", 1, 5, false)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	meanwhile := sourceIn(t, "ev-meanwhile-", 4) // the same pending item
	hook := &afterFirstRead{then: func() {
		if _, err := direct.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{cookDelta(meanwhile, "binh", 1, 3, false)}, time.Hour); err != nil {
			t.Error(err)
		}
	}}
	db := dynamodb.New(direct.DB.Options(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: hook} })
	if _, err := (store.Combiner{Store: store.New(db, direct.Table)}).DrainPending(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	if r, _ := direct.Cooking.GetRecipe(ctx, "pho"); r.Rating.RatingCount != 1 || r.Rating.RatingSum != 5 {
		t.Fatalf("rating after the drain: %+v; want an's cooking only (it read before binh's)", r.Rating)
	}
	held := pendingHolding(t, direct, "pho")
	if p := held[4]; len(held) != 1 || p.RatingCount != 1 || p.RatingSum != 3 || p.Weeks["2026-W02"] != 1 {
		t.Fatalf("pending after the drain: %+v; want binh's cooking on item 4", held)
	}
	if _, err := (store.Combiner{Store: direct}).DrainPending(ctx, "pho"); err != nil {
		t.Fatal(err)
	}
	if r, _ := direct.Cooking.GetRecipe(ctx, "pho"); r.Rating.RatingCount != 2 || r.Rating.RatingSum != 8 {
		t.Errorf("rating after the next drain: %+v", r.Rating)
	}
}

// Two drains of one recipe at once (its pending items' records in two
// lanes) never move the same deltas: each take is conditioned on the
// pending item's drain sequence, and the loser reads again. Eight drains
// run together, through a Limiter that cancels transactions under way at
// once on one item, as DynamoDB does ("Transaction conflict handling in
// DynamoDB", amazondynamodb/latest/developerguide/transaction-apis.html).
func TestConcurrentDrainsMoveEachDeltaOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := newStore(t)
	createPho(t, direct)
	var deltas []store.CookingDelta
	for n := range store.PendingShards {
		id := sourceIn(t, fmt.Sprint("ev-", n, "-"), n)
		deltas = append(deltas, cookDelta(id, fmt.Sprint("cook", n), 1, 1+n%5, false))
	}
	for _, d := range deltas { // one call each: each to its own pending item
		if _, err := direct.Cooking.ApplyCooking(ctx, "pho", []store.CookingDelta{d}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if held := pendingHolding(t, direct, "pho"); len(held) != store.PendingShards {
		t.Fatalf("%d pending items hold counts, want %d", len(held), store.PendingShards)
	}
	lim := ddblocal.Limit(t, ddblocal.Limits{})
	db, _ := ddblocal.Clients(lim.Endpoint)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.Retryer = ddb.NewRetryer(0) })
	limited := store.New(db, direct.Table)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := (store.Combiner{Store: limited}).DrainPending(ctx, "pho"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	want := 0
	for _, d := range deltas {
		want += d.RatingSum
	}
	if r, _ := direct.Cooking.GetRecipe(ctx, "pho"); r.Rating.RatingCount != store.PendingShards || r.Rating.RatingSum != want {
		t.Errorf("rating after 8 drains at once: %+v, want %d cookings summing %d", r.Rating, store.PendingShards, want)
	}
	if top, _, err := direct.Cooking.TrendingRecipes(ctx, "2026-W02", store.Page{Limit: 10}); err != nil || len(top) != 1 || top[0].Count != store.PendingShards {
		t.Errorf("the week: %+v, %v; want %d", top, err, store.PendingShards)
	}
	if held := pendingHolding(t, direct, "pho"); len(held) != 0 {
		t.Errorf("pending items still holding counts: %v", held)
	}
	t.Logf("limiter: %+v", lim.Counts())
}
