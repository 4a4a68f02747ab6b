package stream

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// KeyFunc returns the key whose records must be handled in order, one after
// another; records of different keys may be handled at the same time.
type KeyFunc func(events.DynamoDBEventRecord) string

// PartitionKey keys records by the value of one key attribute — the table's
// partition key — so that an item collection is handled in stream order,
// as Lambda does with a ParallelizationFactor above 1. A record without
// that attribute is keyed by its item (ItemKey).
func PartitionKey(name string) KeyFunc {
	return func(r events.DynamoDBEventRecord) string {
		if v, ok := r.Change.Keys[name]; ok {
			if s, ok := keyString(v); ok {
				return s
			}
		}
		return ItemKey(r)
	}
}

// ItemKey keys a record by its item: every key attribute, by name. Order per
// item is the one DynamoDB Streams itself guarantees.
func ItemKey(r events.DynamoDBEventRecord) string {
	names := make([]string, 0, len(r.Change.Keys))
	for n := range r.Change.Keys {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		s, _ := keyString(r.Change.Keys[n])
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.String()
}

// keyString is a key attribute's value as text (keys are S, N or B).
func keyString(v events.DynamoDBAttributeValue) (string, bool) {
	switch v.DataType() {
	case events.DataTypeString:
		return v.String(), true
	case events.DataTypeNumber:
		return v.Number(), true
	case events.DataTypeBinary:
		return base64.StdEncoding.EncodeToString(v.Binary()), true
	}
	return "", false
}

// Group is a batch's records of one key, in stream order.
type Group struct {
	Key     string
	Records []events.DynamoDBEventRecord
	// Index is the group's position among the batch's groups (and in Run's
	// Result).
	Index int
	// Offset is the position of Records[0] among the group's records: 0,
	// unless a record before it was dead-lettered for a Permanent error and
	// the group goes on after it. Result.Fail takes Offset+i for Records[i].
	Offset int
}

// GroupBy splits records by key. Each group keeps its records' order;
// groups are ordered by their first record.
func GroupBy(recs []events.DynamoDBEventRecord, key KeyFunc) []Group {
	var out []Group
	at := map[string]int{}
	for _, r := range recs {
		k := key(r)
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Group{Key: k, Index: i})
		}
		out[i].Records = append(out[i].Records, r)
	}
	return out
}

// GroupFunc handles one group's records, in order. It returns how many of
// them, from the first, it finished: done == len(g.Records) means all of
// them (err is then ignored); a smaller done means g.Records[done] failed,
// for err, and the records after it were left alone (they come again with
// it).
type GroupFunc func(ctx context.Context, g Group) (done int, err error)

// Each makes a GroupFunc of a function of one record: a group's records are
// handled one after another, and the first error (or panic) stops the
// group there.
func Each(fn func(ctx context.Context, r events.DynamoDBEventRecord) error) GroupFunc {
	return func(ctx context.Context, g Group) (int, error) {
		for i, r := range g.Records {
			if err := callRecord(ctx, fn, r); err != nil {
				return i, err
			}
		}
		return len(g.Records), nil
	}
}

func callRecord(ctx context.Context, fn func(context.Context, events.DynamoDBEventRecord) error, r events.DynamoDBEventRecord) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("record %s: panic: %v\n%s", r.Change.SequenceNumber, p, debug.Stack())
		}
	}()
	return fn(ctx, r)
}

// DefaultConcurrency is how many groups Keyed runs at once by default.
const DefaultConcurrency = 16

