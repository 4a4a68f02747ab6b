package ddblocal_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/ddblocal"
)

// clock is a test's clock: the partitions' units fill only when it moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// limited is a table, a Limiter in front of DynamoDB Local with the test's
// clock, and clients through it that do not retry (a test sees each
// answer).
type limited struct {
	tbl     *ddblocal.Table
	lim     *ddblocal.Limiter
	clock   *clock
	db      *dynamodb.Client
	streams *dynamodbstreams.Client
}

func newLimited(t *testing.T, in dynamodb.CreateTableInput, l ddblocal.Limits) *limited {
	t.Helper()
	c := newClock()
	l.Now = c.Now
	tbl := ddblocal.NewTable(t, in)
	lim := ddblocal.Limit(t, l)
	db, streams := ddblocal.Clients(lim.Endpoint)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	streams = dynamodbstreams.New(streams.Options(), func(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 })
	return &limited{tbl, lim, c, db, streams}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func (l *limited) put(pk, sk string, more map[string]types.AttributeValue) error {
	it := map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk)}
	for k, v := range more {
		it[k] = v
	}
	_, err := l.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(l.tbl.Name), Item: it})
	return err
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk)}
}

// A partition key takes Scale × 1,000 write units a second, for the table
// and each of its global secondary indexes; over them an on-demand table
// answers ThrottlingException with the reason, a provisioned one
// ProvisionedThroughputExceededException. AWS: "Each partition on the table
// can serve up to 3,000 read request units or 1,000 write request units"
// (amazondynamodb/latest/developerguide/bp-partition-key-design.html), and
// the reasons TableWriteKeyRangeThroughputExceeded and
// IndexWriteKeyRangeThroughputExceeded (APIReference/API_ThrottlingReason.html;
// developerguide/throttling-key-range-limit-exceeded-mitigation.html: a
// GSI's partition over its limit throttles the table's write).
func TestLimiterThrottlesAPartitionKeyOverItsWriteUnits(t *testing.T) {
	t.Parallel()
	in := ddblocal.Schema("PK", "SK")
	in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("G"), AttributeType: types.ScalarAttributeTypeS})
	in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
		KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("G"), KeyType: types.KeyTypeHash}},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}
	l := newLimited(t, in, ddblocal.Limits{Scale: 0.01}) // 10 write units a second a key
	for i := range 10 {
		if err := l.put("hot", fmt.Sprint(i), nil); err != nil {
			t.Fatalf("write %d of 10: %v", i, err)
		}
	}
	err := l.put("hot", "10", nil)
	var te *types.ThrottlingException
	if !errors.As(err, &te) || len(te.ThrottlingReasons) != 1 || aws.ToString(te.ThrottlingReasons[0].Reason) != "TableWriteKeyRangeThroughputExceeded" ||
		!strings.HasSuffix(aws.ToString(te.ThrottlingReasons[0].Resource), "table/"+l.tbl.Name) {
		t.Fatalf("the 11th write in a second: %v (%+v), want ThrottlingException, TableWriteKeyRangeThroughputExceeded", err, te)
	}
	if err := l.put("cold", "0", nil); err != nil {
		t.Fatalf("another key: %v", err)
	}
	l.clock.Add(time.Second)
	if err := l.put("hot", "10", nil); err != nil {
		t.Fatalf("a second later: %v", err)
	}

	// Ten items of ten keys share one index key: the eleventh write is the
	// index's to refuse.
	for i := range 10 {
		if err := l.put(fmt.Sprint("k", i), "x", map[string]types.AttributeValue{"G": s("shared")}); err != nil {
			t.Fatalf("indexed write %d: %v", i, err)
		}
	}
	err = l.put("k10", "x", map[string]types.AttributeValue{"G": s("shared")})
	if !errors.As(err, &te) || aws.ToString(te.ThrottlingReasons[0].Reason) != "IndexWriteKeyRangeThroughputExceeded" ||
		!strings.HasSuffix(aws.ToString(te.ThrottlingReasons[0].Resource), "/index/byG") {
		t.Fatalf("the index's 11th write: %v, want IndexWriteKeyRangeThroughputExceeded", err)
	}
	if got, err := l.tbl.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(l.tbl.Name), Key: key("k10", "x")}); err != nil || got.Item != nil {
		t.Fatalf("the throttled write reached the table: %v %v", got, err)
	}

	c := l.lim.Counts()
	if c.Throttled != 2 || len(c.Keys) != 2 {
		t.Fatalf("counts %+v, want 2 throttled on 2 keys", c)
	}
	want := []ddblocal.KeyCount{
		{Table: l.tbl.Name, Key: "hot", Op: "PutItem", Requests: 12, Throttled: 1},
		{Table: l.tbl.Name, Index: "byG", Key: "shared", Op: "PutItem", Requests: 11, Throttled: 1},
	}
	for i, w := range want {
		if c.Keys[i].Since.IsZero() {
			t.Errorf("key %d: no Since", i)
		}
		c.Keys[i].Since = time.Time{}
		if c.Keys[i] != w {
			t.Errorf("key %d: %+v, want %+v", i, c.Keys[i], w)
		}
	}
}

