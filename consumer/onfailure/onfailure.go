package onfailure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dynastream/dynastream/stream"
)

// SQSAPI is the part of the SQS client the on-failure destination and
// Redrive use.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// SQS is a stream.DeadLetters that does what the event source
// mapping does with a batch it gives up on: it sends a stream.FailureRecord
// (the shard and sequence range, not the records) to an SQS queue — the
// template's on-failure queue, or a local one (moto_server serves SQS). Give
// it to a Runner, and the same Redrive serves what the Runner and the
// mapping sent. Records that could not be converted have no place a redrive
// could read them back from: they go to Undecodable (a FileDeadLetters, say)
// with their raw JSON, and Put fails if it is nil.
type SQS struct {
	Client   SQSAPI
	QueueURL string
	// FunctionARN names the consumer in the record (its function's ARN in
	// AWS; any name locally).
	FunctionARN string
	Undecodable stream.DeadLetters
}

// Put implements stream.DeadLetters.
func (d *SQS) Put(ctx context.Context, dl stream.DeadLetter) error {
	body, err := messageOf(ctx, d.Undecodable, dl, d.FunctionARN)
	if body == nil || err != nil {
		return err
	}
	if _, err := d.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(d.QueueURL), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("onfailure: send to the on-failure queue: %w", err)
	}
	return nil
}

// messageOf is what a queue or topic destination sends for dl: its failure
// record, as a message (nil when dl has none), once records that could not
// be converted went to undecodable.
func messageOf(ctx context.Context, undec stream.DeadLetters, dl stream.DeadLetter, functionARN string) ([]byte, error) {
	if err := undecodable(ctx, undec, dl); err != nil {
		return nil, err
	}
	fr, ok := dl.FailureRecord(functionARN)
	if !ok {
		return nil, nil
	}
	return message(fr)
}

// Report is what Redrive did, message by message.
type Report struct {
	// Redriven counts messages whose records all succeeded (deleted), and
	// Records the records handed over that succeeded (theirs, and those
	// of Reconcile's messages).
	Redriven, Records int
	// Failed are messages whose records failed again (kept), Lost those
	// whose records the stream no longer has (kept: purge them once
	// accounted for), Unreadable those that are no FailureRecord (kept).
	Failed, Lost, Unreadable []Message
	// Others counts messages of other consumers (Options.Function),
	// left alone.
	Others int
	// Gone counts items of Bootstrap's records that no longer exist (the
	// stream carried their removal): nothing to hand over for them.
	// Changed counts those whose item changed since the scan read it (the
	// stream carried the change): handed over as it is now, as an INSERT,
	// it would count that change twice, so it is left out
	// (stream.ReadBootstrap) and logged with its key.
	Gone, Changed int
	// Reconcile are the messages of those changed items (kept, once
	// their other items were handed over): the consumer never saw the
	// scan's image of such an item, so reconcile it by hand if the failed
	// record mattered, then purge the message. A rerun hands the other
	// items over again.
	Reconcile []Message
	// Windows are messages of tumbling windows whose final call was given
	// up on (kept): their records were handled; make the final call again
	// with the WindowHandler, from the message's window and state.
	Windows []Message
}

// Message is one on-failure message Redrive did not delete, and why.
type Message struct {
	ID     string
	Record stream.FailureRecord
	Err    error
}

// Options say what Redrive reads and whom it hands the records to.
type Options struct {
	Queue    SQSAPI
	QueueURL string
	// Streams reads the records back from the stream.
	Streams stream.API
	// Handler gets the records of a message's range: every record between
	// its ends (with ParallelizationFactor above 1, other keys' too, which
	// succeeded; idempotent handlers take them again harmlessly). Give it
	// behind the mapping's filter and loop guard, as the mapping calls it:
	// stream.Filter(criteria, stream.Skip(skip, h)).
	Handler stream.Handler
	// Function, when set, keeps Redrive to one consumer's messages: those
	// whose requestContext.functionArn it accepts (FunctionNamed). Several
	// mappings may share a queue; another consumer's messages are left
	// alone (Report.Others) for its own redrive.
	Function func(functionARN string) bool
	// Items reads the items of Bootstrap's records again (stream.ReadItems):
	// they are a scan's, which no shard holds, and their message names
	// their keys (the table's GetItem; the table is the stream's).
	Items stream.GetItemAPI
	// Visibility is how long a message Redrive keeps stays hidden from the
	// next receive (default 60 s), so one run sees each message once.
	Visibility int32
	Logger     *slog.Logger
}