// Keyed handles a batch's records grouped by key: the groups run at the
// same time (at most Concurrency of them), each group's records in stream
// order; when a record fails, its group stops there — its later records
// are not handled — while the other groups run to their end. The response
// reports the first unfinished record of each stopped group, so Lambda (or
// a Runner) delivers again from the lowest of them: nothing is skipped, and
// no record is handled before an earlier record of its key has succeeded.
//
// This separates scheduling — which records, in what order, how
// concurrently — from what a record means, which stays in the GroupFunc.
type Keyed struct {
	// Key groups the records (default PartitionKey("PK")).
	Key KeyFunc
	// Concurrency bounds the groups handled at once (default
	// DefaultConcurrency).
	Concurrency int
	// DeadLetters, when set, takes each record whose handling failed with a
	// Permanent error, at once: retrying cannot help it, so it is not
	// reported as a failure; its group goes on with the next record (the
	// GroupFunc is called again with the rest, Offset set). When the dead
	// letter cannot be written, or DeadLetters is nil, the record fails its
	// group like any other error.
	DeadLetters DeadLetters
	// Consumer names the consumer in dead letters and log lines.
	Consumer string
	// Logger receives Handler's line per failed record (default
	// slog.Default()).
	Logger *slog.Logger
}

// Outcome is what became of one group.
type Outcome struct {
	Group
	// Done counts the group's records finished, from the first.
	Done int
	// Err says why Records[Done] failed (nil when Done == len(Records)).
	Err error
	// DeadLettered are the records of the group dead-lettered for a
	// Permanent error (counted in Done: they are finished).
	DeadLettered []DeadLetter
}

// Failed reports whether the group stopped before its end.
func (o Outcome) Failed() bool { return o.Done < len(o.Records) }

// Result holds a batch's outcomes, one per group, in group order.
type Result []Outcome

// Groups splits recs into the groups Run handles, in Run's order: a
// handler that shares work between groups before or beside Run (and
// reports its failures with Result.Fail) groups once and calls RunGroups.
func (k Keyed) Groups(recs []events.DynamoDBEventRecord) []Group {
	key := k.Key
	if key == nil {
		key = PartitionKey("PK")
	}
	return GroupBy(recs, key)
}

// Run handles recs with fn and returns each group's outcome. A group that
// panics counts as failed at its first record; a group not yet started when
// ctx ends fails with ctx's error.
func (k Keyed) Run(ctx context.Context, recs []events.DynamoDBEventRecord, fn GroupFunc) Result {
	return k.RunGroups(ctx, k.Groups(recs), fn)
}

// RunGroups is Run on groups made by Groups.
func (k Keyed) RunGroups(ctx context.Context, groups []Group, fn GroupFunc) Result {
	limit := k.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	out := make(Result, len(groups))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, g := range groups {
		out[i].Group = g
		if err := ctx.Err(); err != nil {
			out[i].Err = err
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i].Err = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i].Done, out[i].Err, out[i].DeadLettered = k.runGroup(ctx, fn, g)
		})
	}
	wg.Wait()
	return out
}

// runGroup handles a group, going on past each record dead-lettered for a
// Permanent error.
func (k Keyed) runGroup(ctx context.Context, fn GroupFunc, g Group) (int, error, []DeadLetter) {
	var dead []DeadLetter
	for start := 0; ; {
		sub := g
		sub.Records, sub.Offset = g.Records[start:], start
		done, err := callGroup(ctx, fn, sub)
		done += start
		if done == len(g.Records) || !IsPermanent(err) || k.DeadLetters == nil {
			return done, err, dead
		}
		r := g.Records[done]
		dl := DeadLetter{
			Consumer: k.Consumer, StreamARN: r.EventSourceArn, FirstSequenceNumber: r.Change.SequenceNumber,
			LastSequenceNumber: r.Change.SequenceNumber, Attempts: 1, Error: err.Error(), FailedAt: time.Now().UTC(),
			Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}},
		}
		if perr := k.DeadLetters.Put(ctx, dl); perr != nil {
			return done, fmt.Errorf("%w (and its dead letter failed: %v)", err, perr), dead
		}
		dead = append(dead, dl)
		start = done + 1
		if start == len(g.Records) {
			return start, nil, dead
		}
	}
}