// Requests that meet one key at the same moment share its units: of 40
// writes at once on a key of 10 write units a second, 10 pass; of 60
// strongly consistent reads of a small item at once on a key of 30 read
// units, 30 pass; however they interleave. Each takes its units as it is
// let in (a read its least, one unit for a consistent read of up to 4 KB),
// not after DynamoDB Local answered.
func TestLimiterLetsInOnlyWhatAKeyHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01, NoConflicts: true})
	at := func(n int, call func(i int) error) (passed, throttled int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := call(i)
				var te *types.ThrottlingException
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					passed++
				case errors.As(err, &te):
					throttled++
				default:
					t.Errorf("call %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		return passed, throttled
	}
	if p, th := at(40, func(i int) error { return l.put("hot", fmt.Sprint(i), nil) }); p != 10 || th != 30 {
		t.Errorf("%d passed and %d throttled of 40 writes at once on a key of 10 units, want 10 and 30", p, th)
	}
	l.clock.Add(time.Second)
	p, th := at(60, func(i int) error {
		_, err := l.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(l.tbl.Name), Key: key("hot", "0"), ConsistentRead: aws.Bool(true)})
		return err
	})
	if p != 30 || th != 30 {
		t.Errorf("%d passed and %d throttled of 60 consistent reads at once on a key of 30 units, want 30 and 30", p, th)
	}
}

// A partition key's reads and writes share its units: "up to 3,000 read
// request units or 1,000 write request units, or a linear combination of
// both" (bp-partition-key-design.html). At 1/100, a key written 5 times
// in a second (half its 10 write units) takes 15 strongly consistent reads
// of a small item more (half its 30 read units), not 30.
func TestLimiterSharesAKeysUnitsBetweenReadsAndWrites(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01})
	for i := range 5 {
		if err := l.put("mixed", fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	get := func() error {
		_, err := l.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(l.tbl.Name), Key: key("mixed", "0"), ConsistentRead: aws.Bool(true)})
		return err
	}
	for i := range 15 {
		if err := get(); err != nil {
			t.Fatalf("read %d of 15: %v", i, err)
		}
	}
	var te *types.ThrottlingException
	if err := get(); !errors.As(err, &te) || aws.ToString(te.ThrottlingReasons[0].Reason) != "TableReadKeyRangeThroughputExceeded" {
		t.Fatalf("the 16th read: %v, want ThrottlingException, TableReadKeyRangeThroughputExceeded", err)
	}
	if err := l.put("mixed", "5", nil); !errors.As(err, &te) || aws.ToString(te.ThrottlingReasons[0].Reason) != "TableWriteKeyRangeThroughputExceeded" {
		t.Fatalf("a write after them: %v, want ThrottlingException, TableWriteKeyRangeThroughputExceeded", err)
	}
}

