package kinesis

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// API is what Source calls of a Kinesis Data Streams client
// (*kinesis.Client has it).
type API interface {
	ListShards(ctx context.Context, in *sdk.ListShardsInput, optFns ...func(*sdk.Options)) (*sdk.ListShardsOutput, error)
	GetShardIterator(ctx context.Context, in *sdk.GetShardIteratorInput, optFns ...func(*sdk.Options)) (*sdk.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *sdk.GetRecordsInput, optFns ...func(*sdk.Options)) (*sdk.GetRecordsOutput, error)
}

// Source is a stream.API that reads the Kinesis data stream whose ARN the
// Runner's Config.StreamARN names; one Source serves one stream. Options
// of the DynamoDB Streams client that the Runner passes are not Kinesis's
// and are ignored: give the Kinesis client its own (endpoint, and few
// retries of a throttled read, which the Runner waits out itself) when it
// is made.
type Source struct {
	Client API
	// PartitionKey is the table's partition key attribute: the Runner
	// spreads a shard's records over its lanes (ParallelizationFactor) by
	// it, as Lambda does. Kinesis does not say it; empty, the Runner keys
	// records by their whole key, which keeps one item's records in one
	// lane too.
	PartitionKey string

	// arn is the stream of the last iterator got: GetRecords names it too
	// (its StreamARN), which Kinesis takes for access control and moto
	// needs.
	arn atomic.Pointer[string]
}

var _ stream.API = (*Source)(nil)

// limit is GetRecords' largest page on a DynamoDB stream, the most the
// Runner asks for; Kinesis takes up to 10,000.
const limit = 1000

// DescribeStream lists every shard of the stream (ListShards, every page)
// in one answer, each with its parent; a merged shard's second parent
// (AdjacentParentShardId) is marked stream.MarkAdjacentParent, so that the
// Runner reads the child after both.
func (s *Source) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	arn := aws.ToString(in.StreamArn)
	desc := &streamtypes.StreamDescription{StreamArn: in.StreamArn, StreamStatus: streamtypes.StreamStatusEnabled}
	if s.PartitionKey != "" {
		desc.KeySchema = []streamtypes.KeySchemaElement{{AttributeName: aws.String(s.PartitionKey), KeyType: streamtypes.KeyTypeHash}}
	}
	list := &sdk.ListShardsInput{StreamARN: in.StreamArn}
	adjacent := map[string]string{}
	for {
		out, err := s.Client.ListShards(ctx, list)
		if err != nil {
			return nil, fmt.Errorf("kinesis: list the shards of %s: %w", arn, streamsError(err))
		}
		for _, sh := range out.Shards {
			shard := streamtypes.Shard{ShardId: sh.ShardId, ParentShardId: sh.ParentShardId}
			if r := sh.SequenceNumberRange; r != nil {
				shard.SequenceNumberRange = &streamtypes.SequenceNumberRange{StartingSequenceNumber: r.StartingSequenceNumber, EndingSequenceNumber: r.EndingSequenceNumber}
			}
			desc.Shards = append(desc.Shards, shard)
			if p := aws.ToString(sh.AdjacentParentShardId); p != "" {
				adjacent[aws.ToString(sh.ShardId)] = p
			}
		}
		if out.NextToken == nil {
			page := &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}
			for shard, parent := range adjacent { // a merge's second parent
				stream.MarkAdjacentParent(page, shard, parent)
			}
			return page, nil
		}
		// "You cannot specify this parameter [StreamName, StreamARN] if
		// you specify NextToken" (Kinesis API Reference, ListShards)
		list = &sdk.ListShardsInput{NextToken: out.NextToken}
	}
}

// GetShardIterator gets the Kinesis iterator of the same type and place.
func (s *Source) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	out, err := s.Client.GetShardIterator(ctx, &sdk.GetShardIteratorInput{
		StreamARN: in.StreamArn, ShardId: in.ShardId,
		ShardIteratorType: types.ShardIteratorType(in.ShardIteratorType), StartingSequenceNumber: in.SequenceNumber,
	})
	if err != nil {
		return nil, streamsError(err)
	}
	s.arn.Store(in.StreamArn)
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: out.ShardIterator}, nil
}

// GetRecords reads a page of the shard and makes of each record's data the
// stream record it carries. The next iterator is nil once a closed shard
// is read to its end, as on a DynamoDB stream. An empty page short of the
// stream's tip (MillisBehindLatest above 0) is marked stream.MarkBehind:
// the Runner reads on at once rather than after its PollInterval.
func (s *Source) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	n := aws.ToInt32(in.Limit)
	if n <= 0 || n > limit {
		n = limit
	}
	out, err := s.Client.GetRecords(ctx, &sdk.GetRecordsInput{ShardIterator: in.ShardIterator, Limit: aws.Int32(n), StreamARN: s.arn.Load()}, noRetryOfThroughput)
	if err != nil {
		return nil, streamsError(err)
	}
	recs := make([]streamtypes.Record, len(out.Records))
	for i, r := range out.Records {
		recs[i] = Record(r)
	}
	page := &dynamodbstreams.GetRecordsOutput{Records: recs, NextShardIterator: out.NextShardIterator}
	if len(recs) == 0 && aws.ToInt64(out.MillisBehindLatest) > 0 && out.NextShardIterator != nil {
		stream.MarkBehind(page) // read on at once: records further on
	}
	return page, nil
}

