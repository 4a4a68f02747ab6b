package notify

import (
	"context"
	"fmt"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/stream"
)

// Publisher publishes events; it returns one error per event (nil = done).
type Publisher interface {
	Publish(ctx context.Context, evs []events.Event) []error
}

// Notifier is the handler.
type Notifier struct {
	Publisher Publisher
	// Effects, when set, also sends e-mails and writes in-app notifications.
	Effects *Effects
	Logger  *slog.Logger
}

// internalAttrs are key and index attributes, not part of an event's data.
var internalAttrs = []string{"PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK", "itemType", "derived"}

// ToChange converts a record into the plain Change events.Map takes.
func ToChange(rec lambdaevents.DynamoDBEventRecord) (events.Change, error) {
	c, err := stream.Decode(rec)
	if err != nil {
		return events.Change{}, err
	}
	return plain(c)
}

// plain converts a decoded change into the plain Change events.Map takes.
func plain(c stream.Change) (events.Change, error) {
	old, err := plainImage(c.Old)
	if err != nil {
		return events.Change{}, err
	}
	cur, err := plainImage(c.New)
	if err != nil {
		return events.Change{}, err
	}
	return events.Change{
		EventID: c.EventID, SequenceNumber: c.SequenceNumber, Kind: events.Kind(c.Kind.String()),
		At: c.At, ItemType: c.ItemType(), Derived: c.Derived(), Old: old, New: cur,
	}, nil
}

func plainImage(img map[string]types.AttributeValue) (map[string]any, error) {
	if img == nil {
		return nil, nil
	}
	var m map[string]any
	if err := attributevalue.UnmarshalMap(img, &m); err != nil {
		return nil, err
	}
	for _, a := range internalAttrs {
		delete(m, a)
	}
	return m, nil
}

// Handle publishes the batch's events in one call and reports the records
// whose events failed.
func (n *Notifier) Handle(ctx context.Context, ev lambdaevents.DynamoDBEvent) (lambdaevents.DynamoDBEventResponse, error) {
	log := n.Logger
	if log == nil {
		log = slog.Default()
	}
	var resp lambdaevents.DynamoDBEventResponse
	failed := map[string]bool{}
	fail := func(seq string) {
		if !failed[seq] {
			failed[seq] = true
			resp.BatchItemFailures = append(resp.BatchItemFailures, lambdaevents.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		}
	}
	var all []events.Event
	var owner []string // sequence number of the record each event came from
	for _, rec := range ev.Records {
		sc, err := stream.Decode(rec)
		var c events.Change
		if err == nil {
			c, err = plain(sc)
		}
		var evs []events.Event
		if err == nil {
			evs, err = events.Map(c)
		}
		if err != nil {
			log.Error("notifier: undecodable record", "seq", rec.Change.SequenceNumber, "err", err)
			fail(rec.Change.SequenceNumber)
			continue
		}
		for _, e := range evs {
			all = append(all, e)
			owner = append(owner, rec.Change.SequenceNumber)
		}
		if n.Effects != nil {
			if err := n.Effects.Apply(ctx, sc); err != nil {
				log.Error("notifier: side effects failed", "seq", rec.Change.SequenceNumber, "eventID", rec.EventID, "err", err)
				fail(rec.Change.SequenceNumber)
			}
		}
	}
	if len(all) == 0 {
		return resp, nil
	}
	results := n.Publisher.Publish(ctx, all)
	if len(results) != len(all) {
		// A broken Publisher: without one result per event nothing can be
		// counted as published, so every record with events is retried.
		log.Error("notifier: publisher returned the wrong number of results", "events", len(all), "results", len(results))
		err := fmt.Errorf("notify: publisher returned %d results for %d events", len(results), len(all))
		results = make([]error, len(all))
		for i := range results {
			results[i] = err
		}
	}
	for i, err := range results {
		if err != nil && !failed[owner[i]] {
			log.Error("notifier: publish failed", "event", all[i].ID, "err", err)
			fail(owner[i])
		}
	}
	return resp, nil
}