// A provisioned table answers ProvisionedThroughputExceededException
// (API_ThrottlingReason: KeyRangeThroughputExceeded "in both modes").
func TestLimiterAnswersAsAProvisionedTable(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.001, Provisioned: true}) // 1 unit a second
	if err := l.put("hot", "0", nil); err != nil {
		t.Fatal(err)
	}
	err := l.put("hot", "1", nil)
	var pe *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pe) || len(pe.ThrottlingReasons) != 1 || aws.ToString(pe.ThrottlingReasons[0].Reason) != "TableWriteKeyRangeThroughputExceeded" {
		t.Fatalf("%v, want ProvisionedThroughputExceededException with its reason", err)
	}
}

// Reads cost a unit per 4 KB strongly consistent, half eventually
// consistent ("Read consumption", amazondynamodb/latest/developerguide/
// read-write-operations.html): 30 units a second at 1/100 are 30
// consistent reads of a small item, or 60 eventually consistent ones. An
// item larger than a second's units is written, then its key waits.
func TestLimiterMetersReads(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01})
	if err := l.put("r", "a", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func(consistent bool) error {
		_, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.tbl.Name), Key: key("r", "a"), ConsistentRead: aws.Bool(consistent)})
		return err
	}
	count := func(consistent bool) int {
		n := 0
		for get(consistent) == nil {
			if n++; n > 1000 {
				t.Fatal("never throttled")
			}
		}
		return n
	}
	// the put took 3 of the key's 30 read units (a write unit is three)
	if n := count(true); n != 27 {
		t.Errorf("%d consistent reads in the put's second, want 27", n)
	}
	// a query reads its key condition's partition
	out, err := l.db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(l.tbl.Name), KeyConditionExpression: aws.String("#pk = :pk AND begins_with(SK, :a)"),
		ExpressionAttributeNames: map[string]string{"#pk": "PK"}, ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("r"), ":a": s("a")}})
	if err == nil {
		t.Fatalf("a query of the spent key %q: %d items, want throttled", "r", out.Count)
	}
	if _, err := l.db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(l.tbl.Name), KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("other")}}); err != nil {
		t.Fatalf("a query of another key: %v", err)
	}
	l.clock.Add(time.Second)
	if n := count(false); n != 60 {
		t.Errorf("%d eventually consistent reads in a second, want 60", n)
	}
	// a 20 KB item: 20 write units at 10 a second, so the key waits 2 s
	l.clock.Add(time.Second)
	if err := l.put("big", "a", map[string]types.AttributeValue{"blob": s(strings.Repeat("x", 20<<10))}); err != nil {
		t.Fatalf("an item over a second's units: %v", err)
	}
	for _, wait := range []time.Duration{0, time.Second} {
		l.clock.Add(wait)
		if err := l.put("big", "b", nil); err == nil {
			t.Fatalf("after %v the key had units left", wait)
		}
	}
	l.clock.Add(1100 * time.Millisecond)
	if err := l.put("big", "b", nil); err != nil {
		t.Fatalf("after its units came back: %v", err)
	}
}

