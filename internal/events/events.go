// Package events maps stream changes to domain events: the public contract
// other services consume (through EventBridge in AWS, the outbox locally).
//
// Map is pure. An event's ID is derived from the stream record's eventID
// (plus an index when one change means several events), so a redelivered
// record yields the same IDs and consumers can dedupe; SequenceNumber lets
// them order events of one item.
//
// This is the walking skeleton's mapping: one event per core change of a
// catalogued item type, named <ItemType><Created|Updated|Deleted> except
// where a domain name exists (MemberJoined, MemberLeft, CriteriaUpdated,
// CombinedCriteriaUpdated, CompatibilityUpdated); item types outside the
// catalogue mean no event. The typed, versioned catalogue comes later.
package events

import (
	"fmt"
	"time"
)

// Version is the envelope/schema version of every event here.
const Version = 1

// Source of the search-room domain's events.
const SourceRooms = "dynastream.rooms"

// SourceCollaboration is the source of the collaboration domain's events.
const SourceCollaboration = "dynastream.collaboration"

var collaborationTypes = map[string]bool{"Resource": true, "CollaborationInvite": true, "Collaborator": true, "Comment": true, "Reaction": true, "NotificationPreference": true}

func sourceOf(itemType string) string {
	if collaborationTypes[itemType] {
		return SourceCollaboration
	}
	return SourceRooms
}

// named gives the changes whose name depends on what changed: an invite
// answered or expired, a comment edited or deleted.
func named(c Change) string {
	switch {
	case c.ItemType == "CollaborationInvite" && c.Kind == Modify:
		switch c.Image["status"] {
		case "accepted":
			return "InviteAccepted"
		case "declined":
			return "InviteDeclined"
		}
	case c.ItemType == "CollaborationInvite" && c.Kind == TTLRemove:
		if c.Image["status"] == "pending" {
			return "InviteExpired" // DynamoDB's TTL removed a pending invite
		}
	case c.ItemType == "Comment" && c.Kind == Modify:
		if d, _ := c.Image["deletedAt"].(string); d != "" {
			return "CommentDeleted"
		}
		return "CommentEdited"
	}
	return ""
}

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

// catalogue maps each item type that means something outside, and each kind
// of change to it, to a domain event name. Item types and kinds that are not
// listed mean no event: unknown items, UserRoom (the mirror of Member), and
// changes to the derived snapshots other than a new one.
var catalogue = map[string]map[Kind]string{
	"Room":                   {Insert: "RoomCreated", Modify: "RoomUpdated", Remove: "RoomDeleted", TTLRemove: "RoomDeleted"},
	"Member":                 {Insert: "MemberJoined", Modify: "MemberUpdated", Remove: "MemberLeft", TTLRemove: "MemberLeft"},
	"Criteria":               {Insert: "CriteriaUpdated", Modify: "CriteriaUpdated", Remove: "CriteriaDeleted", TTLRemove: "CriteriaDeleted"},
	"Listing":                {Insert: "ListingPinned", Modify: "ListingUpdated", Remove: "ListingDeleted", TTLRemove: "ListingDeleted"},
	"Resource":               {Insert: "ResourceCreated", Modify: "ResourceUpdated", Remove: "ResourceDeleted"},
	"CollaborationInvite":    {Insert: "InviteCreated", Remove: "InviteDeleted"}, // MODIFY and TTL removal: see named
	"Collaborator":           {Insert: "CollaboratorAdded", Remove: "CollaboratorRemoved"},
	"Comment":                {Insert: "CommentCreated"}, // MODIFY: see named
	"Reaction":               {Insert: "ReactionAdded", Remove: "ReactionRemoved"},
	"NotificationPreference": {Insert: "NotificationPreferencesUpdated", Modify: "NotificationPreferencesUpdated"},
	"CombinedCriteria":       {Insert: "CombinedCriteriaUpdated"},
	"Compatibility":          {Insert: "CompatibilityUpdated"},
}

// derivedEvents are the derived item types that are events too.
var derivedEvents = map[string]bool{"CombinedCriteria": true, "Compatibility": true}

// Map returns the events a change means (none for changes that mean nothing
// outside: unknown items, derived items other than the two snapshot types).
func Map(c Change) []Event {
	if c.Derived && !derivedEvents[c.ItemType] {
		return nil
	}
	name := catalogue[c.ItemType][c.Kind]
	if name == "" {
		name = named(c)
	}
	if name == "" {
		return nil
	}
	return []Event{{
		ID:             fmt.Sprintf("%s-0", c.EventID),
		Source:         sourceOf(c.ItemType),
		DetailType:     name,
		Version:        Version,
		OccurredAt:     c.At.UTC().Format(time.RFC3339),
		SequenceNumber: c.SequenceNumber,
		Data:           c.Image,
	}}
}
