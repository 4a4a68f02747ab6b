package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
)

// ErrTrimmed is the error of ReadRange when the stream no longer has the
// records (they are older than its 24-hour retention, or the stream or
// shard is gone): they are lost to a redrive.
var ErrTrimmed = errors.New("stream: the records are no longer in the stream")

// maxEmptyReads bounds the empty GetRecords pages ReadRange reads through
// before it gives up on reaching the range's end.
const maxEmptyReads = 20

// ReadRange reads the records a FailureRecord names back from the stream:
// the shard's records from StartSequenceNumber to EndSequenceNumber, every
// one of them, in Lambda's shape (with ParallelizationFactor above 1, or a
// filter, the range holds records of the mapping's other lanes, or filtered
// out, besides the failed ones). It fails with ErrTrimmed when the stream no
// longer has the range's start, and with an error when it cannot read up
// to the range's end: it returns a range whole, or not at all.
func ReadRange(ctx context.Context, api API, b StreamBatchInfo) ([]events.DynamoDBEventRecord, error) {
	out, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(b.StreamARN), ShardId: aws.String(b.ShardID),
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(b.StartSequenceNumber),
	})
	if err != nil {
		return nil, rangeErr(b, err)
	}
	var recs []events.DynamoDBEventRecord
	iter, empty := out.ShardIterator, 0
	for iter != nil {
		page, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			return nil, rangeErr(b, err)
		}
		for _, r := range page.Records {
			seq := aws.ToString(r.Dynamodb.SequenceNumber)
			if len(recs) == 0 && seq != b.StartSequenceNumber {
				return nil, fmt.Errorf("%w: shard %s's oldest record from %s is %s", ErrTrimmed, b.ShardID, b.StartSequenceNumber, seq)
			}
			if CompareSequenceNumbers(seq, b.EndSequenceNumber) > 0 {
				return nil, fmt.Errorf("stream: shard %s has no record %s, the range's end (the next is %s)", b.ShardID, b.EndSequenceNumber, seq)
			}
			lr, err := attr.LambdaRecord(r, b.StreamARN)
			if err != nil {
				return nil, fmt.Errorf("stream: record %s: %w", seq, err)
			}
			recs = append(recs, lr)
			if seq == b.EndSequenceNumber {
				return recs, nil
			}
		}
		if len(page.Records) == 0 {
			if empty++; empty > maxEmptyReads {
				return nil, fmt.Errorf("stream: shard %s: %d empty reads before %s, the range's end", b.ShardID, empty, b.EndSequenceNumber)
			}
		}
		iter = page.NextShardIterator
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: shard %s has nothing from %s", ErrTrimmed, b.ShardID, b.StartSequenceNumber)
	}
	return nil, fmt.Errorf("stream: shard %s ended at %s, before %s, the range's end", b.ShardID, recs[len(recs)-1].Change.SequenceNumber, b.EndSequenceNumber)
}

func rangeErr(b StreamBatchInfo, err error) error {
	var trimmed *types.TrimmedDataAccessException
	var gone *types.ResourceNotFoundException
	if errors.As(err, &trimmed) || errors.As(err, &gone) {
		return fmt.Errorf("%w: shard %s from %s: %w", ErrTrimmed, b.ShardID, b.StartSequenceNumber, err)
	}
	return fmt.Errorf("stream: read shard %s from %s: %w", b.ShardID, b.StartSequenceNumber, err)
}

// CompareSequenceNumbers orders two sequence numbers of one shard
// (decimal strings of any length): -1, 0 or +1.
func CompareSequenceNumbers(a, b string) int {
	switch {
	case len(a) != len(b):
		if len(a) < len(b) {
			return -1
		}
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