// BatchGetItem and BatchWriteItem answer what is over its partition's
// units unprocessed and process the rest; only a call that could process
// nothing for throughput fails. AWS: "If DynamoDB returns any unprocessed
// items, you should retry the batch operation on those items" and "If none
// of the items can be processed due to insufficient provisioned throughput
// on all of the tables in the request, then BatchGetItem returns a
// ProvisionedThroughputExceededException" (APIReference/API_BatchGetItem.html,
// API_BatchWriteItem.html).
func TestLimiterAnswersBatchesInPart(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01})
	ctx := context.Background()
	for i := range 10 { // spends "hot"'s write units
		if err := l.put("hot", fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := l.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{l.tbl.Name: {
		{PutRequest: &types.PutRequest{Item: key("hot", "new")}},
		{PutRequest: &types.PutRequest{Item: key("cold", "new")}},
		{DeleteRequest: &types.DeleteRequest{Key: key("hot", "0")}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	left := w.UnprocessedItems[l.tbl.Name]
	if len(left) != 2 || left[0].PutRequest == nil || left[1].DeleteRequest == nil {
		t.Fatalf("unprocessed %+v, want hot's put and delete", left)
	}
	if _, err := l.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{l.tbl.Name: left}}); err == nil {
		t.Fatal("a batch of spent keys only was processed")
	}
	l.clock.Add(time.Second)
	for i := range 30 { // spends "hot"'s read units
		if _, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.tbl.Name), Key: key("hot", "0"), ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	g, err := l.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{l.tbl.Name: {
		Keys: []map[string]types.AttributeValue{key("hot", "1"), key("cold", "new")}, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("PK, SK")}}})
	if err != nil {
		t.Fatal(err)
	}
	got, ka := g.Responses[l.tbl.Name], g.UnprocessedKeys[l.tbl.Name]
	if len(got) != 1 || got[0]["PK"].(*types.AttributeValueMemberS).Value != "cold" {
		t.Fatalf("responses %v, want cold's item", got)
	}
	if len(ka.Keys) != 1 || ka.Keys[0]["PK"].(*types.AttributeValueMemberS).Value != "hot" || !aws.ToBool(ka.ConsistentRead) || aws.ToString(ka.ProjectionExpression) != "PK, SK" {
		t.Fatalf("unprocessed %+v, want hot's key with the request's settings", ka)
	}
	l.clock.Add(time.Second)
	if g, err = l.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: g.UnprocessedKeys}); err != nil || len(g.Responses[l.tbl.Name]) != 1 || len(g.UnprocessedKeys) != 0 {
		t.Fatalf("the retry a second later: %+v %v", g, err)
	}
	if c := l.lim.Counts(); c.Unprocessed != 3 || c.Throttled != 1 {
		t.Fatalf("counts %+v, want 3 unprocessed and the one batch throttled", c)
	}
}

// Limits.Unprocessed leaves a share of any batch, drawn from the seed: a
// caller that retries what is left gets everything.
func TestLimiterLeavesADrawnShareOfBatches(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Unprocessed: 0.3, Seed: 7})
	ctx := context.Background()
	var reqs []types.WriteRequest
	for i := range 25 {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: key(fmt.Sprint("k", i), "x")}})
	}
	calls := 0
	for len(reqs) > 0 {
		out, err := l.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{l.tbl.Name: reqs}})
		if err != nil {
			t.Fatal(err)
		}
		reqs, calls = out.UnprocessedItems[l.tbl.Name], calls+1
	}
	scan, err := l.tbl.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(l.tbl.Name), ConsistentRead: aws.Bool(true)})
	if err != nil || scan.Count != 25 {
		t.Fatalf("%d items after the retries, want 25 (%v)", scan.Count, err)
	}
	if c := l.lim.Counts(); calls < 2 || c.Unprocessed == 0 || c.Throttled != 0 {
		t.Fatalf("%d calls, counts %+v: want some left and retried, none throttled", calls, c)
	}
}

// held is a DynamoDB Local that holds the requests whose target has a
// given operation until released: a Limiter in front of it sees them under
// way, as concurrent callers make them on AWS.
type held struct {
	srv     *httptest.Server
	mu      sync.Mutex
	op      string
	arrived chan struct{}
	release chan struct{}
}

