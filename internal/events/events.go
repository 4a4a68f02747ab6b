// Package events maps stream changes to domain events: the public contract
// other services consume (through EventBridge in AWS, the outbox locally).
//
// Map is pure. An event's ID is derived from the stream record's eventID
// (plus an index when one change means several events), so a redelivered
// record yields the same IDs and consumers can dedupe; SequenceNumber lets
// them order events of one item.
//
// This is the walking skeleton's mapping: one event per core change, named
// <ItemType><Created|Updated|Deleted> except where a domain name exists
// (MemberJoined, MemberLeft, CriteriaUpdated, CombinedCriteriaUpdated,
// CompatibilityUpdated). The typed, versioned catalogue comes later.
package events

import (
	"fmt"
	"time"
)

// Version is the envelope/schema version of every event here.
const Version = 1

// Source of the search-room domain's events.
const SourceRooms = "dynastream.rooms"

// Event is one domain event.
type Event struct {
	ID             string         `json:"id"`
	Source         string         `json:"source"`
	DetailType     string         `json:"detailType"`
	Version        int            `json:"version"`
	OccurredAt     string         `json:"occurredAt"`
	SequenceNumber string         `json:"sequenceNumber"`
	Data           map[string]any `json:"data"`
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
	At             time.Time
	ItemType       string
	Derived        bool
	// Image is the new image, or the old one for removals, as plain values
	// (keys and index attributes already removed).
	Image map[string]any
}

// named maps (itemType, kind) to a domain event name; absent pairs use the
// generic name; "" means no event.
var named = map[string]map[Kind]string{
	"Member":           {Insert: "MemberJoined", Remove: "MemberLeft", TTLRemove: "MemberLeft"},
	"UserRoom":         {Insert: "", Modify: "", Remove: "", TTLRemove: ""}, // mirror of Member
	"Criteria":         {Insert: "CriteriaUpdated"},
	"CombinedCriteria": {Insert: "CombinedCriteriaUpdated", Modify: ""},
	"Compatibility":    {Insert: "CompatibilityUpdated", Modify: ""},
}

// derivedEvents are the derived item types that are events too.
var derivedEvents = map[string]bool{"CombinedCriteria": true, "Compatibility": true}

// Map returns the events a change means (none for changes that mean nothing
// outside: unknown items, derived items other than the two snapshot types).
func Map(c Change) []Event {
	if c.ItemType == "" || (c.Derived && !derivedEvents[c.ItemType]) {
		return nil
	}
	name, ok := named[c.ItemType][c.Kind]
	if !ok {
		switch c.Kind {
		case Insert:
			name = c.ItemType + "Created"
		case Modify:
			name = c.ItemType + "Updated"
		default:
			name = c.ItemType + "Deleted"
		}
	}
	if name == "" {
		return nil
	}
	return []Event{{
		ID:             fmt.Sprintf("%s-0", c.EventID),
		Source:         SourceRooms,
		DetailType:     name,
		Version:        Version,
		OccurredAt:     c.At.UTC().Format(time.RFC3339),
		SequenceNumber: c.SequenceNumber,
		Data:           c.Image,
	}}
}