// FunctionNamed accepts a function ARN (or a bare name, as SQS writes
// locally) whose function name is name or ends in "-"+name (a
// template's "<stack>-projector"), with or without a version qualifier.
func FunctionNamed(name string) func(string) bool {
	return func(arn string) bool {
		fn := arn
		if parts := strings.Split(arn, ":"); len(parts) >= 7 && parts[5] == "function" {
			fn = parts[6]
		}
		return fn == name || strings.HasSuffix(fn, "-"+name)
	}
}

// Redrive reads the on-failure queue — the event source mapping's
// messages in AWS, an SQS's locally — and for each message reads
// the records it names back from the stream (stream.ReadRange), hands them
// to the handler once, and deletes the message when all succeeded. Records
// the stream no longer keeps (24 hours) are reported as lost, never skipped
// silently; a message from an SNS destination (its subscription's envelope)
// is read too. It stops when a receive comes back empty.
func Redrive(ctx context.Context, o Options) (Report, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.Visibility == 0 {
		o.Visibility = 60
	}
	var rep Report
	seen := map[string]bool{} // a kept message seen again (a run longer than Visibility)
	for {
		out, err := o.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(o.QueueURL), MaxNumberOfMessages: 10,
			VisibilityTimeout: o.Visibility, WaitTimeSeconds: 1}) // long polling: an empty answer means an empty queue
		if err != nil {
			return rep, fmt.Errorf("onfailure: receive from %s: %w", o.QueueURL, err)
		}
		if len(out.Messages) == 0 {
			return rep, nil
		}
		fresh := 0
		for _, m := range out.Messages {
			msg := Message{ID: aws.ToString(m.MessageId)}
			if seen[msg.ID] {
				continue
			}
			seen[msg.ID] = true
			fresh++
			if msg.Record, err = failureRecord(aws.ToString(m.Body)); err != nil {
				msg.Err = err
				rep.Unreadable = append(rep.Unreadable, msg)
				log.Error("on-failure message is not a stream failure record (kept)", "message", msg.ID, "err", err)
				continue
			}
			if o.Function != nil && !o.Function(msg.Record.RequestContext.FunctionARN) {
				rep.Others++
				continue
			}
			if msg.Record.Window != nil {
				msg.Err = errWindow
				rep.Windows = append(rep.Windows, msg)
				log.Error("on-failure message of a window's final call (kept): make it again with the window handler", "message", msg.ID,
					"window", msg.Record.Window.Start.Format(time.RFC3339))
				continue
			}
			b := msg.Record.BatchInfo
			var recs []events.DynamoDBEventRecord
			var changed []map[string]events.DynamoDBAttributeValue
			if b.ShardID == stream.BootstrapShard {
				var gone int
				recs, gone, changed, err = bootstrapRecords(ctx, o.Items, msg.Record)
				rep.Gone += gone
				rep.Changed += len(changed)
				for _, k := range changed {
					key, _ := json.Marshal(k)
					log.Warn("an item of Bootstrap's record changed since the scan: left out, not handed over as it is now; reconcile it by hand (message kept)",
						"message", msg.ID, "key", string(key))
				}
			} else {
				recs, err = stream.ReadRange(ctx, o.Streams, b)
				if err == nil && len(recs) < b.BatchSize { // before the handler sees any of it
					err = fmt.Errorf("the range holds %d record(s), the message names %d", len(recs), b.BatchSize)
				}
			}
			n := len(recs)
			if err == nil && n > 0 {
				err = stream.Resubmit(ctx, o.Handler, stream.DeadLetter{Event: events.DynamoDBEvent{Records: recs}})
			}
			switch {
			case errors.Is(err, stream.ErrTrimmed):
				msg.Err = err
				rep.Lost = append(rep.Lost, msg)
				log.Error("records lost: the stream no longer has them (message kept)", "message", msg.ID, "shard", b.ShardID,
					"first", b.StartSequenceNumber, "last", b.EndSequenceNumber, "records", b.BatchSize, "err", err)
				continue
			case err != nil:
				msg.Err = err
				rep.Failed = append(rep.Failed, msg)
				log.Error("redriven records failed again (message kept)", "message", msg.ID, "first", b.StartSequenceNumber, "err", err)
				continue
			case len(changed) > 0:
				msg.Err = fmt.Errorf("%d item(s) changed since the scan: %w", len(changed), errChanged)
				rep.Reconcile = append(rep.Reconcile, msg)
				rep.Records += n
				continue
			}
			if _, err := o.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(o.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return rep, fmt.Errorf("onfailure: delete message %s (its records were handled; a rerun hands them over again): %w", msg.ID, err)
			}
			rep.Redriven++
			rep.Records += n
			log.Info("records redriven; message deleted", "message", msg.ID, "records", n, "first", b.StartSequenceNumber)
		}
		if fresh == 0 { // only messages kept before: the rest of the queue is theirs
			return rep, nil
		}
	}
}