func newHeld(t *testing.T) *held {
	u, _ := url.Parse(ddblocal.Endpoint())
	h := &held{}
	rp := httputil.NewSingleHostReverseProxy(u)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		hold := h.op != "" && strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+h.op)
		arrived, release := h.arrived, h.release
		if hold {
			h.op = ""
		}
		h.mu.Unlock()
		if hold {
			close(arrived)
			<-release
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// next holds the next request of op; the returned channel is closed when
// it arrived.
func (h *held) next(op string) (arrived <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.op, h.arrived, h.release = op, make(chan struct{}), make(chan struct{})
	return h.arrived, sync.OnceFunc(func() { close(h.release) })
}

// A transaction conflicts with another under way on one of its items
// (cancelled: TransactionConflict on that item, None on the others); a
// single write of an item in a transaction under way fails with
// TransactionConflictException; a TransactGetItems of an item being
// written, by a transaction or a single write, is cancelled. AWS:
// "Transaction conflict handling in DynamoDB" (amazondynamodb/latest/
// developerguide/transaction-apis.html#transaction-conflict-handling).
func TestLimiterCancelsOverlappingTransactions(t *testing.T) {
	t.Parallel()
	h := newHeld(t)
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	lim, err := ddblocal.NewLimiter(h.srv.URL, ddblocal.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	db, _ := ddblocal.Clients(lim.Endpoint)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	ctx := context.Background()
	put := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(tbl.Name), Item: key(pk, "x")}}
	}
	tx := func(pks ...string) error {
		var items []types.TransactWriteItem
		for _, pk := range pks {
			items = append(items, put(pk))
		}
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}
	txGet := func(pk string) error {
		_, err := db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: aws.String(tbl.Name), Key: key(pk, "x")}}}})
		return err
	}
	codes := func(err error) string {
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			return fmt.Sprintf("not cancelled: %v", err)
		}
		var out []string
		for _, r := range tc.CancellationReasons {
			out = append(out, aws.ToString(r.Code))
		}
		return strings.Join(out, ",")
	}

	arrived, release := h.next("TransactWriteItems")
	first := make(chan error, 1)
	go func() { first <- tx("a", "b") }()
	<-arrived // a and b are in a transaction under way
	if got := codes(tx("c", "b")); got != "None,TransactionConflict" {
		t.Errorf("a transaction with b: %s, want None,TransactionConflict", got)
	}
	var ce *types.TransactionConflictException
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: key("a", "x")}); !errors.As(err, &ce) {
		t.Errorf("a put of a: %v, want TransactionConflictException", err)
	}
	if got := codes(txGet("a")); got != "TransactionConflict" {
		t.Errorf("a transactional read of a: %s, want TransactionConflict", got)
	}
	if err := tx("c", "d"); err != nil {
		t.Errorf("a transaction of other items: %v", err)
	}
	release()
	if err := <-first; err != nil {
		t.Fatalf("the transaction under way: %v", err)
	}
	if err := tx("c", "b"); err != nil {
		t.Errorf("after it: %v", err)
	}

	// a single write under way: a transactional read of its item is
	// cancelled; another transaction is not (AWS lists no such conflict)
	arrived, release = h.next("PutItem")
	done := make(chan error, 1)
	go func() {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: key("e", "x")})
		done <- err
	}()
	<-arrived
	if got := codes(txGet("e")); got != "TransactionConflict" {
		t.Errorf("a transactional read of an item being put: %s, want TransactionConflict", got)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := lim.Counts(); c.Conflicts != 4 {
		t.Errorf("counts %+v, want 4 conflicts", c)
	}
}

// Overlap is all that conflicts: NoConflicts lets it through, as DynamoDB
// Local does.
func TestLimiterNoConflicts(t *testing.T) {
	t.Parallel()
	h := newHeld(t)
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	lim, err := ddblocal.NewLimiter(h.srv.URL, ddblocal.Limits{NoConflicts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	db, _ := ddblocal.Clients(lim.Endpoint)
	ctx := context.Background()
	tx := func() error {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(tbl.Name), Item: key("a", "x")}}}})
		return err
	}
	arrived, release := h.next("TransactWriteItems")
	first := make(chan error, 1)
	go func() { first <- tx() }()
	<-arrived
	second := make(chan error, 1)
	go func() { second <- tx() }()
	release()
	if err := errors.Join(<-first, <-second); err != nil {
		t.Fatal(err)
	}
}

