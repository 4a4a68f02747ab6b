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
// the shard's records from StartSequenceNumber to EndSequenceNumber, in
// Lambda's shape. It fails with ErrTrimmed when the stream no longer has
// them, and says so when fewer than BatchSize come back (the mapping's
// filter dropped the others before they failed, or the range is wrong).
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
			return recs, rangeErr(b, err)
		}
		for _, r := range page.Records {
			seq := aws.ToString(r.Dynamodb.SequenceNumber)
			if CompareSequenceNumbers(seq, b.EndSequenceNumber) > 0 {
				return recs, nil
			}
			if len(recs) == 0 && seq != b.StartSequenceNumber {
				return nil, fmt.Errorf("%w: shard %s starts at %s, after the range's first record %s", ErrTrimmed, b.ShardID, seq, b.StartSequenceNumber)
			}
			lr, err := attr.LambdaRecord(r, b.StreamARN)
			if err != nil {
				return recs, fmt.Errorf("stream: record %s: %w", seq, err)
			}
			recs = append(recs, lr)
			if seq == b.EndSequenceNumber {
				return recs, nil
			}
		}
		if len(page.Records) == 0 {
			if empty++; empty > maxEmptyReads {
				return recs, fmt.Errorf("stream: shard %s: %d empty reads before %s", b.ShardID, empty, b.EndSequenceNumber)
			}
		}
		iter = page.NextShardIterator
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: shard %s has nothing from %s", ErrTrimmed, b.ShardID, b.StartSequenceNumber)
	}
	return recs, nil
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

// Redrive hands the records a FailureRecord names to h once, read back from
// the stream (ReadRange): nil when the handler took them all. It fails
// with ErrTrimmed when they are no longer there (lost: say so), and with
// the handler's error or failures otherwise.
func Redrive(ctx context.Context, api API, h Handler, fr FailureRecord) (int, error) {
	recs, err := ReadRange(ctx, api, fr.BatchInfo)
	if err != nil {
		return 0, err
	}
	if err := Resubmit(ctx, h, DeadLetter{Event: events.DynamoDBEvent{Records: recs}}); err != nil {
		return len(recs), err
	}
	return len(recs), nil
}
