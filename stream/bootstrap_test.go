package stream_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/stream"
)

// ledger is a consumer whose state is both a value set from each item's
// image (its version) and a total kept by differences (new amount minus
// old): a change applied twice or skipped shows in the total.
type ledger struct {
	mu      sync.Mutex
	version map[string]int
	total   int
}

func num(img map[string]events.DynamoDBAttributeValue, name string) int {
	v, ok := img[name]
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(v.Number())
	return n
}

func (l *ledger) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range ev.Records {
		pk := r.Change.Keys["PK"].String()
		l.total += num(r.Change.NewImage, "amount") - num(r.Change.OldImage, "amount")
		if len(r.Change.NewImage) == 0 {
			delete(l.version, pk)
		} else {
			l.version[pk] = num(r.Change.NewImage, "version")
		}
	}
	return events.DynamoDBEventResponse{}, nil
}

func putLedgerItem(t *testing.T, db *dynamodb.Client, table string, i, version, amount int) {
	t.Helper()
	putItem(t, db, table, map[string]ddbtypes.AttributeValue{
		"PK": s(fmt.Sprintf("ITEM#%02d", i)), "SK": s("v"),
		"version": n(strconv.Itoa(version)), "amount": n(strconv.Itoa(amount)),
	})
}

// A consumer started on a table with data by Bootstrap reaches the state a
// consumer that read every change would have: the items' latest versions,
// and a total kept by differences that counts no change twice and misses
// none — with changes, deletions and creations made while the table was
// being scanned (between its pages), on both sides of the scan.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	c, table, arn := newTable(t)
	ctx := context.Background()
	for i := range 20 {
		putLedgerItem(t, c.DB, table, i, 1, i)
	}
	for i := range 10 {
		putLedgerItem(t, c.DB, table, i, 2, 2*i)
	}
	l := &ledger{version: map[string]int{}}
	r := newRunner(t, c.Streams, arn, "bootstrap")
	pages := 0
	b := &stream.Bootstrap{Runner: r, DB: c.DB, Table: table, Segments: 1, PageSize: 4, Progress: func(int64) {
		pages++
		if pages != 2 {
			return
		}
		for i := range 20 { // every item changes, between the scan's pages
			putLedgerItem(t, c.DB, table, i, 3, 100+i)
		}
		for _, i := range []int{3, 17} {
			if _, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{
				"PK": s(fmt.Sprintf("ITEM#%02d", i)), "SK": s("v")}}); err != nil {
				t.Error(err)
			}
		}
		for i := 20; i < 23; i++ {
			putLedgerItem(t, c.DB, table, i, 1, 1000+i)
		}
	}}
	st, err := b.Run(ctx, l.handle)
	if err != nil {
		t.Fatal(err)
	}
	if st.Scanned < 20 || st.Held == 0 {
		t.Fatalf("bootstrap stats %+v: the scan saw changes the stream then held back", st)
	}
	putLedgerItem(t, c.DB, table, 5, 4, 7) // and the consumer goes on as usual
	recsAfter := readStream(t, c.Streams, arn, 20+10+20+2+3+1)
	run := start(t, r, l.handle)
	waitFor(t, "the last change", func() bool {
		cp, _ := r.Checkpoints.Get(ctx, r.Consumer, shardID(t, c.Streams, arn))
		return cp == aws.ToString(recsAfter[len(recsAfter)-1].Dynamodb.SequenceNumber)
	})
	run.stop()

	want := map[string]int{}
	total := 0
	out, err := c.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		v, _ := strconv.Atoi(it["version"].(*ddbtypes.AttributeValueMemberN).Value)
		a, _ := strconv.Atoi(it["amount"].(*ddbtypes.AttributeValueMemberN).Value)
		want[it["PK"].(*ddbtypes.AttributeValueMemberS).Value] = v
		total += a
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if fmt.Sprint(l.version) != fmt.Sprint(want) || l.total != total {
		t.Errorf("consumer: versions %v total %d\ntable:    versions %v total %d", l.version, l.total, want, total)
	}
	t.Logf("scanned %d, handed %d, held %d stream records", st.Scanned, st.Handed, st.Held)
}
