package kinesis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/dynastream/dynastream/ddblocal/moto"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/kinesis"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
)

// startMoto starts moto_server (pip's moto[server], which serves Kinesis
// Data Streams) for the test and returns a Kinesis client of it.
func startMoto(t *testing.T) *sdk.Client {
	t.Helper()
	return sdk.NewFromConfig(moto.ForTest(t).Config())
}

// newStream creates a Kinesis data stream of n shards and returns its ARN.
func newStream(t *testing.T, kc *sdk.Client, name string, n int32) string {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.CreateStream(ctx, &sdk.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(n)}); err != nil {
		t.Fatal(err)
	}
	out, err := kc.DescribeStreamSummary(ctx, &sdk.DescribeStreamSummaryInput{StreamName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.StreamDescriptionSummary.StreamARN)
}

// change is what DynamoDB writes into a Kinesis record's data for version
// v of item pk (an INSERT for 1, a MODIFY after): AWS's format, with the
// time in microseconds ("Change data capture for Kinesis Data Streams with
// DynamoDB", DynamoDB Developer Guide).
func change(pk string, v int, at time.Time) []byte {
	name, old := "INSERT", ""
	if v > 1 {
		name, old = "MODIFY", fmt.Sprintf(`,"OldImage":{"PK":{"S":%q},"v":{"N":"%d"}}`, pk, v-1)
	}
	return fmt.Appendf(nil, `{"awsRegion":"us-east-1","eventID":"%s-%d","eventName":%q,"userIdentity":null,"recordFormat":"application/json","tableName":"t",`+
		`"dynamodb":{"ApproximateCreationDateTime":%d,"ApproximateCreationDateTimePrecision":"MICROSECOND","Keys":{"PK":{"S":%q}},"NewImage":{"PK":{"S":%q},"v":{"N":"%d"}}%s,"SizeBytes":40},`+
		`"eventSource":"aws:dynamodb"}`, pk, v, name, at.UnixMicro(), pk, pk, v, old)
}

// put writes versions from..to of each item, in turn, with the item's key
// as the partition key, as DynamoDB does; it returns the eventIDs written.
func put(t *testing.T, kc *sdk.Client, arn string, from, to int, items ...string) []string {
	t.Helper()
	var ids []string
	at := time.Date(2026, 12, 7, 10, 0, 0, 123456000, time.UTC)
	for v := from; v <= to; v++ {
		for _, pk := range items {
			_, err := kc.PutRecord(context.Background(), &sdk.PutRecordInput{StreamARN: aws.String(arn), PartitionKey: aws.String(pk),
				Data: change(pk, v, at.Add(time.Duration(v)*time.Millisecond+time.Microsecond))})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprintf("%s-%d", pk, v))
		}
	}
	return ids
}

// collector is a handler that keeps what it is given.
type collector struct {
	mu   sync.Mutex
	recs []events.DynamoDBEventRecord
}

func (c *collector) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, ev.Records...)
	return events.DynamoDBEventResponse{}, nil
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs)
}

// run runs a Runner on the Kinesis stream until done says so (or a minute
// passes), then stops it.
func run(t *testing.T, r *stream.Runner, h stream.Handler, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, h) }()
	for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-errc:
			cancel()
			t.Fatalf("the Runner stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("not done within a minute: %v", <-errc)
		}
	}
	cancel()
	if err := <-errc; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}

func runner(kc kinesis.API, arn string, dls stream.DeadLetters) *stream.Runner {
	return &stream.Runner{
		API:         &kinesis.Source{Client: kc, PartitionKey: "PK"},
		Config:      stream.Config{StreamARN: arn, Consumer: "test", StartingPosition: stream.TrimHorizon, PollInterval: 10 * time.Millisecond, ShardRefresh: 50 * time.Millisecond},
		Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: dls,
	}
}

