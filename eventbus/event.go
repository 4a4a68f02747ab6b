package eventbus

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Event is a domain event a stream consumer publishes, with its data typed.
// Entry encodes it as a PutEvents entry whose Detail is the envelope
//
//	{"id":…,"occurredAt":"2026-01-02T15:04:05.000Z","version":1,"sequenceNumber":…,"changedAt":"2026-01-02T15:04:05.123456Z","data":…}
//
// Delivery is at least once (a record comes again, a call is retried after
// an ambiguous failure), so the id must be the same every time the event
// is published: FromRecord derives it from the stream record (ID).
// Subscribers dedupe on it and order one item's events, not by arrival,
// but by sequenceNumber on a DynamoDB stream, and by changedAt on a
// Kinesis data stream for DynamoDB (which may repeat a change and deliver
// one item's changes out of order; a repeat has another sequence number).
type Event[T any] struct {
	// ID identifies the event for deduplication; required.
	ID string
	// Source and DetailType are EventBridge's (a producer such as
	// "shop.orders", an event name such as "OrderPlaced"); required.
	Source     string
	DetailType string
	// Version is the version of Data's schema.
	Version int
	// OccurredAt is when the change happened; it is also the entry's Time.
	// Zero: unset (EventBridge then uses the time of the call).
	OccurredAt time.Time
	// SequenceNumber is the stream record's, for ordering per item on a
	// DynamoDB stream.
	SequenceNumber string
	// ChangedAt is the record's approximate creation time, written to the
	// microsecond (ChangedAtLayout): for ordering per item on a Kinesis
	// source, whose records carry microseconds. Zero: unset.
	ChangedAt time.Time
	Data      T
	// Resources are ARNs the event concerns (optional).
	Resources []string
	// TraceHeader is an AWS X-Ray trace header (optional).
	TraceHeader string
}

// ID is the id of the n-th event (from 0) that a stream record gives rise
// to: its eventID, a dash and n. A record's eventID is the same on every
// delivery and different for every other record, so the id is too.
func ID(rec events.DynamoDBEventRecord, n int) string {
	return rec.EventID + "-" + strconv.Itoa(n)
}

// FromRecord is the n-th event (from 0) of a stream record: its ID,
// sequence number and time (the record's approximate creation time) come
// from the record. Set Version and anything else on the result.
func FromRecord[T any](rec events.DynamoDBEventRecord, n int, source, detailType string, data T) Event[T] {
	return Event[T]{
		ID: ID(rec, n), Source: source, DetailType: detailType, Version: 1,
		OccurredAt: rec.Change.ApproximateCreationDateTime.Time, SequenceNumber: rec.Change.SequenceNumber,
		ChangedAt: rec.Change.ApproximateCreationDateTime.Time, Data: data,
	}
}

// TimeLayout is how occurredAt is written: UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// ChangedAtLayout is how changedAt is written: UTC, microseconds.
const ChangedAtLayout = "2006-01-02T15:04:05.000000Z"

// Entry is the event as a PutEvents entry. It fails without an ID, a
// Source or a DetailType, or when Data does not encode as JSON, with a
// *PermanentError (IsPermanent): errors of the event itself, to
// dead-letter.
func (e Event[T]) Entry() (Entry, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{{"ID", e.ID}, {"Source", e.Source}, {"DetailType", e.DetailType}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return Entry{}, &PermanentError{Message: fmt.Sprintf("event %q has no %v", e.ID, missing)}
	}
	env := struct {
		ID             string `json:"id"`
		OccurredAt     string `json:"occurredAt,omitempty"`
		Version        int    `json:"version"`
		SequenceNumber string `json:"sequenceNumber,omitempty"`
		ChangedAt      string `json:"changedAt,omitempty"`
		Data           T      `json:"data"`
	}{ID: e.ID, Version: e.Version, SequenceNumber: e.SequenceNumber, Data: e.Data}
	if !e.OccurredAt.IsZero() {
		env.OccurredAt = e.OccurredAt.UTC().Format(TimeLayout)
	}
	if !e.ChangedAt.IsZero() {
		env.ChangedAt = e.ChangedAt.UTC().Format(ChangedAtLayout)
	}
	detail, err := json.Marshal(env)
	if err != nil {
		return Entry{}, &PermanentError{Message: fmt.Sprintf("event %s: encode data: %v", e.ID, err)}
	}
	return Entry{Source: e.Source, DetailType: e.DetailType, Detail: detail, Time: e.OccurredAt,
		Resources: e.Resources, TraceHeader: e.TraceHeader}, nil
}
