package events

import "slices"

// Search-room events (seed 000).

// RoomCreated: a room was created; its creator is its owner.
type RoomCreated struct {
	RoomID          string `json:"roomId"`
	Name            string `json:"name"`
	CreatedByUserID string `json:"createdByUserId"`
	SearchType      string `json:"searchType" doc:"buy or rent"`
	CombineMode     string `json:"combineMode" doc:"strict, all or mixed"`
	CreatedAt       string `json:"createdAt"`
}

func (e RoomCreated) occurred() string { return e.CreatedAt }

// RoomContextUpdated: the owner replaced the room's context.
type RoomContextUpdated struct {
	RoomID          string `json:"roomId"`
	CombineMode     string `json:"combineMode"`
	Description     string `json:"description,omitempty"`
	FamilySize      *int   `json:"familySize,omitempty"`
	UpdatedByUserID string `json:"updatedByUserId"`
	UpdatedAt       string `json:"updatedAt"`
}

func (e RoomContextUpdated) occurred() string { return e.UpdatedAt }

// RoomDeleted: the owner deleted the room (its items are deleted after).
type RoomDeleted struct {
	RoomID string `json:"roomId"`
}

// MemberJoined: a user became a member (the owner too, at creation).
type MemberJoined struct {
	RoomID   string `json:"roomId"`
	UserID   string `json:"userId"`
	Role     string `json:"role" doc:"owner or member"`
	JoinedAt string `json:"joinedAt"`
}

func (e MemberJoined) occurred() string { return e.JoinedAt }

// MemberLeft: a member left or was removed (or the room was deleted).
type MemberLeft struct {
	RoomID string `json:"roomId"`
	UserID string `json:"userId"`
}

// CriteriaUpdated: a member put a new version of their criteria.
type CriteriaUpdated struct {
	RoomID    string         `json:"roomId"`
	UserID    string         `json:"userId"`
	Timestamp string         `json:"timestamp"`
	Source    string         `json:"source" doc:"manual or ai_proposed"`
	Criteria  map[string]any `json:"criteria"`
	Weights   map[string]any `json:"weights,omitempty"`
}

func (e CriteriaUpdated) occurred() string { return e.Timestamp }

// ListingPinned: a listing was added to a room (status UNSEEN).
type ListingPinned struct {
	RoomID        string `json:"roomId"`
	ListingID     string `json:"listingId"`
	SourceBrand   string `json:"sourceBrand"`
	ExternalID    string `json:"externalId,omitempty"`
	Title         string `json:"title"`
	Location      string `json:"location"`
	AddedByUserID string `json:"addedByUserId"`
	AddedAt       string `json:"addedAt"`
}

func (e ListingPinned) occurred() string { return e.AddedAt }

// ListingStatusChanged: a listing moved along its lifecycle.
type ListingStatusChanged struct {
	RoomID          string `json:"roomId"`
	ListingID       string `json:"listingId"`
	From            string `json:"from"`
	To              string `json:"to"`
	ChangedByUserID string `json:"changedByUserId"`
	ChangedAt       string `json:"changedAt"`
}

func (e ListingStatusChanged) occurred() string { return e.ChangedAt }

// ListingSeen: users were added to a listing's seenBy.
type ListingSeen struct {
	RoomID    string   `json:"roomId"`
	ListingID string   `json:"listingId"`
	UserIDs   []string `json:"userIds" doc:"who saw it now"`
	SeenAt    string   `json:"seenAt"`
}

func (e ListingSeen) occurred() string { return e.SeenAt }

// ListingRemoved: a listing was deleted (with its room).
type ListingRemoved struct {
	RoomID    string `json:"roomId"`
	ListingID string `json:"listingId"`
}