// A Runner on a Source reads what DynamoDB wrote to the Kinesis data
// stream as it reads a DynamoDB stream: each change with its eventID,
// images and time to the microsecond, the Kinesis record's sequence
// number and the Kinesis stream's ARN; one shard's records in the shard's
// order (the record format of DynamoDB Developer Guide, "Change data
// capture for Kinesis Data Streams with DynamoDB"). A record whose data is
// not a DynamoDB change is dead-lettered with its bytes, and the shard
// moves on past it: AWS documents nothing for such a record on this
// source; Lambda would hand it to the function, which
// stream.DecodeKinesisEvent dead-letters the same way.
func TestSourceReadsWhatDynamoDBWrote(t *testing.T) {
	kc := startMoto(t)
	arn := newStream(t, kc, "changes", 1)
	want := put(t, kc, arn, 1, 3, "A", "B")
	if _, err := kc.PutRecord(context.Background(), &sdk.PutRecordInput{StreamARN: aws.String(arn), PartitionKey: aws.String("x"), Data: []byte("not a change")}); err != nil {
		t.Fatal(err)
	}
	want = append(want, put(t, kc, arn, 4, 4, "A")...)
	c, dls := &collector{}, &stream.MemoryDeadLetters{}
	run(t, runner(kc, arn, dls), c.handle, func() bool { return c.count() >= len(want) && len(dls.All()) == 1 })

	var got []string
	prevSeq := ""
	for _, r := range c.recs {
		got = append(got, r.EventID)
		if r.EventSourceArn != arn || r.EventSource != "aws:dynamodb" {
			t.Errorf("%s: source %s %s, want aws:dynamodb from %s", r.EventID, r.EventSource, r.EventSourceArn, arn)
		}
		// (moto numbers a shard's records 1, 2, …; Kinesis with 56 digits)
		if seq := r.Change.SequenceNumber; seq == "" || stream.CompareSequenceNumbers(seq, prevSeq) <= 0 {
			t.Errorf("%s: Kinesis sequence number %q after %q: want increasing", r.EventID, seq, prevSeq)
		}
		prevSeq = r.Change.SequenceNumber
		if at := r.Change.ApproximateCreationDateTime.Time; at.Nanosecond()%1000 != 0 || at.Nanosecond()/1000%1000 != 457 {
			t.Errorf("%s: time %s, want its microseconds (…457)", r.EventID, at.Format(time.RFC3339Nano))
		}
		c, err := stream.Decode(r)
		if err != nil {
			t.Fatalf("%s: %v", r.EventID, err)
		}
		var img struct {
			PK string `dynamodbav:"PK"`
			V  int    `dynamodbav:"v"`
		}
		if err := c.DecodeNew(&img); err != nil || fmt.Sprintf("%s-%d", img.PK, img.V) != r.EventID {
			t.Errorf("%s: new image %+v (%v)", r.EventID, img, err)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records in the shard's order:\n got %v\nwant %v", got, want)
	}
	dl := dls.All()[0]
	if len(dl.Event.Records) != 0 || len(dl.Unconverted) != 1 || !strings.Contains(dl.Error, "unreadable Kinesis record") {
		t.Fatalf("dead letter: %s (%d records, %d unconverted)", dl.Error, len(dl.Event.Records), len(dl.Unconverted))
	}
	var raw struct {
		Dynamodb struct {
			Keys map[string]struct {
				Value []byte `json:"value"`
			}
		}
	}
	if err := json.Unmarshal(dl.Unconverted[0], &raw); err != nil || string(raw.Dynamodb.Keys["kinesis.data"].Value) != "not a change" {
		t.Errorf("the dead letter does not carry the record's data: %s (%v)", dl.Unconverted[0], err)
	}
}

// After a split, ListShards lists the parent and its two children, each
// naming it (Kinesis Data Streams Developer Guide, resharding;
// paraphrased, the page could not be read here): the Source lists the
// parent first. moto (5.2.1) keeps writing to the parent after a split, so
// the order across it is met on an in-memory stream below
// (TestSourceReadsParentsBeforeChildren).
func TestSourceListsASplitsLineage(t *testing.T) {
	kc := startMoto(t)
	arn := newStream(t, kc, "split", 1)
	ctx := context.Background()
	shards, err := kc.ListShards(ctx, &sdk.ListShardsInput{StreamARN: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	parent := aws.ToString(shards.Shards[0].ShardId)
	if _, err := kc.SplitShard(ctx, &sdk.SplitShardInput{StreamARN: aws.String(arn), ShardToSplit: aws.String(parent),
		NewStartingHashKey: aws.String("170141183460469231731687303715884105728")}); err != nil {
		t.Fatal(err)
	}
	desc, err := stream.Shards(ctx, &kinesis.Source{Client: kc}, arn)
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 3 || aws.ToString(desc[0].ShardId) != parent || aws.ToString(desc[1].ParentShardId) != parent || aws.ToString(desc[2].ParentShardId) != parent {
		t.Fatalf("shards %+v: want %s, then its two children", desc, parent)
	}
}

// resharded is an in-memory Kinesis stream after a split or a merge:
// its shards and each one's records. A shard that is another's parent is
// closed: read to its end, it answers no next iterator. Reads of shard
// hold wait until release says so. moto (5.2.1) lists a resharded
// stream's lineage but keeps writing to the parents, so the order across
// a split or a merge cannot be met there.
type resharded struct {
	fault
	shards  []types.Shard
	recs    map[string][]types.Record
	hold    string
	release func() bool
}

// write adds version v of item pk to shard.
func (m *resharded) write(shard, pk string, v int) string {
	if m.recs == nil {
		m.recs = map[string][]types.Record{}
	}
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	seq := fmt.Sprintf("%s-%05d", shard, len(m.recs[shard]))
	m.recs[shard] = append(m.recs[shard], types.Record{SequenceNumber: aws.String(seq), PartitionKey: aws.String(pk),
		Data: change(pk, v, at.Add(time.Duration(v)*time.Millisecond)), ApproximateArrivalTimestamp: aws.Time(at)})
	return fmt.Sprintf("%s-%d", pk, v)
}

func (m *resharded) closed(id string) bool {
	return slices.ContainsFunc(m.shards, func(s types.Shard) bool {
		return aws.ToString(s.ParentShardId) == id || aws.ToString(s.AdjacentParentShardId) == id
	})
}

func (m *resharded) ListShards(context.Context, *sdk.ListShardsInput, ...func(*sdk.Options)) (*sdk.ListShardsOutput, error) {
	return &sdk.ListShardsOutput{Shards: m.shards}, nil
}

func (m *resharded) GetShardIterator(_ context.Context, in *sdk.GetShardIteratorInput, _ ...func(*sdk.Options)) (*sdk.GetShardIteratorOutput, error) {
	id, from := aws.ToString(in.ShardId), 0
	if in.ShardIteratorType == types.ShardIteratorTypeAfterSequenceNumber {
		from = slices.IndexFunc(m.recs[id], func(r types.Record) bool {
			return aws.ToString(r.SequenceNumber) == aws.ToString(in.StartingSequenceNumber)
		}) + 1
	}
	return &sdk.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s|%d", id, from))}, nil
}

func (m *resharded) GetRecords(_ context.Context, in *sdk.GetRecordsInput, _ ...func(*sdk.Options)) (*sdk.GetRecordsOutput, error) {
	id, at, _ := strings.Cut(aws.ToString(in.ShardIterator), "|")
	from, _ := strconv.Atoi(at)
	for id == m.hold && !m.release() {
		time.Sleep(10 * time.Millisecond)
	}
	recs := m.recs[id][from:]
	out := &sdk.GetRecordsOutput{Records: recs, MillisBehindLatest: aws.Int64(0)}
	if !m.closed(id) || len(recs) > 0 { // a closed shard ends after a read that found nothing more
		out.NextShardIterator = aws.String(fmt.Sprintf("%s|%d", id, from+len(recs)))
	}
	return out, nil
}

// readAcross runs a Runner on m, holding the reads of shard hold until a
// version above 3 came (or two seconds passed), and checks that every
// item's versions 1–6 came in order: the parents' 1–3 before the
// children's 4–6.
func readAcross(t *testing.T, m *resharded, hold string, want []string) {
	t.Helper()
	const arn = "arn:aws:kinesis:us-east-1:123456789012:stream/resharded"
	c := &collector{}
	childCame := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.ContainsFunc(c.recs, func(r events.DynamoDBEventRecord) bool { _, v, _ := strings.Cut(r.EventID, "-"); return v >= "4" })
	}
	until := time.Now().Add(2 * time.Second)
	m.hold, m.release = hold, func() bool { return childCame() || time.Now().After(until) }
	run(t, runner(m, arn, &stream.MemoryDeadLetters{}), c.handle, func() bool { return c.count() >= len(want) })

	if len(c.recs) != len(want) {
		t.Fatalf("%d records, want %d", len(c.recs), len(want))
	}
	versions := map[string][]string{}
	for _, r := range c.recs {
		pk, v, _ := strings.Cut(r.EventID, "-")
		versions[pk] = append(versions[pk], v)
	}
	for pk, vs := range versions {
		if fmt.Sprint(vs) != "[1 2 3 4 5 6]" {
			t.Errorf("item %s's versions in the order read: %v (the parents' 1–3 first)", pk, vs)
		}
	}
}

// After a split, the parent is closed and new records go to its children
// (Kinesis Data Streams Developer Guide, resharding; paraphrased, the page
// could not be read here): the Runner reads the parent to its end before
// either child, as Lambda does. The parent's reads are held until a
// child's records came (or two seconds passed): a Runner that read the
// children at once would hand over their versions first.
func TestSourceReadsParentsBeforeChildren(t *testing.T) {
	m := &resharded{shards: []types.Shard{
		{ShardId: aws.String("c1"), ParentShardId: aws.String("p")}, {ShardId: aws.String("p")}, {ShardId: aws.String("c2"), ParentShardId: aws.String("p")},
	}}
	var want []string
	for v := 1; v <= 6; v++ {
		for _, pk := range []string{"A", "B", "C", "D"} {
			shard := "p"
			if v > 3 {
				shard = map[string]string{"A": "c1", "B": "c2", "C": "c1", "D": "c2"}[pk]
			}
			want = append(want, m.write(shard, pk, v))
		}
	}
	readAcross(t, m, "p", want)
}

// A shard made by merging two has both as parents (ParentShardId and
// AdjacentParentShardId), and its records come after both's (the
// resharding pages, paraphrased): the Runner reads the child only once
// both are read to their end, as Lambda does. The adjacent parent's reads
// are held: a Runner that waited for ParentShardId only would hand over
// the child's versions before the held parent's.
func TestSourceReadsBothParentsOfAMerge(t *testing.T) {
	m := &resharded{shards: []types.Shard{
		{ShardId: aws.String("c"), ParentShardId: aws.String("p"), AdjacentParentShardId: aws.String("a")}, {ShardId: aws.String("p")}, {ShardId: aws.String("a")},
	}}
	var want []string
	for v := 1; v <= 6; v++ {
		for _, pk := range []string{"A", "B", "C", "D"} {
			shard := "c"
			if v <= 3 {
				shard = map[string]string{"A": "p", "B": "a", "C": "p", "D": "a"}[pk]
			}
			want = append(want, m.write(shard, pk, v))
		}
	}
	desc, err := stream.Shards(context.Background(), &kinesis.Source{Client: m}, "arn")
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 3 || aws.ToString(desc[2].ShardId) != "c" {
		t.Fatalf("shards %+v: want p and a, then their child c", desc)
	}
	readAcross(t, m, "a", want)
}

// fault is a Kinesis client whose every call fails with err.
type fault struct{ err error }

func (f fault) ListShards(context.Context, *sdk.ListShardsInput, ...func(*sdk.Options)) (*sdk.ListShardsOutput, error) {
	return nil, f.err
}

func (f fault) GetShardIterator(context.Context, *sdk.GetShardIteratorInput, ...func(*sdk.Options)) (*sdk.GetShardIteratorOutput, error) {
	return nil, f.err
}

func (f fault) GetRecords(context.Context, *sdk.GetRecordsInput, ...func(*sdk.Options)) (*sdk.GetRecordsOutput, error) {
	return nil, f.err
}

// Kinesis's errors reach the Runner as the DynamoDB Streams errors it acts
// on: an expired iterator it renews, a stream or shard not found, a read
// over the shard's limits it waits out (the errors the Kinesis API
// Reference lists for GetRecords and GetShardIterator:
// ExpiredIteratorException, ResourceNotFoundException,
// ProvisionedThroughputExceededException; LimitExceededException for
// ListShards). Others pass as they are.
func TestSourceErrorsAreTheRunners(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		err  error
		want any
	}{
		{&types.ExpiredIteratorException{Message: aws.String("old")}, new(*streamtypes.ExpiredIteratorException)},
		{&types.ResourceNotFoundException{Message: aws.String("gone")}, new(*streamtypes.ResourceNotFoundException)},
		{&types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}, new(*streamtypes.LimitExceededException)},
		{&types.LimitExceededException{Message: aws.String("slow down")}, new(*streamtypes.LimitExceededException)},
		{&types.InvalidArgumentException{Message: aws.String("bad")}, new(*types.InvalidArgumentException)},
	} {
		src := &kinesis.Source{Client: fault{c.err}}
		_, err1 := src.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")})
		_, err2 := src.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String("arn"), ShardId: aws.String("s")})
		_, err3 := src.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String("arn")})
		for _, err := range []error{err1, err2, err3} {
			if !errors.As(err, c.want) || !strings.Contains(err.Error(), aws.ToString(messageOf(c.err))) {
				t.Errorf("%T: got %T %v", c.err, err, err)
			}
		}
	}
}

