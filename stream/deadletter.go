package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/attr"
)

// DeadLetter is a batch of records a consumer gave up on, with everything
// needed to resubmit it: the records themselves, in the shape Lambda
// delivers, and where and why they failed.
type DeadLetter struct {
	Consumer            string               `json:"consumer"`
	StreamARN           string               `json:"streamArn"`
	ShardID             string               `json:"shardId"`
	FirstSequenceNumber string               `json:"firstSequenceNumber,omitempty"`
	LastSequenceNumber  string               `json:"lastSequenceNumber,omitempty"`
	Attempts            int                  `json:"attempts"`
	Error               string               `json:"error"`
	FailedAt            time.Time            `json:"failedAt"`
	Event               events.DynamoDBEvent `json:"event"`
	// Unconverted holds records that could not be converted to Lambda's
	// shape (so are not in Event), as DynamoDB Streams returned them
	// (types.Record as JSON) to the runner, or as Lambda delivered them
	// (LambdaHandler): for repair by hand; Resubmit skips them.
	Unconverted []json.RawMessage `json:"unconverted,omitempty"`
	// Condition is why the records were given up on, in the on-failure
	// destination's terms: RetryAttemptsExhausted ("" reads as that) or
	// RecordAgeExceeded.
	Condition string `json:"condition,omitempty"`
	// RequestID is the invocation id of the last handler call on these
	// records ("" when none was made: records that expired first), and
	// FunctionError how it failed, as Lambda reports it: "Unhandled" for an
	// error, "" for records the call reported failed (BatchItemFailures).
	// The on-failure record carries them (FailureRecord).
	RequestID     string `json:"requestId,omitempty"`
	FunctionError string `json:"functionError,omitempty"`
	// Window and WindowState are a tumbling window whose final call was
	// given up on (Windows.OnGiveUp): its records (First…LastSequenceNumber)
	// were handled, and the final call can be made again by hand with this
	// state (Resubmit does not make it). Event has no records then.
	Window      *events.Window    `json:"window,omitempty"`
	WindowState map[string]string `json:"windowState,omitempty"`
}

// Conditions of a DeadLetter, as the event source mapping names them in
// the records it sends to its on-failure destination.
const (
	RetryAttemptsExhausted = "RetryAttemptsExhausted"
	RecordAgeExceeded      = "RecordAgeExceeded"
)

func (dl DeadLetter) condition() string {
	if dl.Condition == "" {
		return RetryAttemptsExhausted
	}
	return dl.Condition
}

// DeadLetters receives what a consumer gives up on.
type DeadLetters interface {
	Put(ctx context.Context, dl DeadLetter) error
}

// MemoryDeadLetters keeps dead letters in memory: for tests.
type MemoryDeadLetters struct {
	mu sync.Mutex
	l  []DeadLetter
}

// Put implements DeadLetters.
func (m *MemoryDeadLetters) Put(_ context.Context, dl DeadLetter) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.l = append(m.l, dl)
	return nil
}

// All returns the dead letters so far.
func (m *MemoryDeadLetters) All() []DeadLetter {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]DeadLetter(nil), m.l...)
}

// FileDeadLetters appends dead letters as JSON lines to a file, synced
// before Put returns.
type FileDeadLetters struct {
	Path string
	mu   sync.Mutex
}

// Put implements DeadLetters.
func (f *FileDeadLetters) Put(_ context.Context, dl DeadLetter) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("stream: encode dead letter: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return fmt.Errorf("stream: dead-letter folder: %w", err)
	}
	fh, err := os.OpenFile(f.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("stream: open dead-letter file: %w", err)
	}
	_, err = fh.Write(append(b, '\n'))
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("stream: write dead letter: %w", err)
	}
	return nil
}

// ReadDeadLetters reads a FileDeadLetters file.
func ReadDeadLetters(path string) ([]DeadLetter, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []DeadLetter
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var dl DeadLetter
		if err := attr.UnmarshalJSON(sc.Bytes(), &dl); err != nil {
			return out, fmt.Errorf("stream: %s line %d: %w", path, line, err)
		}
		out = append(out, dl)
	}
	return out, sc.Err()
}

// Resubmit hands a dead letter's records to a handler again, once. It
// returns the handler's error, or an error listing the items it reported
// failed.
func Resubmit(ctx context.Context, h Handler, dl DeadLetter) error {
	resp, err := safeCall(ctx, h, dl.Event)
	if err != nil {
		return err
	}
	if n := len(resp.BatchItemFailures); n > 0 {
		return fmt.Errorf("stream: %d record(s) failed again, first %s", n, resp.BatchItemFailures[0].ItemIdentifier)
	}
	return nil
}