// failureRecord reads a message body: a FailureRecord, or an SNS
// notification carrying one.
func failureRecord(body string) (stream.FailureRecord, error) {
	var env struct {
		Type    string `json:"Type"`
		Message string `json:"Message"`
	}
	if json.Unmarshal([]byte(body), &env) == nil && env.Type == "Notification" && env.Message != "" {
		body = env.Message
	}
	var fr stream.FailureRecord
	if err := json.Unmarshal([]byte(body), &fr); err != nil { // FailureRecord.UnmarshalJSON: a panic of aws-lambda-go is an error
		return fr, err
	}
	b := fr.BatchInfo
	if b.StreamARN == "" || b.ShardID == "" || b.StartSequenceNumber == "" || b.EndSequenceNumber == "" {
		return fr, errors.New("no DDBStreamBatchInfo or KinesisBatchInfo (streamArn, shardId, start and end sequence numbers)")
	}
	return fr, nil
}

// bootstrapRecords reads again the items of a record Bootstrap gave up on.
func bootstrapRecords(ctx context.Context, items stream.GetItemAPI, fr stream.FailureRecord) ([]events.DynamoDBEventRecord, int, []map[string]events.DynamoDBAttributeValue, error) {
	if len(fr.BootstrapKeys) == 0 {
		return nil, 0, nil, errors.New("a record of Bootstrap's without its items' keys (bootstrapKeys)")
	}
	if items == nil {
		return nil, 0, nil, errors.New("a record of Bootstrap's: its items are read again from the table, and Options.Items is not set")
	}
	return stream.ReadBootstrap(ctx, items, fr)
}

// errChanged is why a Bootstrap message with changed items is kept.
var errChanged = errors.New("handed over as they are now they would count the stream's change twice: reconcile them by hand, then purge the message")

// errWindow is why a window's on-failure record is not redriven.
var errWindow = errors.New("a tumbling window's final call was given up on; its records were handled: make the final call again with the window handler, from the record's window and state")

// maxMessage is the most an SQS message or an SNS notification holds.
const maxMessage = 256 << 10

// message is the failure record as a message body; a window's state that
// would not fit is left out (WindowStateDropped), as Lambda drops a
// payload that does not fit an SNS destination. A record still too large
// (a Bootstrap dead letter names every item's key) is stream.ErrTooLarge:
// the Runner puts it in halves.
func message(fr stream.FailureRecord) ([]byte, error) {
	body, err := json.Marshal(fr)
	if err != nil || len(body) <= maxMessage {
		return body, err
	}
	if fr.WindowState != nil {
		fr.WindowState, fr.WindowStateDropped = nil, true
		if body, err = json.Marshal(fr); err != nil || len(body) <= maxMessage {
			return body, err
		}
	}
	return nil, fmt.Errorf("onfailure: a failure record of %d bytes (%d records); a message takes %d: %w", len(body), fr.BatchInfo.BatchSize, maxMessage, stream.ErrTooLarge)
}