// Record is the DynamoDB stream record a Kinesis record's data carries,
// with the Kinesis record's sequence number. Data that is not a DynamoDB
// change is not lost: the record keeps the Kinesis record's sequence
// number and arrival time and, as its only key, "kinesis.data", a value
// the Runner cannot convert (a streamtypes.UnknownUnionMember whose Tag
// says why and whose Value is the data), so the Runner dead-letters it
// with those bytes (attr.RawRecord) and moves on.
func Record(r types.Record) streamtypes.Record {
	seq := aws.ToString(r.SequenceNumber)
	lr, err := stream.KinesisChange(r.Data, seq, "")
	if err == nil {
		var rec streamtypes.Record
		if rec, err = streamRecord(lr); err == nil {
			return rec
		}
	}
	return streamtypes.Record{
		EventID: aws.String(lr.EventID), EventSource: aws.String("aws:kinesis"),
		Dynamodb: &streamtypes.StreamRecord{
			SequenceNumber: r.SequenceNumber, ApproximateCreationDateTime: r.ApproximateArrivalTimestamp,
			Keys: map[string]streamtypes.AttributeValue{"kinesis.data": &streamtypes.UnknownUnionMember{
				Tag: fmt.Sprintf("unreadable Kinesis record (partition key %q): %v", aws.ToString(r.PartitionKey), err), Value: r.Data}},
		},
	}
}

// streamRecord is a decoded change in the shape GetRecords gives on a
// DynamoDB stream.
func streamRecord(lr events.DynamoDBEventRecord) (streamtypes.Record, error) {
	d := &streamtypes.StreamRecord{SequenceNumber: aws.String(lr.Change.SequenceNumber), SizeBytes: aws.Int64(lr.Change.SizeBytes)}
	if t := lr.Change.ApproximateCreationDateTime.Time; !t.IsZero() {
		d.ApproximateCreationDateTime = aws.Time(t)
	}
	for _, img := range []struct {
		name string
		from map[string]events.DynamoDBAttributeValue
		to   *map[string]streamtypes.AttributeValue
	}{{"Keys", lr.Change.Keys, &d.Keys}, {"NewImage", lr.Change.NewImage, &d.NewImage}, {"OldImage", lr.Change.OldImage, &d.OldImage}} {
		if img.from == nil {
			continue
		}
		m, err := attr.FromLambdaMap(img.from)
		if err != nil {
			return streamtypes.Record{}, fmt.Errorf("%s: %w", img.name, err)
		}
		if *img.to, err = attr.ToStreamsMap(m); err != nil {
			return streamtypes.Record{}, fmt.Errorf("%s: %w", img.name, err)
		}
	}
	// no StreamViewType: a Kinesis record has none, as in Lambda's Kinesis
	// events (stream.DecodeKinesisEvent)
	rec := streamtypes.Record{
		AwsRegion: aws.String(lr.AWSRegion), EventID: aws.String(lr.EventID), EventName: streamtypes.OperationType(lr.EventName),
		EventSource: aws.String(lr.EventSource), EventVersion: aws.String("1.1"), Dynamodb: d,
	}
	if id := lr.UserIdentity; id != nil {
		rec.UserIdentity = &streamtypes.Identity{Type: aws.String(id.Type), PrincipalId: aws.String(id.PrincipalID)}
	}
	return rec, nil
}

// noRetryOfThroughput has the SDK hand a read refused for the shard's
// throughput (ProvisionedThroughputExceededException: "The request rate
// for the stream is too high, or the requested data is too large for the
// available throughput. Reduce the frequency or size of your requests",
// GetRecords, the Kinesis Data Streams API Reference) back at once rather
// than retry it within the same second, where the shard's five reads a
// second are spent: the Runner waits it out (as LimitExceededException on
// a DynamoDB stream).
func noRetryOfThroughput(o *sdk.Options) {
	if o.Retryer != nil {
		o.Retryer = throughputNotRetried{o.Retryer}
	}
}

// throughputNotRetried is a retryer that does not retry
// ProvisionedThroughputExceededException.
type throughputNotRetried struct{ aws.Retryer }

// GetAttemptToken passes the wrapped retryer's own on (aws.RetryerV2: the
// adaptive mode's client-side rate limit is kept).
func (r throughputNotRetried) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.Retryer.GetInitialToken(), nil
}

func (r throughputNotRetried) IsErrorRetryable(err error) bool {
	var over *types.ProvisionedThroughputExceededException
	return !errors.As(err, &over) && r.Retryer.IsErrorRetryable(err)
}

// streamsError is a Kinesis error as the DynamoDB Streams error the Runner
// acts on, where there is one; others pass as they are.
func streamsError(err error) error {
	var (
		expired  *types.ExpiredIteratorException
		notFound *types.ResourceNotFoundException
		limited  *types.LimitExceededException
		over     *types.ProvisionedThroughputExceededException
	)
	switch {
	case errors.As(err, &expired):
		return &streamtypes.ExpiredIteratorException{Message: aws.String(err.Error())}
	case errors.As(err, &notFound):
		return &streamtypes.ResourceNotFoundException{Message: aws.String(err.Error())}
	case errors.As(err, &limited), errors.As(err, &over):
		return &streamtypes.LimitExceededException{Message: aws.String(err.Error())}
	}
	return err
}