// TableDeadLetters keeps dead letters in a DynamoDB table with string keys
// PK and SK (the project's bookkeeping table: no stream): PK
// "DEADLETTER#<consumer>", SK "<failedAt>#<first sequence number>", the
// dead letter as JSON in "letter", removed by TTL ("ttl") after Keep. For a
// handler in Lambda, which has no disk: the event source mapping's own
// on-failure destination gets only a batch's position, not its records.
// A dead letter larger than an item (400 KB) cannot be kept: Put fails, and
// the record fails as if it were not permanent.
type TableDeadLetters struct {
	DB    *dynamodb.Client
	Table string
	// Keep is how long a dead letter is kept (default 14 days).
	Keep time.Duration
}

const deadLetterPrefix = "DEADLETTER#"

// deadLetterKey is a dead letter's item key: PK DEADLETTER#<consumer>, SK
// <failedAt>#<first sequence number>.
func deadLetterKey(dl DeadLetter) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"PK": &ddbtypes.AttributeValueMemberS{Value: deadLetterPrefix + dl.Consumer},
		"SK": &ddbtypes.AttributeValueMemberS{Value: dl.FailedAt.UTC().Format(time.RFC3339Nano) + "#" + dl.FirstSequenceNumber},
	}
}

// Put implements DeadLetters.
func (t *TableDeadLetters) Put(ctx context.Context, dl DeadLetter) error {
	b, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("stream: encode dead letter: %w", err)
	}
	keep := t.Keep
	if keep == 0 {
		keep = 14 * 24 * time.Hour
	}
	item := deadLetterKey(dl)
	item["letter"] = &ddbtypes.AttributeValueMemberS{Value: string(b)}
	item["ttl"] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(dl.FailedAt.Add(keep).Unix(), 10)}
	_, err = t.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(t.Table), Item: item})
	if err != nil {
		return fmt.Errorf("stream: write dead letter: %w", err)
	}
	return nil
}

// List returns a consumer's dead letters, oldest first.
func (t *TableDeadLetters) List(ctx context.Context, consumer string) ([]DeadLetter, error) {
	p := dynamodb.NewQueryPaginator(t.DB, &dynamodb.QueryInput{
		TableName: aws.String(t.Table), KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: deadLetterPrefix + consumer}},
		ConsistentRead:            aws.Bool(true),
	})
	var out []DeadLetter
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("stream: list dead letters: %w", err)
		}
		for _, it := range page.Items {
			s, _ := it["letter"].(*ddbtypes.AttributeValueMemberS)
			var dl DeadLetter
			if s == nil || attr.UnmarshalJSON([]byte(s.Value), &dl) != nil {
				return out, fmt.Errorf("stream: dead letter %v is not one", it["SK"])
			}
			out = append(out, dl)
		}
	}
	return out, nil
}

// Delete removes a dead letter (after it was resubmitted).
func (t *TableDeadLetters) Delete(ctx context.Context, dl DeadLetter) error {
	_, err := t.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(t.Table), Key: deadLetterKey(dl)})
	if err != nil {
		return fmt.Errorf("stream: delete dead letter: %w", err)
	}
	return nil
}

// deadLetter hands records to the sink, retrying until it takes them: a
// record leaves the shard only through the handler or the sink.
func (r *Runner) deadLetter(ctx context.Context, log *slog.Logger, shardID string, recs []events.DynamoDBEventRecord, attempts int, cause error, raw ...json.RawMessage) bool {
	return r.putDeadLetter(ctx, log, r.newDeadLetter(shardID, recs, attempts, cause, raw...))
}

func (r *Runner) newDeadLetter(shardID string, recs []events.DynamoDBEventRecord, attempts int, cause error, raw ...json.RawMessage) DeadLetter {
	dl := DeadLetter{
		Consumer: r.cfg.Consumer, StreamARN: r.cfg.StreamARN, ShardID: shardID,
		Error: cause.Error(), Attempts: attempts, FailedAt: r.clock().UTC(),
		Event: events.DynamoDBEvent{Records: recs}, Unconverted: raw,
	}
	if len(recs) > 0 {
		dl.FirstSequenceNumber = recs[0].Change.SequenceNumber
		dl.LastSequenceNumber = recs[len(recs)-1].Change.SequenceNumber
	}
	return dl
}

