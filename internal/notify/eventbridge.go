package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dynastream/dynastream/eventbus"
	"github.com/dynastream/dynastream/internal/events"
)

// EventBridge publishes domain events to an EventBridge bus (a Publisher).
// Each event becomes one PutEvents entry: Source and DetailType from the
// catalogue, Detail the envelope (id, occurredAt, version, sequenceNumber,
// data), Time the occurrence. The bus publisher chunks, retries and
// classifies failures; here an event that can never be published — too
// large for any PutEvents call, or rejected as malformed — is handed to
// Rejected (a dead-letter sink) with a clear log and counts as done, so it
// is not retried for ever; every other failure is returned, so its record
// becomes a batch item failure and the event source mapping retries it.
type EventBridge struct {
	Bus *eventbus.Publisher
	// Rejected receives events that can never be published (required).
	Rejected func(ctx context.Context, e events.Event, cause error) error
	Logger   *slog.Logger
}

// Publish implements Publisher.
func (b *EventBridge) Publish(ctx context.Context, evs []events.Event) []error {
	out := make([]error, len(evs))
	entries := make([]eventbus.Entry, 0, len(evs))
	index := make([]int, 0, len(evs)) // entry → event
	for i, e := range evs {
		detail, err := e.Detail()
		if err != nil {
			out[i] = b.reject(ctx, e, fmt.Errorf("encode detail: %w", err))
			continue
		}
		t, _ := time.Parse("2006-01-02T15:04:05.000Z", e.OccurredAt)
		entries = append(entries, eventbus.Entry{Source: e.Source, DetailType: e.DetailType, Detail: detail, Time: t})
		index = append(index, i)
	}
	for j, err := range b.Bus.Publish(ctx, entries) {
		i := index[j]
		if err != nil && eventbus.IsPermanent(err) {
			err = b.reject(ctx, evs[i], err)
		}
		out[i] = err
	}
	return out
}

// reject dead-letters an event; it returns an error only if the sink fails
// (then the record is retried, and nothing is lost).
func (b *EventBridge) reject(ctx context.Context, e events.Event, cause error) error {
	log := b.Logger
	if log == nil {
		log = slog.Default()
	}
	var tooLarge *eventbus.TooLargeError
	reason := "rejected by EventBridge"
	if errors.As(cause, &tooLarge) {
		reason = fmt.Sprintf("too large for PutEvents (%d bytes, limit %d)", tooLarge.Size, tooLarge.Limit)
	}
	log.Error("domain event dead-lettered: it can never be published", "event", e.ID, "detailType", e.DetailType,
		"sequenceNumber", e.SequenceNumber, "reason", reason, "err", cause)
	if err := b.Rejected(ctx, e, cause); err != nil {
		return fmt.Errorf("notify: dead-letter event %s: %w", e.ID, err)
	}
	return nil
}
