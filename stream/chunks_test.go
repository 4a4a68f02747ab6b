package stream_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
)

// writeUnits counts the write capacity units a client's writes cost, by
// DynamoDB's rule: one per KB of the item written, or of the item deleted
// ("Write capacity units": a write of an item up to 1 KB costs one unit,
// "For items larger than 1 KB, additional write capacity units are
// required"; "a DeleteItem ... the size of the deleted item":
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
type writeUnits struct {
	mu    sync.Mutex
	units int
	sizes map[string]int // the size of each item written, by key
}

func itemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *ddbtypes.AttributeValueMemberS:
			n += len(v.Value)
		case *ddbtypes.AttributeValueMemberB:
			n += len(v.Value)
		case *ddbtypes.AttributeValueMemberN:
			n += len(v.Value)
		case *ddbtypes.AttributeValueMemberL:
			n += 3
			for _, e := range v.Value {
				n += 1 + itemSize(map[string]ddbtypes.AttributeValue{"": e})
			}
		}
	}
	return n
}

func keyOf(item map[string]ddbtypes.AttributeValue) string {
	c, _ := item["consumer"].(*ddbtypes.AttributeValueMemberS)
	s, _ := item["shardId"].(*ddbtypes.AttributeValueMemberS)
	return c.Value + "\x00" + s.Value
}

func (w *writeUnits) put(item map[string]ddbtypes.AttributeValue) {
	size := itemSize(item)
	w.units += (size + 1023) / 1024
	w.sizes[keyOf(item)] = size
}

func (w *writeUnits) del(key map[string]ddbtypes.AttributeValue) {
	size := w.sizes[keyOf(key)]
	w.units += max((size+1023)/1024, 1)
	delete(w.sizes, keyOf(key))
}

func (w *writeUnits) option(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("writeUnits", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		w.mu.Lock()
		switch v := in.Parameters.(type) {
		case *dynamodb.PutItemInput:
			w.put(v.Item)
		case *dynamodb.DeleteItemInput:
			w.del(v.Key)
		case *dynamodb.BatchWriteItemInput:
			for _, reqs := range v.RequestItems {
				for _, r := range reqs {
					if r.PutRequest != nil {
						w.put(r.PutRequest.Item)
					} else if r.DeleteRequest != nil {
						w.del(r.DeleteRequest.Key)
					}
				}
			}
		}
		w.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.Before)
}

func (w *writeUnits) take() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.units
	w.units = 0
	return n
}

// windowState is a checkpoint value as a windowed consumer's is: a
// sequence number and its open windows' state, here about 1 MB in 2,000
// keys of one window, each an aggregate of its own (varied text: hashes).
func windowState(seq int, changed map[int]int) string { return windowStateOf(2000, seq, changed) }

// windowStateOf is windowState with keys keys (about 470 bytes each).
func windowStateOf(keys, seq int, changed map[int]int) string {
	state := map[string]string{}
	for k := range keys {
		var agg strings.Builder
		for j := range 7 {
			sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d", k, j))
			fmt.Fprintf(&agg, "%x;", sum)
		}
		state[fmt.Sprintf("room-%04d", k)] = fmt.Sprintf("%d:%s", changed[k], agg.String())
	}
	b, _ := json.Marshal(map[string]any{"seq": fmt.Sprint(seq), "windows": []any{map[string]any{"start": "2026-12-06T00:00:00Z", "state": state}}})
	return fmt.Sprintf("%021d\n%s", seq, b)
}