// CombinedCriteriaUpdated: the projector derived a room's combined criteria.
type CombinedCriteriaUpdated struct {
	RoomID      string         `json:"roomId"`
	Timestamp   string         `json:"timestamp" doc:"the source change's time: the snapshot is as of it"`
	CombineMode string         `json:"combineMode"`
	FromUserIDs []string       `json:"fromUserIds"`
	Criteria    map[string]any `json:"criteria"`
	Weights     map[string]any `json:"weights"`
	Conflicts   []string       `json:"conflicts"`
}

func (e CombinedCriteriaUpdated) occurred() string { return e.Timestamp }

// CompatibilityUpdated: the projector derived a room's compatibility.
type CompatibilityUpdated struct {
	RoomID       string   `json:"roomId"`
	Timestamp    string   `json:"timestamp"`
	ScorePercent int      `json:"scorePercent"`
	Level        string   `json:"level" doc:"low, medium, high or excellent"`
	Comment      string   `json:"comment"`
	CriteriaRefs []string `json:"criteriaRefs"`
}

func (e CompatibilityUpdated) occurred() string { return e.Timestamp }

func init() {
	const at = "2026-01-02T15:04:05.000Z"
	for _, d := range []Definition{
		{Name: "RoomCreated", Source: SourceRooms, Doc: "A room was created; its creator is its owner.",
			Example: RoomCreated{"01J…", "Flat in Zurich", "alice", "rent", "mixed", at}},
		{Name: "RoomContextUpdated", Source: SourceRooms, Doc: "The owner replaced the room's context (a new combineMode derives new snapshots).",
			Example: RoomContextUpdated{RoomID: "01J…", CombineMode: "strict", Description: "near the lake", UpdatedByUserID: "alice", UpdatedAt: at}},
		{Name: "RoomDeleted", Source: SourceRooms, Doc: "The owner deleted the room; its members leave and its items are deleted after it.",
			Example: RoomDeleted{"01J…"}},
		{Name: "MemberJoined", Source: SourceRooms, Doc: "A user became a member of a room (the owner too, when the room was created).",
			Example: MemberJoined{"01J…", "bob", "member", at}},
		{Name: "MemberLeft", Source: SourceRooms, Doc: "A member left, was removed, or the room was deleted.",
			Example: MemberLeft{"01J…", "bob"}},
		{Name: "CriteriaUpdated", Source: SourceRooms, Doc: "A member put a new version of their search criteria.",
			Example: CriteriaUpdated{"01J…", "bob", at, "manual", map[string]any{"locations": []any{"Zurich"}, "priceMax": 3000}, map[string]any{"price": 5}}},
		{Name: "ListingPinned", Source: SourceRooms, Doc: "A listing was added to a room, UNSEEN.",
			Example: ListingPinned{"01J…", "01K…", "homegate", "HG-4711", "3.5 rooms near the lake", "Zurich", "bob", at}},
		{Name: "ListingStatusChanged", Source: SourceRooms, Doc: "A listing moved along its lifecycle (from → to).",
			Example: ListingStatusChanged{"01J…", "01K…", "SEEN", "VISIT_PLANNED", "alice", at}},
		{Name: "ListingSeen", Source: SourceRooms, Doc: "Users were added to a listing's seenBy.",
			Example: ListingSeen{"01J…", "01K…", []string{"alice"}, at}},
		{Name: "ListingRemoved", Source: SourceRooms, Doc: "A listing was deleted, with its room.",
			Example: ListingRemoved{"01J…", "01K…"}},
		{Name: "CombinedCriteriaUpdated", Source: SourceRooms, Doc: "The projector derived the room's combined criteria (docs/design.md §3) as of a source change.",
			Example: CombinedCriteriaUpdated{"01J…", at, "strict", []string{"alice", "bob"}, map[string]any{"locations": []any{"Zurich"}}, map[string]any{"locations": 1}, []string{}}},
		{Name: "CompatibilityUpdated", Source: SourceRooms, Doc: "The projector derived the room's compatibility snapshot as of a source change.",
			Example: CompatibilityUpdated{"01J…", at, 50, "medium", "Strongest agreement on price (67%); largest disagreement on features (0%).", []string{"CRITERIA#alice#" + at}}},
	} {
		define(d)
	}
	register("Room", roomEvents)
	register("Member", memberEvents)
	register("UserRoom", nil) // mirrors Member: MemberJoined/MemberLeft say it
	register("Criteria", criteriaEvents)
	register("Listing", listingEvents)
	register("ListingSourceLookup", nil) // internal to the uniqueness rule
	register("CombinedCriteria", func(c Change) ([]any, error) {
		if c.Kind != Insert {
			return nil, nil // a replay's rewrite or a cascade's delete is no news
		}
		return one[CombinedCriteriaUpdated](c.New)
	})
	register("Compatibility", func(c Change) ([]any, error) {
		if c.Kind != Insert {
			return nil, nil
		}
		return one[CompatibilityUpdated](c.New)
	})
	register("Activity", nil) // the feed is derived from the events above
}

func roomEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		var r struct {
			RoomCreated
			Context struct {
				CombineMode string `json:"combineMode"`
			} `json:"context"`
		}
		if err := decode(c.New, &r); err != nil {
			return nil, err
		}
		r.RoomCreated.CombineMode = r.Context.CombineMode
		return []any{r.RoomCreated}, nil
	case Modify:
		var r struct {
			RoomID          string `json:"roomId"`
			UpdatedByUserID string `json:"updatedByUserId"`
			UpdatedAt       string `json:"updatedAt"`
			Context         struct {
				CombineMode string `json:"combineMode"`
				Description string `json:"description"`
				FamilySize  *int   `json:"familySize"`
			} `json:"context"`
		}
		if err := decode(c.New, &r); err != nil {
			return nil, err
		}
		return []any{RoomContextUpdated{r.RoomID, r.Context.CombineMode, r.Context.Description, r.Context.FamilySize, r.UpdatedByUserID, r.UpdatedAt}}, nil
	default:
		return []any{RoomDeleted{RoomID: str(c.Old, "roomId")}}, nil
	}
}

func memberEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		return one[MemberJoined](c.New)
	case Remove, TTLRemove:
		return one[MemberLeft](c.Old)
	}
	return nil, nil
}

func criteriaEvents(c Change) ([]any, error) {
	if c.Kind != Insert {
		return nil, nil // versions are append-only; removals come with the room
	}
	return one[CriteriaUpdated](c.New)
}

func listingEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		return one[ListingPinned](c.New)
	case Remove, TTLRemove:
		return one[ListingRemoved](c.Old)
	}
	var old, cur struct {
		RoomID          string   `json:"roomId"`
		ListingID       string   `json:"listingId"`
		Status          string   `json:"status"`
		SeenBy          []string `json:"seenBy"`
		UpdatedAt       string   `json:"updatedAt"`
		UpdatedByUserID string   `json:"updatedByUserId"`
	}
	if err := decode(c.Old, &old); err != nil {
		return nil, err
	}
	if err := decode(c.New, &cur); err != nil {
		return nil, err
	}
	var out []any
	if old.Status != cur.Status {
		out = append(out, ListingStatusChanged{cur.RoomID, cur.ListingID, old.Status, cur.Status, cur.UpdatedByUserID, cur.UpdatedAt})
	}
	var seen []string
	for _, u := range cur.SeenBy {
		if !slices.Contains(old.SeenBy, u) {
			seen = append(seen, u)
		}
	}
	if len(seen) > 0 {
		seenAt := cur.UpdatedAt
		if old.UpdatedAt == cur.UpdatedAt { // seen without a status change
			seenAt = c.At.UTC().Format(timeLayout)
		}
		out = append(out, ListingSeen{cur.RoomID, cur.ListingID, seen, seenAt})
	}
	return out, nil // a backfill of index attributes changes nothing outside
}
