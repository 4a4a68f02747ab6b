package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Event is one domain event: EventBridge's Source and DetailType, and the
// envelope that goes in Detail.
type Event struct {
	ID             string `json:"id"`
	Source         string `json:"source"`
	DetailType     string `json:"detailType"`
	Version        int    `json:"version"`
	OccurredAt     string `json:"occurredAt"`
	SequenceNumber string `json:"sequenceNumber"`
	// ChangedAt is the source change's approximate creation time, to the
	// microsecond where the source gives it (a Kinesis data stream for
	// DynamoDB does): what orders one item's events on a source that may
	// deliver them out of order (ChangedAtLayout).
	ChangedAt string `json:"changedAt"`
	Data      any    `json:"data"`
}

// ChangedAtLayout is ChangedAt's layout: UTC, microseconds.
const ChangedAtLayout = "2006-01-02T15:04:05.000000Z"

// Detail is the JSON that goes in a PutEvents entry's Detail: the envelope
// without Source and DetailType (EventBridge carries those itself).
func (e Event) Detail() ([]byte, error) {
	return json.Marshal(struct {
		ID             string `json:"id"`
		OccurredAt     string `json:"occurredAt"`
		Version        int    `json:"version"`
		SequenceNumber string `json:"sequenceNumber"`
		ChangedAt      string `json:"changedAt"`
		Data           any    `json:"data"`
	}{e.ID, e.OccurredAt, e.Version, e.SequenceNumber, e.ChangedAt, e.Data})
}

// Kind of change, as the stream says.
type Kind string

// Kinds.
const (
	Insert    Kind = "INSERT"
	Modify    Kind = "MODIFY"
	Remove    Kind = "REMOVE"
	TTLRemove Kind = "TTL_REMOVE"
)

// Change is what Map needs of a stream record: plain Go values only.
type Change struct {
	EventID        string
	SequenceNumber string
	Kind           Kind
	// At is the record's approximate creation time (the fallback for
	// occurredAt when the item carries no timestamp of its own).
	At       time.Time
	ItemType string
	Derived  bool
	// Old and New are the images as plain values (nil when absent).
	Old, New map[string]any
}

// AttrRebuild is the attribute `projector rebuild` sets, to its run's id,
// on every item it writes (unless asked to announce its repairs).
const AttrRebuild = "rebuiltBy"

// Rebuilt reports whether the change was written by a rebuild: its new
// image carries a rebuild run id its old image did not. Later changes of
// the same item keep the attribute as it was, so they are news again.
func Rebuilt(c Change) bool {
	id, ok := c.New[AttrRebuild].(string)
	if !ok || id == "" {
		return false
	}
	old, _ := c.Old[AttrRebuild].(string)
	return id != old
}

// mapper turns one item type's change into event data, in order.
type mapper func(c Change) ([]any, error)

// mappers is the one place that says what each item type's changes mean.
// An item type listed with a nil mapper means nothing outside (lookups,
// mirrors, idempotency records, derived items other than snapshots); a core
// type missing here fails TestEveryCoreTypeIsMapped.
var mappers = map[string]mapper{}

// register adds an item type's mapper (nil: no events) at init.
func register(itemType string, m mapper) { mappers[itemType] = m }

// Mapped reports whether an item type has an entry (with or without events).
func Mapped(itemType string) bool { _, ok := mappers[itemType]; return ok }

// Announced returns, sorted, the item types whose changes can mean events
// (those with a mapper): a record of any other type maps to none.
func Announced() []string {
	var out []string
	for it, m := range mappers {
		if m != nil {
			out = append(out, it)
		}
	}
	slices.Sort(out)
	return out
}

// Map returns the events a change means, in order. IDs are the record's
// eventID plus the event's index, so a redelivered record yields the same
// IDs and consumers can dedupe.
//
// A change written by `projector rebuild` (Rebuilt) means none: a repair is
// not news.
func Map(c Change) ([]Event, error) {
	m := mappers[c.ItemType]
	if m == nil || Rebuilt(c) {
		return nil, nil
	}
	datas, err := m(c)
	if err != nil {
		return nil, fmt.Errorf("events: %s %s %s: %w", c.ItemType, c.Kind, c.EventID, err)
	}
	out := make([]Event, 0, len(datas))
	for i, d := range datas {
		tn := typeName(d)
		def, ok := byType[tn]
		if !ok {
			return nil, fmt.Errorf("events: %T is not in the catalogue", d)
		}
		if missing := missingIDs(d, idFields[tn]); len(missing) > 0 {
			// An item written by someone else, or a record cut short: an
			// event about nobody is worse than none.
			return nil, fmt.Errorf("events: %s %s %s: %s without %s", c.ItemType, c.Kind, c.EventID, def.Name, strings.Join(missing, ", "))
		}
		out = append(out, Event{
			ID: fmt.Sprintf("%s-%d", c.EventID, i), Source: def.Source, DetailType: def.Name, Version: def.Version,
			OccurredAt: occurredAt(d, c), SequenceNumber: c.SequenceNumber, ChangedAt: c.At.UTC().Format(ChangedAtLayout), Data: d,
		})
	}
	return out, nil
}

// occurrence is implemented by data that knows when it happened.
type occurrence interface{ occurred() string }

func occurredAt(d any, c Change) string {
	if o, ok := d.(occurrence); ok && o.occurred() != "" {
		return o.occurred()
	}
	return c.At.UTC().Format(timeLayout)
}

// timeLayout is the store's timestamp layout (UTC, milliseconds).
const timeLayout = "2006-01-02T15:04:05.000Z"

// decode copies a plain image into typed data (through JSON: the images'
// attribute names are the data's JSON names).
func decode(img map[string]any, v any) error {
	b, err := json.Marshal(img)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// one decodes the image into a new T and returns it as the only event.
func one[T any](img map[string]any) ([]any, error) {
	var v T
	if err := decode(img, &v); err != nil {
		return nil, err
	}
	return []any{v}, nil
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// missingIDs names the identifiers (ids, from the catalogue) that d, a
// value of their struct type, has empty.
func missingIDs(d any, ids []idField) []string {
	var out []string
	v := reflect.ValueOf(d)
	for _, f := range ids {
		if v.Field(f.index).String() == "" {
			out = append(out, f.name)
		}
	}
	return out
}