// A shard is read by two readers at most: a third one's GetRecords calls
// answer LimitExceededException while two others are reading ("More than 2
// processes are reading from the same streams shard at the same time.
// Exceeding this limit may result in request throttling":
// APIReference/API_streams_LimitExceededException.html). AWS documents no
// rate per reader; a reader makes at most Limits.StreamReads (5) calls a
// second here, Kinesis Data Streams' GetRecords limit
// (kinesis/latest/APIReference/API_GetRecords.html), above Lambda's 4 polls
// a second (lambda/latest/dg/with-ddb.html).
func TestLimiterLimitsGetRecordsPerShard(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{})
	ctx := context.Background()
	desc, err := l.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(l.tbl.StreamARN)})
	if err != nil {
		t.Fatal(err)
	}
	shard := aws.ToString(desc.StreamDescription.Shards[0].ShardId)
	reader := func() *string {
		it, err := l.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(l.tbl.StreamARN), ShardId: aws.String(shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		return it.ShardIterator
	}
	read := func(iter **string) error {
		out, err := l.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: *iter})
		if err == nil {
			*iter = out.NextShardIterator
		}
		return err
	}
	var le *streamtypes.LimitExceededException
	a := reader()
	for i := range 5 {
		if err := read(&a); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if err := read(&a); !errors.As(err, &le) {
		t.Fatalf("a reader's 6th call in a second: %v, want LimitExceededException", err)
	}
	// c's iterator is taken after b read: DynamoDB Local answers two
	// GetShardIterator calls at one position within a millisecond with the
	// same iterator, which the Limiter, keeping readers by iterator, would
	// take for one reader (AWS's iterators are each their own).
	b := reader()
	if err := read(&b); err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	c := reader()
	if err := read(&c); !errors.As(err, &le) {
		t.Fatalf("a third reader while two read: %v, want LimitExceededException", err)
	}
	l.clock.Add(time.Second)
	if err := read(&c); err != nil {
		t.Fatalf("the third reader a second later, the others idle: %v", err)
	}
	if err := read(&a); err != nil {
		t.Fatalf("the first reader again, one other reading: %v", err)
	}
	cs := l.lim.Counts()
	if cs.StreamLimited != 2 || len(cs.Keys) != 1 || cs.Keys[0].Index != "stream" || cs.Keys[0].Key != shard || cs.Keys[0].Requests != 10 || cs.Keys[0].Throttled != 2 {
		t.Fatalf("counts %+v", cs)
	}
}

// What the Limiter cannot read, and every other operation, goes on to
// DynamoDB Local unchanged: its own answers come back.
func TestLimiterPassesOnWhatItDoesNotMeter(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01})
	ctx := context.Background()
	if _, err := l.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(l.tbl.Name)}); err != nil {
		t.Fatal(err)
	}
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("no-such-table"), Item: key("a", "b")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("a put to a missing table: %v, want DynamoDB Local's ResourceNotFoundException", err)
	}
	// A PutItem whose body is not JSON: the Limiter cannot meter it and
	// hands it on, so its caller gets what DynamoDB Local answers it.
	send := func(endpoint string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader("{not json"))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20261205/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	code, body := send(l.lim.Endpoint)
	wantCode, wantBody := send(l.lim.Backend())
	if code != wantCode || body != wantBody || code < 400 {
		t.Fatalf("a PutItem whose body is not JSON, through the Limiter: %d %s; DynamoDB Local's own answer: %d %s", code, body, wantCode, wantBody)
	}
}

