package room

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Status is a listing's status in the room's search.
type Status string

// The listing statuses. A listing starts UNSEEN.
const (
	StatusUnseen       Status = "UNSEEN"
	StatusSeen         Status = "SEEN"
	StatusVisitPlanned Status = "VISIT_PLANNED"
	StatusVisited      Status = "VISITED"
	StatusShortlisted  Status = "SHORTLISTED"
	StatusRejected     Status = "REJECTED"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusUnseen, StatusSeen, StatusVisitPlanned, StatusVisited, StatusShortlisted, StatusRejected}

// transitions is the lifecycle: from a status, the statuses it may move to.
//
//	UNSEEN        → SEEN, VISIT_PLANNED, SHORTLISTED, REJECTED
//	SEEN          → VISIT_PLANNED, SHORTLISTED, REJECTED
//	VISIT_PLANNED → VISITED, SEEN (visit cancelled), REJECTED
//	VISITED       → SHORTLISTED, REJECTED, VISIT_PLANNED (second visit)
//	SHORTLISTED   → VISIT_PLANNED, REJECTED
//	REJECTED      → SEEN (reconsidered)
//
// Nothing goes back to UNSEEN: someone has seen it.
var transitions = map[Status][]Status{
	StatusUnseen:       {StatusSeen, StatusVisitPlanned, StatusShortlisted, StatusRejected},
	StatusSeen:         {StatusVisitPlanned, StatusShortlisted, StatusRejected},
	StatusVisitPlanned: {StatusVisited, StatusSeen, StatusRejected},
	StatusVisited:      {StatusShortlisted, StatusRejected, StatusVisitPlanned},
	StatusShortlisted:  {StatusVisitPlanned, StatusRejected},
	StatusRejected:     {StatusSeen},
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { _, ok := transitions[s]; return ok }

// Next lists the statuses s may move to.
func (s Status) Next() []Status { return slices.Clone(transitions[s]) }

// CanMove checks a transition; the error says why it is not allowed.
func CanMove(from, to Status) error {
	if from == to {
		return fmt.Errorf("listing is already %s", to)
	}
	if slices.Contains(transitions[from], to) {
		return nil
	}
	next := make([]string, len(transitions[from]))
	for i, s := range transitions[from] {
		next[i] = string(s)
	}
	return fmt.Errorf("a listing cannot go from %s to %s (from %s it can go to %s)", from, to, from, strings.Join(next, ", "))
}

// Listing is a property listing pinned to a room.
type Listing struct {
	ListingID     string   `json:"listingId" dynamodbav:"listingId"`
	RoomID        string   `json:"roomId" dynamodbav:"roomId"`
	SourceBrand   string   `json:"sourceBrand" dynamodbav:"sourceBrand"`
	ExternalID    string   `json:"externalId,omitempty" dynamodbav:"externalId,omitempty"`
	Title         string   `json:"title" dynamodbav:"title"`
	Location      string   `json:"location" dynamodbav:"location"`
	URL           string   `json:"url,omitempty" dynamodbav:"url,omitempty"`
	Price         *float64 `json:"price,omitempty" dynamodbav:"price,omitempty"`
	Rooms         *float64 `json:"rooms,omitempty" dynamodbav:"rooms,omitempty"`
	Area          *float64 `json:"area,omitempty" dynamodbav:"area,omitempty"`
	Status        Status   `json:"status" dynamodbav:"status"`
	SeenBy        []string `json:"seenBy" dynamodbav:"seenBy,stringset,omitempty"`
	AddedAt       string   `json:"addedAt" dynamodbav:"addedAt"`
	AddedByUserID string   `json:"addedByUserId" dynamodbav:"addedByUserId"`
	UpdatedAt     string   `json:"updatedAt" dynamodbav:"updatedAt"`
	// UpdatedByUserID is who made the last change (the activity feed's sender).
	UpdatedByUserID string `json:"updatedByUserId" dynamodbav:"updatedByUserId"`
}

// MarshalJSON writes seenBy as a sorted list, even when nobody has seen
// the listing: the table keeps it as a string set, which has no order and
// cannot be empty (it reads back as nil).
func (l Listing) MarshalJSON() ([]byte, error) {
	type plain Listing
	l.SeenBy = slices.Sorted(slices.Values(l.SeenBy))
	if l.SeenBy == nil {
		l.SeenBy = []string{}
	}
	return json.Marshal(plain(l))
}
