package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// Capture reads every record now in a stream, shard by shard (parents
// before children, each shard in sequence order), and returns them as one
// event. It stops reading a shard at its end or, for an open shard, after
// an empty read (DynamoDB Local makes a write visible at once). A read that
// DynamoDB Streams refuses because the shard has readers enough
// (LimitExceededException) is made again after a growing pause, until ctx
// ends: a test's consumers may be reading the shard as it captures.
func Capture(ctx context.Context, api stream.API, streamARN string) (events.DynamoDBEvent, error) {
	shards, err := stream.Shards(ctx, api, streamARN)
	if err != nil {
		return events.DynamoDBEvent{}, fmt.Errorf("replay: %w", err)
	}
	var ev events.DynamoDBEvent
	for _, s := range shards {
		it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(streamARN), ShardId: s.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return ev, fmt.Errorf("replay: shard iterator: %w", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := getRecords(ctx, api, iter)
			if err != nil {
				return ev, fmt.Errorf("replay: get records: %w", err)
			}
			for _, r := range out.Records {
				lr, err := attr.LambdaRecord(r, streamARN)
				if err != nil {
					return ev, fmt.Errorf("replay: %w", err)
				}
				ev.Records = append(ev.Records, lr)
			}
			if len(out.Records) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return ev, nil
}

// Save writes an event as indented JSON (a fixture for testdata/).
func Save(path string, ev events.DynamoDBEvent) error {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads an event written by Save (or any Lambda DynamoDB event JSON).
func Load(path string) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	b, err := os.ReadFile(path)
	if err == nil {
		err = attr.UnmarshalJSON(b, &ev)
	}
	if err != nil {
		return ev, fmt.Errorf("replay: load %s: %w", path, err)
	}
	return ev, nil
}

// Follower returns a Target.Follow that reads the stream: each call returns
// the records added to it since the last call (the first, since Follower
// was called) that keep accepts. Records the kit's Reset makes (the
// derived items it deletes) are among them: keep selects the records of
// the items the handler derives from its own writes.
//
// It reads on from where the last call stopped (each shard's iterator, kept
// between calls; an expired one is asked again after the last record read),
// so a call costs a GetRecords or two per shard however long the stream is,
// and it reads a shard at most 4 times a second, as Lambda polls it ("Lambda
// polls shards in your DynamoDB stream for records at a base rate of 4 times
// per second", lambda/latest/dg/with-ddb.html), waiting out a
// LimitExceededException: a shard takes few reads a second, and a test that
// follows after every round of many schedules must not read the stream
// from its start each time.
func Follower(ctx context.Context, api stream.API, streamARN string, keep func(events.DynamoDBEventRecord) bool) (func(context.Context) ([]events.DynamoDBEventRecord, error), error) {
	f := &follower{api: api, arn: streamARN, iters: map[string]*string{}, last: map[string]string{}, closed: map[string]bool{}, polled: map[string]time.Time{}}
	if _, err := f.read(ctx); err != nil { // what is there now is not followed
		return nil, err
	}
	return func(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
		recs, err := f.read(ctx)
		if err != nil {
			return nil, err
		}
		out := recs[:0]
		for _, r := range recs {
			if keep == nil || keep(r) {
				out = append(out, r)
			}
		}
		return out, nil
	}, nil
}

// follower is a Follower's place in each shard.
type follower struct {
	api    stream.API
	arn    string
	iters  map[string]*string // shard → the iterator to read on from
	last   map[string]string  // shard → the last sequence number read
	closed map[string]bool    // shards read to their end
	polled map[string]time.Time
}

// followPoll is the least time between two reads of a shard.
const followPoll = 250 * time.Millisecond

// getRecords reads a page of shard id, no sooner than followPoll after the
// last read of it.
func (f *follower) getRecords(ctx context.Context, id string, iter *string) (*dynamodbstreams.GetRecordsOutput, error) {
	if wait := followPoll - time.Since(f.polled[id]); wait > 0 {
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	out, err := getRecords(ctx, f.api, iter)
	f.polled[id] = time.Now()
	return out, err
}

// getRecords reads the page at iter, and again while DynamoDB Streams
// answers that the shard is read too often or by too many
// (LimitExceededException), after a pause growing from followPoll to 2 s.
func getRecords(ctx context.Context, api stream.API, iter *string) (*dynamodbstreams.GetRecordsOutput, error) {
	pause := followPoll
	for {
		out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		var limited *types.LimitExceededException
		if !errors.As(err, &limited) {
			return out, err
		}
		if err := sleep(ctx, pause); err != nil {
			return nil, err
		}
		pause = min(2*pause, 2*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// read returns the records added since the last read, shard by shard
// (parents before children). It moves f's place only when it returns
// records: a call that fails part way leaves f where it was, so the next
// call reads again what this one read and did not return.
func (f *follower) read(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
	shards, err := stream.Shards(ctx, f.api, f.arn)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	iters, last, closed := maps.Clone(f.iters), maps.Clone(f.last), maps.Clone(f.closed)
	var out []events.DynamoDBEventRecord
	for _, s := range shards {
		id := aws.ToString(s.ShardId)
		if closed[id] {
			continue
		}
		iter := iters[id]
		for {
			if iter == nil {
				in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(f.arn), ShardId: s.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
				if seq, ok := last[id]; ok {
					in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(seq)
				}
				it, err := f.api.GetShardIterator(ctx, in)
				if err != nil {
					return nil, fmt.Errorf("replay: shard iterator: %w", err)
				}
				iter = it.ShardIterator
			}
			page, err := f.getRecords(ctx, id, iter)
			var expired *types.ExpiredIteratorException
			if errors.As(err, &expired) { // 15 minutes old: ask again after the last record read
				iter = nil
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("replay: get records: %w", err)
			}
			for _, r := range page.Records {
				lr, err := attr.LambdaRecord(r, f.arn)
				if err != nil {
					return nil, fmt.Errorf("replay: %w", err)
				}
				out = append(out, lr)
				last[id] = aws.ToString(r.Dynamodb.SequenceNumber)
			}
			iter = page.NextShardIterator
			if iter == nil {
				closed[id] = true
				delete(iters, id)
				break
			}
			if len(page.Records) == 0 {
				iters[id] = iter
				break
			}
		}
	}
	f.iters, f.last, f.closed = iters, last, closed
	return out, nil
}
