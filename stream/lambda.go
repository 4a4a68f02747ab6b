package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/internal/lambdajson"
)

// LambdaHandler adapts h to a Lambda function's invocation (pass it to
// lambda.Start). aws-lambda-go would decode the whole event at once, and
// one attribute value it cannot read ({} or two types in one value) would
// fail the invocation, so the whole batch, again and again. Here each
// record is decoded on its own: h gets the ones that decode, and each one
// that does not is written to dl with its raw JSON (DeadLetter.Unconverted)
// and the decoding error, and logged; when dl is nil or refuses it, the
// record is reported in batchItemFailures, so Lambda retries from it and,
// after the event source mapping's retries, sends it to the on-failure
// destination. The handler's context ends a little before the
// invocation's deadline (beforeDeadline). A Kinesis event from a data
// stream a table writes its changes to is read as well
// (DecodeKinesisEvent): the same handler runs on either source. Only a
// payload that is not a table's changes (StreamEvent says why: {}, an SQS
// event, a Kinesis event of another producer's, a record without a
// sequence number to report it by) fails the invocation, with an error
// that says so.
func LambdaHandler(h Handler, dl DeadLetters, consumer string, log *slog.Logger) func(context.Context, json.RawMessage) (events.DynamoDBEventResponse, error) {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, payload json.RawMessage) (events.DynamoDBEventResponse, error) {
		decode := DecodeLambdaEvent
		if lambdajson.Source(payload) == kinesisSource { // a table's changes through Kinesis
			decode = DecodeKinesisEvent
		}
		ev, bad, err := decode(payload)
		if err == nil {
			err = StreamEvent(ev, bad)
		}
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		var resp events.DynamoDBEventResponse
		if len(ev.Records) > 0 {
			hctx, cancel := beforeDeadline(ctx)
			resp, err = h(hctx, ev)
			cancel()
			if err != nil {
				return resp, err
			}
		}
		for _, b := range bad {
			d := DeadLetter{
				Consumer: consumer, StreamARN: b.StreamARN, Error: b.Err.Error(), Attempts: 1, FailedAt: time.Now().UTC(),
				FirstSequenceNumber: b.SequenceNumber, LastSequenceNumber: b.SequenceNumber, Unconverted: []json.RawMessage{b.Raw},
			}
			perr := errors.New("no dead-letter sink")
			if dl != nil {
				perr = dl.Put(ctx, d)
			}
			if perr != nil {
				log.Error("an undecodable record could not be dead-lettered; reported failed", "eventID", b.EventID, "sequenceNumber", b.SequenceNumber, "err", b.Err, "deadLetterErr", perr)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: b.SequenceNumber})
				continue
			}
			log.Error("records dead-lettered", "records", 1, "first", b.SequenceNumber, "eventID", b.EventID, "err", b.Err, "undecodable", true)
		}
		return resp, nil
	}
}

// beforeDeadline ends the handler's context a margin before the
// invocation's deadline (a fifth of the time left, between 250 ms and
// 2 s: time for the requests in flight to end and the answer to go out),
// so a batch that cannot finish in time still answers: what is done is
// acknowledged, and the rest is reported in batchItemFailures (Keyed
// fails the groups not finished), instead of Lambda timing the whole
// invocation out and retrying all of it.
func beforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(max(time.Until(d)/5, 250*time.Millisecond), 2*time.Second)
	return context.WithDeadline(ctx, d.Add(-margin))
}

// ErrNotStreamEvent is the error of an invocation payload that is not a
// DynamoDB stream event (StreamEvent).
var ErrNotStreamEvent = errors.New("stream: not a DynamoDB stream event")

// StreamEvent checks that a decoded payload is what Lambda's event source
// mapping for a DynamoDB stream sends: at least one record (it never sends
// an empty batch: {} and {"hello":"world"} decode to none), each from
// aws:dynamodb (an SQS event's records are not, nor a Kinesis event's
// before DecodeKinesisEvent) with a sequence number to report it by. The
// error wraps ErrNotStreamEvent and says what is wrong; a handler that
// gets such a payload was wired to the wrong event source, and failing
// the invocation says so at once.
func StreamEvent(ev events.DynamoDBEvent, bad []BadRecord) error {
	if len(ev.Records)+len(bad) == 0 {
		return fmt.Errorf("%w: it has no Records (Lambda's event source mapping never sends an empty batch)", ErrNotStreamEvent)
	}
	for i, r := range ev.Records {
		if r.EventSource != "" && r.EventSource != dynamodbSource {
			return fmt.Errorf("%w: record %d of %d comes from %q, not aws:dynamodb", ErrNotStreamEvent, i+1, len(ev.Records), r.EventSource)
		}
		if r.Change.SequenceNumber == "" {
			return fmt.Errorf("%w: record %d of %d (eventID %q) has no dynamodb.SequenceNumber", ErrNotStreamEvent, i+1, len(ev.Records), r.EventID)
		}
	}
	return nil
}

// BadRecord is a record of a Lambda event that does not decode.
type BadRecord struct {
	EventID, SequenceNumber, StreamARN string
	Raw                                json.RawMessage
	Err                                error
}

// DecodeLambdaEvent decodes a Lambda DynamoDB stream event: the records
// that decode, in order, and the ones that do not (decoded again record by
// record, only when the whole event does not decode). The event is the one
// aws-lambda-go's own decoding (json.Unmarshal into events.DynamoDBEvent)
// gives, for every payload (differentially tested and fuzzed), read in one
// pass over jsontext's tokens (BenchmarkLambdaDecode compares the
// two).
// The error, which wraps ErrNotStreamEvent, is for a payload that is not a
// stream event at all, or a bad record without a sequence number.
func DecodeLambdaEvent(payload []byte) (events.DynamoDBEvent, []BadRecord, error) {
	// The whole event in one pass over its tokens (lambdajson.Decode: what
	// aws-lambda-go's decoding gives); only a batch with
	// something wrong in it (all but never) is decoded again, record by
	// record, to find what.
	ev, err := lambdajson.Decode(payload)
	if err == nil {
		return ev, nil, nil
	}
	var raw struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(payload, &raw); err != nil {
		return events.DynamoDBEvent{}, nil, fmt.Errorf("%w: %w", ErrNotStreamEvent, err)
	}
	ev = events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, len(raw.Records))}
	var bad []BadRecord
	for i, r := range raw.Records {
		var rec events.DynamoDBEventRecord
		err := json.Unmarshal(r, &rec)
		if err == nil {
			ev.Records = append(ev.Records, rec)
			continue
		}
		var id struct {
			EventID   string `json:"eventID"`
			StreamARN string `json:"eventSourceARN"`
			Change    struct {
				SequenceNumber string `json:"SequenceNumber"`
			} `json:"dynamodb"`
		}
		if json.Unmarshal(r, &id) != nil || id.Change.SequenceNumber == "" {
			return events.DynamoDBEvent{}, nil, fmt.Errorf("%w: record %d of %d: %v, and no sequence number to report it by", ErrNotStreamEvent, i+1, len(raw.Records), err)
		}
		bad = append(bad, BadRecord{EventID: id.EventID, SequenceNumber: id.Change.SequenceNumber, StreamARN: id.StreamARN, Raw: r,
			Err: fmt.Errorf("stream: record %s cannot be decoded: %w", id.EventID, err)})
	}
	return ev, bad, nil
}
