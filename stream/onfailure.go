package stream

import (
	"time"
)

// FailureRecord is what Lambda's event source mapping sends to its
// on-failure destination (an SQS queue or an SNS topic) for a batch it
// gives up on: not the records, but where they are in the stream — the
// shard and the sequence range — and why. Redrive reads the records back
// from the stream while it keeps them (24 hours).
type FailureRecord struct {
	RequestContext  FailureRequestContext  `json:"requestContext"`
	ResponseContext FailureResponseContext `json:"responseContext"`
	Version         string                 `json:"version"`
	Timestamp       time.Time              `json:"timestamp"`
	BatchInfo       StreamBatchInfo        `json:"DDBStreamBatchInfo"`
}

// FailureRequestContext says which function gave up and why: Condition is
// RetryAttemptsExhausted or RecordAgeExceeded.
type FailureRequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// FailureResponseContext is the last invocation's outcome.
type FailureResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError"`
}

// StreamBatchInfo names the records: a shard of a stream, the first and
// last sequence numbers, and how many records there were.
type StreamBatchInfo struct {
	ShardID                         string    `json:"shardId"`
	StartSequenceNumber             string    `json:"startSequenceNumber"`
	EndSequenceNumber               string    `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord time.Time `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  time.Time `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int       `json:"batchSize"`
	StreamARN                       string    `json:"streamArn"`
}

// FailureRecord is the dead letter as the event source mapping would have
// sent it to its on-failure destination, for the function functionARN (a
// name will do locally): the shard, the sequence range and the count of
// its records, its condition, and the last call's outcome. A dead letter of
// records that could not be converted (Unconverted only) has no range and
// no FailureRecord: ok is false.
func (dl DeadLetter) FailureRecord(functionARN string) (fr FailureRecord, ok bool) {
	recs := dl.Event.Records
	if len(recs) == 0 {
		return FailureRecord{}, false
	}
	first, last := recs[0], recs[len(recs)-1]
	arn := dl.StreamARN
	if arn == "" { // the replay kit's: the records know their stream
		arn = first.EventSourceArn
	}
	fr = FailureRecord{
		RequestContext: FailureRequestContext{
			RequestID:   first.EventID,
			FunctionARN: functionARN, Condition: dl.condition(), ApproximateInvokeCount: dl.Attempts,
		},
		ResponseContext: FailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: "Unhandled"},
		Version:         "1.0",
		Timestamp:       dl.FailedAt.UTC(),
		BatchInfo: StreamBatchInfo{
			ShardID:                         dl.ShardID,
			StartSequenceNumber:             first.Change.SequenceNumber,
			EndSequenceNumber:               last.Change.SequenceNumber,
			ApproximateArrivalOfFirstRecord: first.Change.ApproximateCreationDateTime.UTC(),
			ApproximateArrivalOfLastRecord:  last.Change.ApproximateCreationDateTime.UTC(),
			BatchSize:                       len(recs),
			StreamARN:                       arn,
		},
	}
	if dl.Condition == RecordAgeExceeded {
		fr.ResponseContext = FailureResponseContext{} // never invoked
	}
	return fr, true
}