func messageOf(err error) *string {
	var m interface{ ErrorMessage() string }
	if errors.As(err, &m) {
		return aws.String(m.ErrorMessage())
	}
	return aws.String("")
}

// page is a Kinesis client whose GetRecords answers out.
type page struct {
	fault
	out *sdk.GetRecordsOutput
}

func (p page) GetRecords(context.Context, *sdk.GetRecordsInput, ...func(*sdk.Options)) (*sdk.GetRecordsOutput, error) {
	return p.out, nil
}

// An empty page with MillisBehindLatest above 0 is short of the stream's
// tip ("A value of zero indicates that record processing is caught up";
// "It might take multiple calls to get to a portion of the shard that
// contains records": GetRecords, the Kinesis Data Streams API Reference):
// the Source marks it so that the Runner reads on at once. An empty page
// at the tip, a page with records and a closed shard's end are not marked.
func TestSourceMarksEmptyPagesBehind(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		out  *sdk.GetRecordsOutput
		want bool
	}{
		{"empty, behind", &sdk.GetRecordsOutput{MillisBehindLatest: aws.Int64(86_400_000), NextShardIterator: aws.String("next")}, true},
		{"empty, at the tip", &sdk.GetRecordsOutput{MillisBehindLatest: aws.Int64(0), NextShardIterator: aws.String("next")}, false},
		{"empty, no figure", &sdk.GetRecordsOutput{NextShardIterator: aws.String("next")}, false},
		{"empty, the shard's end", &sdk.GetRecordsOutput{MillisBehindLatest: aws.Int64(5)}, false},
		{"records, behind", &sdk.GetRecordsOutput{MillisBehindLatest: aws.Int64(5), NextShardIterator: aws.String("next"),
			Records: []types.Record{{SequenceNumber: aws.String("1"), Data: []byte("not a change")}}}, false},
	} {
		src := &kinesis.Source{Client: page{out: c.out}}
		out, err := src.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")})
		if err != nil {
			t.Fatal(err)
		}
		if got := stream.Behind(out); got != c.want {
			t.Errorf("%s: marked behind %v, want %v", c.name, got, c.want)
		}
	}
}

// A read refused for the shard's throughput reaches the Runner at once,
// as LimitExceededException, which it waits out: the client's own
// retryer does not spend more of the shard's reads on it within the same
// second ("Reduce the frequency or size of your requests",
// ProvisionedThroughputExceededException, GetRecords, the Kinesis Data
// Streams API Reference). A server error is still the client's to retry.
func TestSourceLeavesThroughputRefusalsToTheRunner(t *testing.T) {
	for _, c := range []struct {
		status   int
		code     string
		requests int
	}{
		{http.StatusBadRequest, "ProvisionedThroughputExceededException", 1},
		{http.StatusInternalServerError, "InternalFailure", 3},
	} {
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(c.status)
			fmt.Fprintf(w, `{"__type":%q,"message":"refused"}`, c.code)
		}))
		kc := sdk.New(sdk.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
			Retryer: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.MaxBackoff = time.Millisecond })})
		_, err := (&kinesis.Source{Client: kc}).GetRecords(context.Background(), &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")})
		srv.Close()
		if err == nil {
			t.Fatalf("%s: no error", c.code)
		}
		if got := int(requests.Load()); got != c.requests {
			t.Errorf("%s: %d requests, want %d (%v)", c.code, got, c.requests, err)
		}
	}
}