// permanentError marks an error retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: the record that caused it fails the
// same way however often it is retried (it cannot be decoded, it breaks a
// rule). Keyed dead-letters such a record at once instead of reporting it
// for a retry. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err (or an error it wraps) was marked with
// Permanent, or says so itself with a method Permanent() bool returning
// true (as idempotency.ErrPayloadMismatch's errors do: a library can mark
// its errors without importing stream).
func IsPermanent(err error) bool {
	var p *permanentError
	if errors.As(err, &p) {
		return true
	}
	var says interface{ Permanent() bool }
	return errors.As(err, &says) && says.Permanent()
}

func callGroup(ctx context.Context, fn GroupFunc, g Group) (done int, err error) {
	defer func() {
		if p := recover(); p != nil {
			done, err = 0, fmt.Errorf("group %q: panic: %v\n%s", g.Key, p, debug.Stack())
		}
	}()
	done, err = fn(ctx, g)
	switch {
	case done < 0 || done > len(g.Records):
		return 0, fmt.Errorf("group %q: GroupFunc finished %d of %d records", g.Key, done, len(g.Records))
	case done < len(g.Records) && err == nil:
		return done, fmt.Errorf("group %q: stopped at record %d of %d without an error", g.Key, done, len(g.Records))
	case done == len(g.Records):
		return done, nil
	}
	return done, err
}

// Fail marks group's record (its position in the group) failed for err,
// when that is earlier than where the group stopped: for work a handler
// shares between groups after Run (one batch write for several groups), so
// a failed shared write stops each group it held at its first record in
// it.
func (r Result) Fail(group, record int, err error) {
	if o := &r[group]; record < o.Done {
		o.Done, o.Err = record, err
	}
}

// DeadLettered returns the dead letters Keyed wrote for the batch's
// records that failed with a Permanent error, in group order.
func (r Result) DeadLettered() []DeadLetter {
	var out []DeadLetter
	for _, o := range r {
		out = append(out, o.DeadLettered...)
	}
	return out
}

// Failures returns the stopped groups' outcomes.
func (r Result) Failures() []Outcome {
	var out []Outcome
	for _, o := range r {
		if o.Failed() {
			out = append(out, o)
		}
	}
	return out
}

// Err joins the stopped groups' errors (nil when every group finished).
func (r Result) Err() error {
	var errs []error
	for _, o := range r.Failures() {
		errs = append(errs, fmt.Errorf("record %s (key %q): %w", o.Records[o.Done].Change.SequenceNumber, o.Key, o.Err))
	}
	return errors.Join(errs...)
}

// Response is the Lambda response for the batch: the first unfinished
// record of each stopped group as a batch item failure.
func (r Result) Response() events.DynamoDBEventResponse {
	var resp events.DynamoDBEventResponse
	for _, o := range r.Failures() {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: o.Records[o.Done].Change.SequenceNumber})
	}
	return resp
}

// Handler returns a Handler that runs each batch through fn with Run and
// answers with the Result's Response; the handler itself never fails. The
// error of each stopped group is logged (Logger) with the record's eventID,
// sequence number and key, and noted (NoteFailure) for the Runner or the
// replay kit to put in the dead letter.
func (k Keyed) Handler(fn GroupFunc) Handler {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		res := k.Run(ctx, ev.Records, fn)
		for _, o := range res.Failures() {
			r := o.Records[o.Done]
			NoteFailure(ctx, r.Change.SequenceNumber, o.Err)
			k.logger().WarnContext(ctx, "record failed; its key stops here and it is reported for retry",
				"consumer", k.Consumer, "eventID", r.EventID, "sequenceNumber", r.Change.SequenceNumber, "key", o.Key,
				"waiting", len(o.Records)-o.Done-1, "err", o.Err)
		}
		return res.Response(), nil
	}
}

func (k Keyed) logger() *slog.Logger {
	if k.Logger != nil {
		return k.Logger
	}
	return slog.Default()
}
