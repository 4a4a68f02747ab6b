package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Entry is one core change in the trail.
type Entry struct {
	// EventID is the stream record's: the entry's key.
	EventID string `json:"eventId"`
	// Event is INSERT, MODIFY or REMOVE.
	Event    string `json:"event"`
	ItemType string `json:"itemType,omitempty"`
	PK       string `json:"pk"`
	SK       string `json:"sk"`
	// At is when DynamoDB recorded the change (its stream record's
	// ApproximateCreationDateTime, RFC 3339).
	At string `json:"at"`
}

// EntryOf is a stream record's entry.
func EntryOf(r events.DynamoDBEventRecord) Entry {
	img := r.Change.NewImage
	if len(img) == 0 {
		img = r.Change.OldImage
	}
	str := func(m map[string]events.DynamoDBAttributeValue, k string) string {
		if v, ok := m[k]; ok && v.DataType() == events.DataTypeString {
			return v.String()
		}
		return ""
	}
	return Entry{EventID: r.EventID, Event: r.EventName, ItemType: str(img, "itemType"),
		PK: str(r.Change.Keys, "PK"), SK: str(r.Change.Keys, "SK"),
		At: r.Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339)}
}

// Sink keeps the trail. Append writes each entry whose EventID it has not
// written before, in the order given, and reports how many of them (from
// the start) it wrote before an error.
type Sink interface {
	Append(ctx context.Context, es []Entry) (int, error)
}

// Handler appends a batch's changes to s, in stream order: a record the
// sink failed on, and those after it, are reported as failed (the batch's
// partial response), so the reader retries them.
func Handler(s Sink) func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		es := make([]Entry, len(ev.Records))
		for i, r := range ev.Records {
			es[i] = EntryOf(r)
		}
		n, err := s.Append(ctx, es)
		if err == nil {
			return events.DynamoDBEventResponse{}, nil
		}
		if n >= len(ev.Records) {
			return events.DynamoDBEventResponse{}, fmt.Errorf("audit: %w", err)
		}
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[n].Change.SequenceNumber}}}, nil
	}
}
