package orders_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	kinesissdk "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/dynastream/dynastream/ddblocal/moto"
	"github.com/dynastream/dynastream/examples/orders"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/kinesis"
)

// The same handler on the other source: the table's changes as DynamoDB
// writes them to a Kinesis data stream (stream.KinesisData; a fifth of them put
// twice, as that source may deliver them), read by a Runner through
// kinesis.Source from moto_server's Kinesis, with the mapping's filter
// written as Lambda takes it on Kinesis (under data). The totals are the
// expected ones and the poison order is dead-lettered, as on DynamoDB
// Streams (TestTotalsOnARunner).
func TestTotalsOnAKinesisRunner(t *testing.T) {
	tbl, ev, want := captured(t)
	kc := motoKinesis(t)
	ctx := context.Background()
	if _, err := kc.CreateStream(ctx, &kinesissdk.CreateStreamInput{StreamName: aws.String("orders-changes"), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	sum, err := kc.DescribeStreamSummary(ctx, &kinesissdk.DescribeStreamSummaryInput{StreamName: aws.String("orders-changes")})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(sum.StreamDescriptionSummary.StreamARN)
	at := time.Now().UTC()
	for i, r := range ev.Records {
		at = at.Add(time.Microsecond)
		data, err := stream.KinesisData(r, at)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + btoi(i%5 == 0) {
			if _, err := kc.PutRecord(ctx, &kinesissdk.PutRecordInput{StreamARN: aws.String(arn), PartitionKey: aws.String(kinesis.PartitionKey(r)), Data: data}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var patterns []string
	for _, p := range orders.Filter.Patterns() {
		patterns = append(patterns, `{"data":`+p+`}`) // as the template would give Lambda on Kinesis
	}
	filter, err := kinesis.Criteria(patterns...)
	if err != nil {
		t.Fatal(err)
	}
	p := &orders.Totals{DB: tbl.DB, Table: tbl.Name}
	dl := &stream.MemoryDeadLetters{}
	r := &stream.Runner{
		Config: stream.Config{StreamARN: arn, Consumer: "totals", Filter: filter, StartingPosition: stream.TrimHorizon,
			MaxRetries: stream.Retries(2), RetryBackoff: time.Millisecond, PollInterval: 20 * time.Millisecond},
		API:         &kinesis.Source{Client: kc, PartitionKey: "PK"},
		Checkpoints: &stream.MemoryCheckpoints{},
		DeadLetters: dl,
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx, p.Handler()) }()
	ts := replay.TableState{DB: tbl.DB, Table: tbl.Name, Derived: orders.IsTotals}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		state, err := ts.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if replay.Want(want)(totalsByCustomer(state)) == nil && len(dl.All()) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("after 30s: %v\ndead letters %+v", replay.Want(want)(totalsByCustomer(state)), dl.All())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, d := range dl.All() { // the poison order, once or twice (its repeat)
		if len(d.Event.Records) != 1 || !strings.Contains(d.Error, "has no numeric amount") || d.StreamARN != arn {
			t.Fatalf("dead letter: %+v", d)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// motoKinesis starts moto_server (pip's moto[server], which serves Kinesis)
// for the test and returns a Kinesis client of it.
func motoKinesis(t *testing.T) *kinesissdk.Client {
	t.Helper()
	return kinesissdk.NewFromConfig(moto.ForTest(t).Config())
}
