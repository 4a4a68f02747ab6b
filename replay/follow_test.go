package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// A consumer that derives in two steps through its table (a source item's
// record asks for a pending item, whose own record asks for the derived
// one) is whole only when the kit delivers the records of its own writes
// too: with Follow, every schedule (ParallelizationFactor 1 and 10) gives
// the derived items; without it, the second step never runs. Delivering a handler's own writes back is the
// kit's: AWS documents that a stream carries every write to the table,
// the consumer's own included (amazondynamodb/latest/developerguide/
// Streams.html), not a kit that follows them.
func TestFollowDeliversTheHandlersOwnRecords(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", ""))
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for i := range 5 {
		if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name),
			Item: map[string]types.AttributeValue{"PK": s(fmt.Sprintf("SRC#%d", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := replay.Capture(ctx, tbl.Streams, tbl.StreamARN)
	if err != nil {
		t.Fatal(err)
	}
	// the handler's client, which the kit can crash between requests
	db := dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	put := func(ctx context.Context, pk string, derived bool) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name),
			Item: map[string]types.AttributeValue{"PK": s(pk), "derived": &types.AttributeValueMemberBOOL{Value: derived}}})
		return err
	}
	handler := stream.Keyed{}.Handler(stream.Each(func(ctx context.Context, r events.DynamoDBEventRecord) error {
		if r.EventName == "REMOVE" {
			return nil
		}
		pk := r.Change.Keys["PK"].String()
		switch {
		case strings.HasPrefix(pk, "SRC#"):
			return put(ctx, "PENDING#"+pk[4:], true)
		case strings.HasPrefix(pk, "PENDING#"):
			return put(ctx, "DONE#"+pk[8:], true)
		}
		return nil
	}))
	state := replay.TableState{DB: tbl.DB, Table: tbl.Name, Derived: replay.DerivedFlag}
	follow, err := replay.Follower(ctx, tbl.Streams, tbl.StreamARN, func(r events.DynamoDBEventRecord) bool {
		return strings.HasPrefix(r.Change.Keys["PK"].String(), "PENDING#")
	})
	if err != nil {
		t.Fatal(err)
	}
	done := func(st any) int {
		n := 0
		for _, it := range st.([]map[string]any) {
			if strings.HasPrefix(it["PK"].(string), "DONE#") {
				n++
			}
		}
		return n
	}
	rep, err := replay.Check(ctx, ev, replay.Target{Handler: handler, Reset: state.Reset, State: state.State, Follow: follow,
		Expect: func(st any) error {
			if n := done(st); n != 5 {
				return fmt.Errorf("%d derived items, want 5", n)
			}
			return nil
		}}, append(replay.Schedules(3, 4), replay.Parallel(replay.Schedules(4, 2), 10)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	// Without Follow, the pending items' records never come.
	if err := state.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Deliver(ctx, ev, replay.Target{Handler: handler}, replay.AsCaptured); err != nil {
		t.Fatal(err)
	}
	st, err := state.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := done(st); n != 0 {
		t.Errorf("without Follow: %d derived items, want 0", n)
	}
}

// A handler whose own writes keep asking for more never settles: Deliver
// says so after MaxFollows rounds instead of running on. (The kit's own
// bound: AWS documents nothing of it; on Lambda such a handler runs on.)
func TestFollowStopsAHandlerThatNeverSettles(t *testing.T) {
	ctx := context.Background()
	rec := events.DynamoDBEventRecord{EventID: "1", EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{SequenceNumber: "1", Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("A")}}}
	rounds := 0
	_, err := replay.Deliver(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}, replay.Target{
		Handler: stream.Keyed{}.Handler(stream.Each(func(context.Context, events.DynamoDBEventRecord) error { return nil })),
		Follow: func(context.Context) ([]events.DynamoDBEventRecord, error) {
			rounds++
			r := rec
			r.EventID, r.Change.SequenceNumber = fmt.Sprint(rounds+1), fmt.Sprint(rounds+1)
			return []events.DynamoDBEventRecord{r}, nil
		},
	}, replay.AsCaptured)
	if err == nil || !strings.Contains(err.Error(), "still made records") || rounds != replay.MaxFollows {
		t.Fatalf("after %d rounds: %v", rounds, err)
	}
}

// expiring is a stream.API whose iterators, once read, expire (as AWS's do
// after 15 minutes: "A shard iterator expires 15 minutes after it is
// returned to the requester", amazondynamodb/latest/APIReference/
// API_streams_GetShardIterator.html), and whose first read after a page of
// records fails, once.
type expiring struct {
	stream.API
	read         map[string]bool
	fail, failed bool
}

func (e *expiring) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if e.fail {
		e.fail = false
		return nil, errors.New("connection reset")
	}
	it := aws.ToString(in.ShardIterator)
	if e.read[it] {
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("expired")}
	}
	e.read[it] = true
	out, err := e.API.GetRecords(ctx, in, o...)
	if err == nil && len(out.Records) > 0 && !e.failed {
		e.fail, e.failed = true, true // the read after records fails
	}
	return out, err
}

// A follow that fails part way returns nothing and moves nowhere: the next
// one returns what the failed one had read, though the shard's iterator
// expired meanwhile.
func TestFollowLosesNothingWhenACallFails(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", ""))
	ctx := context.Background()
	api := &expiring{API: tbl.Streams, read: map[string]bool{}}
	follow, err := replay.Follower(ctx, api, tbl.StreamARN, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name),
			Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if recs, err := follow(ctx); err == nil {
		t.Fatalf("the failing call returned %d records and no error", len(recs))
	}
	recs, err := follow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("after a failed call: %d records, want the 3 it had read", len(recs))
	}
}

// Capture reads a shard that two others are reading: DynamoDB Streams
// refuses a third reader's GetRecords ("More than 2 processes are reading
// from the same streams shard at the same time. Exceeding this limit may
// result in request throttling": LimitExceededException, the DynamoDB
// Streams API's GetRecords errors, paraphrased) and Capture waits it out,
// as a test's consumers may be reading the stream it captures. Its client
// here retries nothing, so the SDK's own retries hide nothing.
func TestCaptureWaitsOutOtherReaders(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", ""))
	ctx := context.Background()
	if _, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name),
		Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "a"}}}); err != nil {
		t.Fatal(err)
	}
	api := dynamodbstreams.New(tbl.Streams.Options(), func(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 })
	shards, err := stream.Shards(ctx, api, tbl.StreamARN)
	if err != nil || len(shards) != 1 {
		t.Fatalf("shards: %v %v", shards, err)
	}
	read := func() error {
		it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(tbl.StreamARN),
			ShardId: shards[0].ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err == nil {
			_, err = api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		}
		return err
	}
	for range 2 {
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	var limited *streamtypes.LimitExceededException
	if err := read(); !errors.As(err, &limited) {
		t.Fatalf("a third reader at once: %v, want LimitExceededException (is the Limiter in front?)", err)
	}
	ev, err := replay.Capture(ctx, api, tbl.StreamARN)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) != 1 {
		t.Fatalf("captured %d records, want 1", len(ev.Records))
	}
}