// A checkpoint of a megabyte of window state with one change a second
// costs what changed: each Put writes the chunks around the change and
// deletes the ones it replaced, at most a tenth of the write units of
// writing the whole state (the stream issue's goal), and reads back
// whole after every Put.
func TestCheckpointCostsWhatChanged(t *testing.T) {
	ctx := context.Background()
	c, table, _ := newTable(t)
	wu := &writeUnits{sizes: map[string]int{}}
	db := dynamodb.New(c.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, wu.option) })
	tc := &stream.TableCheckpoints{DB: db, Table: table + "-checkpoints"}
	if err := tc.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	changed := map[int]int{}
	first := windowState(1, changed)
	if err := tc.Put(ctx, "windows", "shard-1", first); err != nil {
		t.Fatal(err)
	}
	whole := wu.take()
	const seconds = 20
	total := 0
	for s := range seconds {
		changed[(s*397)%2000]++ // one key's state changes a second
		v := windowState(2+s, changed)
		if err := tc.Put(ctx, "windows", "shard-1", v); err != nil {
			t.Fatal(err)
		}
		total += wu.take()
		if got, err := tc.Get(ctx, "windows", "shard-1"); err != nil || got != v {
			t.Fatalf("second %d: read back %d bytes (want %d), %v", s, len(got), len(v), err)
		}
	}
	perSecond := float64(total) / seconds
	t.Logf("state %d bytes: the first checkpoint %d write units, then %.1f a second with one change a second (%.3f of the first)",
		len(first), whole, perSecond, perSecond/float64(whole))
	if whole < len(first)/1024 {
		t.Fatalf("the first checkpoint cost %d units for %d bytes: the count is wrong", whole, len(first))
	}
	if perSecond > float64(whole)/10 {
		t.Errorf("%.1f write units a second, over a tenth of the %d a whole state costs", perSecond, whole)
	}
	// a small checkpoint after: the chunks are deleted
	if err := tc.Put(ctx, "windows", "shard-1", "000000000000000000099"); err != nil {
		t.Fatal(err)
	}
	out, err := c.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tc.Table)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 {
		t.Errorf("%d items after a small checkpoint, want the checkpoint's alone", len(out.Items))
	}
}

// A checkpoint written in parts, as TableCheckpoints wrote one before
// chunks (the item holding the first 300 KB, "parts" and "partsVersion",
// the rest in "#state#<shard>#<version>#<n>"), still reads back whole; the
// next Put replaces it and deletes its parts.
func TestTableCheckpointsReadsParts(t *testing.T) {
	ctx := context.Background()
	c, table, _ := newTable(t)
	tc := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
	if err := tc.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	v := "seq-1\n" + strings.Repeat("é", 200<<10) // 400 KB: the item and one part
	cut := 300 << 10
	put := func(sk string, attrs map[string]ddbtypes.AttributeValue) {
		attrs["consumer"] = &ddbtypes.AttributeValueMemberS{Value: "c"}
		attrs["shardId"] = &ddbtypes.AttributeValueMemberS{Value: sk}
		if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tc.Table), Item: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	put("#state#shard-1#v1#00000", map[string]ddbtypes.AttributeValue{"data": &ddbtypes.AttributeValueMemberB{Value: []byte(v[cut:])}})
	put("shard-1", map[string]ddbtypes.AttributeValue{"sequenceNumber": &ddbtypes.AttributeValueMemberS{Value: v[:cut]},
		"parts": &ddbtypes.AttributeValueMemberN{Value: "1"}, "partsVersion": &ddbtypes.AttributeValueMemberS{Value: "v1"}})
	if got, err := tc.Get(ctx, "c", "shard-1"); err != nil || got != v {
		t.Fatalf("read back %d bytes (want %d), %v", len(got), len(v), err)
	}
	if err := tc.Put(ctx, "c", "shard-1", "seq-2"); err != nil {
		t.Fatal(err)
	}
	out, err := c.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tc.Table)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 {
		t.Errorf("%d items after the Put, want the checkpoint's alone", len(out.Items))
	}
}

// Two stores writing one shard's checkpoint in turn (a runner handing its
// lease over, and the old one writing once more) never leave an item that
// names a chunk the other deleted: each write reads back whole from a
// third store, and once done only the current item's chunks are left.
func TestChunkedCheckpointTwoWriters(t *testing.T) {
	ctx := context.Background()
	c, table, _ := newTable(t)
	a := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
	if err := a.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	b := &stream.TableCheckpoints{DB: c.DB, Table: a.Table}
	reader := &stream.TableCheckpoints{DB: c.DB, Table: a.Table}
	changed := map[int]int{}
	for i, w := range []*stream.TableCheckpoints{a, b, a, a, b, a, b, b} {
		if i == 1 {
			if _, err := b.Get(ctx, "windows", "shard-1"); err != nil { // b starts from what a wrote
				t.Fatal(err)
			}
		}
		changed[i*7]++
		v := windowState(i+1, changed)
		if err := w.Put(ctx, "windows", "shard-1", v); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if got, err := reader.Get(ctx, "windows", "shard-1"); err != nil || got != v {
			t.Fatalf("write %d: read back %d bytes (want %d), %v", i, len(got), len(v), err)
		}
	}
	out, err := c.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(a.Table)})
	if err != nil {
		t.Fatal(err)
	}
	item, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Table), Key: map[string]ddbtypes.AttributeValue{
		"consumer": &ddbtypes.AttributeValueMemberS{Value: "windows"}, "shardId": &ddbtypes.AttributeValueMemberS{Value: "shard-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, id := range item.Item["chunks"].(*ddbtypes.AttributeValueMemberL).Value {
		named[id.(*ddbtypes.AttributeValueMemberS).Value] = true
	}
	if len(out.Items) != 1+len(named) {
		t.Errorf("%d items in the table, want the checkpoint and its %d chunks", len(out.Items), len(named))
	}
}

