package stream

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/dynastream/dynastream/attr"
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
	// BatchInfo is written as DDBStreamBatchInfo, or as KinesisBatchInfo
	// for a Kinesis data stream's records (its StreamARN names one), as
	// Lambda names it on each source; either is read back.
	BatchInfo StreamBatchInfo `json:"DDBStreamBatchInfo"`
	// BootstrapKeys, on a record of Bootstrap's (shard BootstrapShard),
	// are its items' keys, for a redrive to read them again (ReadItems):
	// Lambda never writes it, as it never bootstraps.
	BootstrapKeys []map[string]events.DynamoDBAttributeValue `json:"bootstrapKeys,omitempty"`
	// BootstrapEventIDs are, key by key, the eventIDs of the records
	// Bootstrap gave up on: a hash of the item as the scan read it
	// (SnapshotRecord), so a redrive tells an item that changed since from
	// one that did not (ReadBootstrap).
	BootstrapEventIDs []string `json:"bootstrapEventIds,omitempty"`
	// Window and WindowState, on the record of a tumbling window whose
	// final call was given up on (DeadLetter.Window), are the window and
	// its state, to make the final call again by hand; BatchSize is 0, the
	// range is the window's records (handled). WindowStateDropped says a
	// destination left the state out for its size (SQS and SNS take 256
	// KB; S3 keeps it). Lambda documents nothing of the kind.
	Window             *events.Window    `json:"window,omitempty"`
	WindowState        map[string]string `json:"windowState,omitempty"`
	WindowStateDropped bool              `json:"windowStateDropped,omitempty"`
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
	if len(recs) == 0 && dl.Window == nil {
		return FailureRecord{}, false
	}
	var first, last events.DynamoDBEventRecord
	if len(recs) > 0 {
		first, last = recs[0], recs[len(recs)-1]
	} else { // a window given up on: its records' range, handled already (none
		// for a window restored from a checkpoint an older Runner wrote)
		first.Change.SequenceNumber, last.Change.SequenceNumber = dl.FirstSequenceNumber, dl.LastSequenceNumber
	}
	arn := dl.StreamARN
	if arn == "" { // the replay kit's: the records know their stream
		arn = first.EventSourceArn
	}
	fr = FailureRecord{
		RequestContext: FailureRequestContext{
			RequestID:   dl.RequestID,
			FunctionARN: functionARN, Condition: dl.condition(), ApproximateInvokeCount: dl.Attempts,
		},
		ResponseContext: FailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: dl.FunctionError},
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
	fr.Window, fr.WindowState = dl.Window, dl.WindowState
	if dl.ShardID == BootstrapShard {
		for _, r := range recs {
			fr.BootstrapKeys = append(fr.BootstrapKeys, r.Change.Keys)
			fr.BootstrapEventIDs = append(fr.BootstrapEventIDs, r.EventID)
		}
	}
	switch {
	case dl.RequestID == "" && (dl.Attempts == 0 || dl.Condition == RecordAgeExceeded):
		// never invoked: no response, and an id of the dead letter's own
		fr.ResponseContext = FailureResponseContext{}
		fr.RequestContext.RequestID = dl.ID()
	case dl.RequestID == "": // kept before dead letters knew their call
		fr.RequestContext.RequestID, fr.ResponseContext.FunctionError = dl.ID(), "Unhandled"
	}
	return fr, true
}

// ID is a UUID made from what names the dead letter (its stream, shard,
// range and time): the same for the same dead letter, as a record read
// twice must say the same, and another for each half of a bisected batch.
func (dl DeadLetter) ID() string {
	sum := sha256.Sum256([]byte(dl.StreamARN + "\n" + dl.ShardID + "\n" + dl.FirstSequenceNumber + "\n" + dl.LastSequenceNumber + "\n" + dl.FailedAt.UTC().Format(time.RFC3339Nano)))
	return formatUUID([16]byte(sum[:16]), 8)
}

// MarshalJSON writes the record as Lambda does: its timestamp to the
// millisecond ("2019-11-14T00:13:49.717Z"), and the batch's place as
// DDBStreamBatchInfo, or KinesisBatchInfo for a Kinesis data stream's.
func (fr FailureRecord) MarshalJSON() ([]byte, error) {
	var ddb, kinesis *StreamBatchInfo
	if b := fr.BatchInfo; isKinesisARN(b.StreamARN) {
		kinesis = &b
	} else {
		ddb = &b
	}
	return json.Marshal(struct {
		RequestContext     FailureRequestContext                      `json:"requestContext"`
		ResponseContext    FailureResponseContext                     `json:"responseContext"`
		Version            string                                     `json:"version"`
		Timestamp          string                                     `json:"timestamp"`
		DDBBatchInfo       *StreamBatchInfo                           `json:"DDBStreamBatchInfo,omitempty"`
		KinesisBatchInfo   *StreamBatchInfo                           `json:"KinesisBatchInfo,omitempty"`
		BootstrapKeys      []map[string]events.DynamoDBAttributeValue `json:"bootstrapKeys,omitempty"`
		BootstrapEventIDs  []string                                   `json:"bootstrapEventIds,omitempty"`
		Window             *events.Window                             `json:"window,omitempty"`
		WindowState        map[string]string                          `json:"windowState,omitempty"`
		WindowStateDropped bool                                       `json:"windowStateDropped,omitempty"`
	}{fr.RequestContext, fr.ResponseContext, fr.Version, fr.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ddb, kinesis,
		fr.BootstrapKeys, fr.BootstrapEventIDs, fr.Window, fr.WindowState, fr.WindowStateDropped})
}

// UnmarshalJSON reads a record of either source: its batch's place from
// DDBStreamBatchInfo or KinesisBatchInfo.
func (fr *FailureRecord) UnmarshalJSON(b []byte) error {
	type plain FailureRecord // no methods: the default decoding
	var v struct {
		plain
		KinesisBatchInfo *StreamBatchInfo `json:"KinesisBatchInfo"`
	}
	if err := attr.UnmarshalJSON(b, &v); err != nil { // a dead letter may hold what aws-lambda-go panics on
		return err
	}
	*fr = FailureRecord(v.plain)
	if v.KinesisBatchInfo != nil && fr.BatchInfo == (StreamBatchInfo{}) {
		fr.BatchInfo = *v.KinesisBatchInfo
	}
	return nil
}

// isKinesisARN reports whether arn names a Kinesis resource
// (arn:PARTITION:kinesis:REGION:ACCOUNT:stream/NAME).
func isKinesisARN(arn string) bool {
	parts := strings.SplitN(arn, ":", 4)
	return len(parts) == 4 && parts[0] == "arn" && parts[2] == "kinesis"
}