// ErrTooLarge is what a DeadLetters returns (wrapped) for a dead letter
// too large for its destination, as SQS and SNS refuse a message over 256
// KB: the Runner and Bootstrap then put each half of its records as a dead
// letter of its own, rather than retry it for ever (a Bootstrap dead
// letter names each item's key, so a large batch given up whole outgrows
// a message). A dead letter of one record that is still too large is
// given up on: its error log lines ("dead letter too large for its
// destination even alone") carry it whole, as JSON in parts, and are the
// only copy of it.
var ErrTooLarge = errors.New("stream: the dead letter is too large for its destination")

// putDeadLetter puts dl, retrying (the shard waits) until the sink takes
// it or ctx ends; a dl the sink finds too large (ErrTooLarge) is split in
// halves, each put in turn, and one that cannot be split is logged whole
// instead (see ErrTooLarge). False: ctx ended first.
func (r *Runner) putDeadLetter(ctx context.Context, log *slog.Logger, dl DeadLetter) bool {
	backoff := r.cfg.RetryBackoff
	waiting := 0 // its id in r.sink once the sink refused it
	defer func() {
		if waiting != 0 { // taken, or the run ended first: its records are read again after a restart
			r.sink.done(waiting)
		}
	}()
	for {
		err := r.DeadLetters.Put(context.WithoutCancel(ctx), dl)
		if err == nil {
			n := int64(max(len(dl.Event.Records), 1))
			r.counters.deadLettered.Add(n)
			if dl.Condition == RecordAgeExceeded {
				r.counters.expired.Add(n)
			}
			log.Error("records dead-lettered", "records", len(dl.Event.Records), "first", dl.FirstSequenceNumber, "last", dl.LastSequenceNumber,
				"attempts", dl.Attempts, "condition", dl.condition(), "err", dl.Error)
			return true
		}
		if errors.Is(err, ErrTooLarge) {
			if waiting != 0 { // not waiting on the sink while the halves are put
				r.sink.done(waiting)
				waiting = 0
			}
			if first, second, ok := dl.halves(); ok {
				log.Warn("dead letter too large for its destination: put in halves", "records", len(dl.Event.Records), "err", err)
				return r.putDeadLetter(ctx, log, first) && r.putDeadLetter(ctx, log, second)
			}
			r.counters.destinationFailures.Add(1)
			r.counters.deadLettered.Add(int64(max(len(dl.Event.Records), 1)))
			logWhole(log, dl, err)
			return true
		}
		r.counters.destinationFailures.Add(1)
		waiting = r.sink.refused(waiting, r.clock(), err)
		log.Error("dead-letter sink failed; retrying (the shard waits)", "err", err)
		if ctx.Err() != nil {
			return false
		}
		r.sleep(ctx, &backoff)
	}
}

// maxLogPart is the most of a dead letter one log line carries: "Each log
// event can be no larger than 256 KB" (CloudWatch Logs API Reference,
// PutLogEvents), less the line's other fields.
const maxLogPart = 200 << 10

// logWhole logs dl, which no sink takes, as the only copy of it: its JSON
// in lines of at most maxLogPart bytes ("part" i of "parts"), to be
// joined in order.
func logWhole(log *slog.Logger, dl DeadLetter, cause error) {
	body, _ := json.Marshal(dl)
	var parts []string
	for len(body) > 0 {
		n := min(len(body), maxLogPart)
		for n < len(body) && n > 0 && !utf8.RuneStart(body[n]) { // a line's text stays UTF-8
			n--
		}
		parts = append(parts, string(body[:n]))
		body = body[n:]
	}
	for i, part := range parts {
		log.Error("dead letter too large for its destination even alone: given up on, and these lines are the only copy of it",
			"first", dl.FirstSequenceNumber, "condition", dl.condition(), "err", cause, "part", i+1, "parts", len(parts), "deadLetter", part)
	}
}

// halves splits a dead letter of two records or more in two, each naming
// its own range; false for one record, or records that were not converted.
func (dl DeadLetter) halves() (DeadLetter, DeadLetter, bool) {
	recs := dl.Event.Records
	if len(recs) < 2 || len(dl.Unconverted) > 0 {
		return dl, dl, false
	}
	half := func(part []events.DynamoDBEventRecord) DeadLetter {
		h := dl
		h.Event = events.DynamoDBEvent{Records: part}
		h.FirstSequenceNumber, h.LastSequenceNumber = part[0].Change.SequenceNumber, part[len(part)-1].Change.SequenceNumber
		return h
	}
	return half(recs[:len(recs)/2]), half(recs[len(recs)/2:]), true
}