// waitClock is a clock that moves only when its user waits (sleep: a
// TableCheckpoints' Sleep), as a ddblocal Limiter's Now: a partition's units fill by the waits the
// writer makes, not by how fast the machine answers, so what is throttled
// is the same on every machine.
type waitClock struct {
	mu  sync.Mutex
	now time.Time
}

func newWaitClock() *waitClock {
	return &waitClock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
}

func (c *waitClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *waitClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// Behind DynamoDB as AWS runs it, two writers taking turns never leave a
// checkpoint that does not read back whole, in two cases: a ddblocal
// Limiter leaving 15% of every batch's keys unprocessed ("If DynamoDB
// returns any unprocessed items, you should retry the batch operation on
// those items": DynamoDB API Reference, BatchWriteItem; BatchGetItem's
// UnprocessedKeys alike), and the checkpoint table's one partition key
// held to 500 write units a second (Scale 0.5 of the 1,000 a partition
// takes: "Throughput capacity per partition", DynamoDB Developer Guide,
// Partitions and data distribution), so that a megabyte of chunks is
// mostly answered unprocessed (and a PutItem that comes while the units
// are spent throttled, ThrottlingException) until the partition's units
// fill again. The Limiter's clock moves only by the writers' waits (a
// waitClock), so what is throttled does not depend on the machine's
// speed. A Put that fails (its bounded retries spent) is tried again a
// second later, as the checkpointer does.
func TestChunkedCheckpointUnderAWSLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits ddblocal.Limits
		turns  string // which writer puts, in turn
		met    func(ddblocal.Counts) bool
	}{
		{"unprocessed", ddblocal.Limits{Unprocessed: 0.15, Seed: 7}, "aabab", func(c ddblocal.Counts) bool { return c.Unprocessed > 0 }},
		// each turn of writer writes the whole megabyte again: three
		// turns, not five, keep it to seconds
		{"throttled", ddblocal.Limits{Scale: 0.5, Seed: 7}, "aab", func(c ddblocal.Counts) bool { return c.Unprocessed > 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, table, _ := newTable(t)
			clock := newWaitClock()
			tc.limits.Now = clock.Now
			lim := ddblocal.Limit(t, tc.limits)
			db, _ := ddblocal.Clients(lim.Endpoint)
			// one try a call: the SDK's own retries of a throttle wait
			// real time; the test's tries wait on its clock
			db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			store := func() *stream.TableCheckpoints {
				return &stream.TableCheckpoints{DB: db, Table: table + "-checkpoints", Sleep: clock.sleep}
			}
			a, b, reader := store(), store(), store()
			if err := a.CreateTable(ctx); err != nil {
				t.Fatal(err)
			}
			// a try that fails is made again a second later, as the
			// checkpointer does (its backoff)
			put := func(w *stream.TableCheckpoints, v string) {
				t.Helper()
				var err error
				for range 20 {
					if err = w.Put(ctx, "windows", "shard-1", v); err == nil {
						return
					}
					_ = clock.sleep(ctx, time.Second)
				}
				t.Fatalf("Put failed 20 times: %v", err)
			}
			get := func() (string, error) {
				var got string
				var err error
				for range 20 {
					if got, err = reader.Get(ctx, "windows", "shard-1"); err == nil {
						break
					}
					_ = clock.sleep(ctx, time.Second)
				}
				return got, err
			}
			changed := map[int]int{}
			for i, turn := range tc.turns {
				w := a
				if turn == 'b' {
					w = b
				}
				changed[i*11]++
				v := windowState(i+1, changed)
				put(w, v)
				if got, err := get(); err != nil || got != v {
					t.Fatalf("write %d: read back %d bytes (want %d), %v", i, len(got), len(v), err)
				}
			}
			c := lim.Counts()
			if !tc.met(c) {
				t.Fatalf("the limiter let every request through: %+v", c)
			}
			t.Logf("limiter: %d requests, %d batch keys unprocessed, %d throttled", c.Requests, c.Unprocessed, c.Throttled)
		})
	}
}