func TestParseScale(t *testing.T) {
	for in, want := range map[string]float64{"0.01": 0.01, "1/100": 0.01, "1": 1, " 1/1000 ": 0.001} {
		if got, err := ddblocal.ParseScale(in); err != nil || got != want {
			t.Errorf("ParseScale(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1/0", "x", "0.01x", "1/", "NaN", "Inf"} {
		if _, err := ddblocal.ParseScale(in); err == nil {
			t.Errorf("ParseScale(%q) took it", in)
		}
	}
	if got := (ddblocal.Limits{Scale: 0.01}).String(); got != "1/100 of AWS's per-partition limits" {
		t.Errorf("String: %q", got)
	}
}

// Limits a Limiter cannot hold to are refused when it starts, not met as
// a key that never throttles (NaN compares false with everything).
func TestNewLimiterRefusesLimitsItCannotHold(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, l := range []ddblocal.Limits{{Scale: -1}, {Scale: nan}, {Scale: inf}, {Unprocessed: -0.1}, {Unprocessed: 1.5}, {Unprocessed: nan}} {
		if lim, err := ddblocal.NewLimiter("http://127.0.0.1:1", l); err == nil {
			_ = lim.Close()
			t.Errorf("NewLimiter took %+v", l)
		}
	}
	lim, err := ddblocal.NewLimiter("http://127.0.0.1:1", ddblocal.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	for _, sc := range []float64{0, -1, nan, inf} {
		if lim.SetScale(sc) == nil {
			t.Errorf("SetScale(%v) took it", sc)
		}
	}
}

// A key that met no limit and took no request for a minute is forgotten,
// so a long run's counts hold its busy keys only: a key's requests are
// counted from when it was last idle (the Limiter's own bookkeeping: AWS
// documents nothing of it).
func TestLimiterForgetsIdleKeys(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01})
	for i := range 5 {
		if err := l.put("a", fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	l.clock.Add(61 * time.Second)
	if err := l.put("b", "x", nil); err != nil { // the sweep
		t.Fatal(err)
	}
	for i := range 11 {
		_ = l.put("a", fmt.Sprint("again", i), nil)
	}
	c := l.lim.Counts()
	if len(c.Keys) != 1 || c.Keys[0].Key != "a" || c.Keys[0].Requests != 11 || c.Keys[0].Throttled != 1 {
		t.Fatalf("keys %+v, want a with the 11 requests since it was idle, 1 throttled", c.Keys)
	}
}

// SetScale changes each key's units a second at once: a load's set-up at
// AWS's own limits, its measured phases at a fraction of them.
func TestLimiterSetScale(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{})
	for i := range 20 {
		if err := l.put("k", fmt.Sprint(i), nil); err != nil {
			t.Fatalf("at AWS's limits, write %d: %v", i, err)
		}
	}
	if err := l.lim.SetScale(0.01); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := l.put("k", fmt.Sprint("x", i), nil); err != nil {
			t.Fatalf("after SetScale(0.01), write %d: %v", i, err)
		}
	}
	if err := l.put("k", "y", nil); err == nil {
		t.Fatal("after SetScale(0.01) the key had more than 10 units in the second")
	}
	if l.lim.Limits().Scale != 0.01 {
		t.Errorf("Limits().Scale %v", l.lim.Limits().Scale)
	}
	if err := l.lim.SetScale(0); err == nil {
		t.Error("SetScale(0) taken")
	}
}

// A caller that names itself in the User-Agent (the SDK's AppID, sent as
// app/<id>: "Application ID", the AWS SDKs and Tools reference guide,
// feature-appid.html) is counted apart on the same key and operation, so
// a report can tell one part of a program's requests from another (a
// projector's drains, set by its polls, from its per-change writes).
func TestLimiterCountsEachCallerApart(t *testing.T) {
	t.Parallel()
	l := newLimited(t, ddblocal.Schema("PK", "SK"), ddblocal.Limits{Scale: 0.01})
	drains := dynamodb.New(l.db.Options(), func(o *dynamodb.Options) { o.AppID = "drain" })
	for i := range 3 {
		if err := l.put("a", fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if _, err := drains.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(l.tbl.Name), Item: key("a", fmt.Sprint("d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int64{}
	for _, k := range l.lim.KeyCounts() {
		if k.Key == "a" && k.Op == "PutItem" {
			got[k.App] += k.Requests
		}
	}
	if len(got) != 2 || got[""] != 3 || got["drain"] != 2 {
		t.Fatalf("PutItem requests on a by caller: %v, want 3 of no app and 2 of drain", got)
	}
}