// A Put that gives up with its partition's units spent leaves the chunks
// it wrote, and knows it: tried again, it writes only the rest. (Were
// every try to write the whole state again, a partition throttled by the
// first try's megabyte would throttle every try after it.)
func TestChunkedCheckpointTriedAgainWritesOnlyTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, table, _ := newTable(t)
	clock := newWaitClock() // never moved: the units spent stay spent
	lim := ddblocal.Limit(t, ddblocal.Limits{Scale: 0.5, Seed: 7, Now: clock.Now})
	limited, _ := ddblocal.Clients(lim.Endpoint)
	// one try a call: the SDK's own retries of a throttle wait real time
	limited = dynamodb.New(limited.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	c := &stream.TableCheckpoints{DB: limited, Table: table + "-checkpoints",
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if err := c.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	v := windowState(1, map[int]int{})
	// its chunks are left unprocessed once the units are spent, and then
	// a batch of them all is throttled whole ("If none of the items can
	// be processed due to insufficient provisioned throughput …":
	// BatchWriteItem)
	if err := c.Put(ctx, "windows", "shard-1", v); err == nil {
		t.Fatal("a Put of a megabyte on a partition whose units never fill succeeded")
	}
	direct, _ := ddblocal.Clients(ddblocal.DirectEndpoint())
	count := func() int {
		n := 0
		p := dynamodb.NewQueryPaginator(direct, &dynamodb.QueryInput{
			TableName: aws.String(c.Table), ConsistentRead: aws.Bool(true), Select: ddbtypes.SelectCount,
			KeyConditionExpression:    aws.String("consumer = :c"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":c": &ddbtypes.AttributeValueMemberS{Value: "windows"}},
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n += int(out.Count)
		}
		return n
	}
	first := count()
	if first == 0 {
		t.Fatal("the first Put wrote no chunk: the partition had no units to begin with")
	}

	// tried again where nothing is throttled, counting what it writes
	wu := &writeUnits{sizes: map[string]int{}}
	c.DB = dynamodb.New(direct.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, wu.option) })
	if err := c.Put(ctx, "windows", "shard-1", v); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "windows", "shard-1"); err != nil || got != v {
		t.Fatalf("read back %d bytes (want %d), %v", len(got), len(v), err)
	}
	all := count() - 1 // the chunks, without the checkpoint item
	if again := len(wu.sizes) - 1; again != all-first {
		t.Errorf("tried again, the Put wrote %d chunks: want the %d of %d the first try had not written", again, all-first, all)
	}
	t.Logf("first try: %d of %d chunks written; second: %d", first, all, len(wu.sizes)-1)
}

// A writer that reads the item another writer put (Get), while that
// writer is still deleting the chunks of the item it replaced, writes in
// a generation of its own: the late deletes cannot take chunks its item
// names. (A lease handed back while the runner that took it is still
// cleaning up: a's chunks of v1 and of v3 have the same content, and in
// the same generation the same keys. 140 KB of state: chunked, as any
// value over 64 KB is.)
func TestChunkedCheckpointReaderWritesAfterLateDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, table, _ := newTable(t)
	a := &stream.TableCheckpoints{DB: c.DB, Table: table + "-checkpoints"}
	if err := a.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	deleting, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	holdDeletes := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("holdDeletes", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if v, ok := in.Parameters.(*dynamodb.BatchWriteItemInput); ok {
				for _, reqs := range v.RequestItems {
					if len(reqs) > 0 && reqs[0].DeleteRequest != nil {
						once.Do(func() { close(deleting) })
						<-release
					}
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	}
	b := &stream.TableCheckpoints{DB: dynamodb.New(c.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, holdDeletes) }), Table: a.Table}
	reader := &stream.TableCheckpoints{DB: c.DB, Table: a.Table}

	v1 := windowStateOf(300, 1, map[int]int{})
	if err := a.Put(ctx, "windows", "shard-1", v1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "windows", "shard-1"); err != nil {
		t.Fatal(err)
	}
	v2 := windowStateOf(300, 2, map[int]int{5: 1})
	bDone := make(chan error, 1)
	go func() { bDone <- b.Put(ctx, "windows", "shard-1", v2) }() // replaces v1, then deletes v1's chunks: held
	<-deleting
	if got, err := a.Get(ctx, "windows", "shard-1"); err != nil || got != v2 {
		t.Fatalf("a reads %d bytes (want b's %d), %v", len(got), len(v2), err)
	}
	v3 := windowStateOf(300, 3, map[int]int{})
	if err := a.Put(ctx, "windows", "shard-1", v3); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if got, err := reader.Get(ctx, "windows", "shard-1"); err != nil || got != v3 {
		t.Fatalf("after b's late deletes: read back %d bytes (want a's %d), %v", len(got), len(v3), err)
	}
}
