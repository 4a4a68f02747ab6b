package room

// Search types of a room.
const (
	SearchBuy  = "buy"
	SearchRent = "rent"
)

// Member roles.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
)

// Criteria sources.
const (
	SourceManual     = "manual"
	SourceAIProposed = "ai_proposed"
)

// Room is a search room.
type Room struct {
	RoomID          string  `json:"roomId" dynamodbav:"roomId"`
	Name            string  `json:"name" dynamodbav:"name"`
	CreatedByUserID string  `json:"createdByUserId" dynamodbav:"createdByUserId"`
	CreatedAt       string  `json:"createdAt" dynamodbav:"createdAt"`
	SearchType      string  `json:"searchType" dynamodbav:"searchType"`
	Context         Context `json:"context" dynamodbav:"context"`
	// UpdatedAt and UpdatedByUserID record the last context change.
	UpdatedAt       string `json:"updatedAt,omitempty" dynamodbav:"updatedAt,omitempty"`
	UpdatedByUserID string `json:"updatedByUserId,omitempty" dynamodbav:"updatedByUserId,omitempty"`
}

// Context is a room's optional context.
type Context struct {
	Description string `json:"description,omitempty" dynamodbav:"description,omitempty"`
	FamilySize  *int   `json:"familySize,omitempty" dynamodbav:"familySize,omitempty"`
	CombineMode Mode   `json:"combineMode" dynamodbav:"combineMode"`
}

// Member is one user's membership of a room (stored twice: Member and UserRoom).
type Member struct {
	RoomID   string `json:"roomId" dynamodbav:"roomId"`
	UserID   string `json:"userId" dynamodbav:"userId"`
	Role     string `json:"role" dynamodbav:"role"`
	JoinedAt string `json:"joinedAt" dynamodbav:"joinedAt"`
}

// CriteriaVersion is one put of a member's criteria (append-only).
type CriteriaVersion struct {
	RoomID    string   `json:"roomId" dynamodbav:"roomId"`
	UserID    string   `json:"userId" dynamodbav:"userId"`
	Timestamp string   `json:"timestamp" dynamodbav:"timestamp"`
	Criteria  Criteria `json:"criteria" dynamodbav:"criteria"`
	Weights   Weights  `json:"weights" dynamodbav:"weights"`
	Source    string   `json:"source" dynamodbav:"source"`
}

// CombinedVersion is a stored combined-criteria snapshot.
type CombinedVersion struct {
	RoomID    string `json:"roomId" dynamodbav:"roomId"`
	Timestamp string `json:"timestamp" dynamodbav:"timestamp"`
	Combined
}

// CompatibilityVersion is a stored compatibility snapshot.
type CompatibilityVersion struct {
	RoomID    string `json:"roomId" dynamodbav:"roomId"`
	Timestamp string `json:"timestamp" dynamodbav:"timestamp"`
	Compatibility
}

// StoredCriteria is a criteria version with the sort key it is stored under
// (compatibility snapshots cite it in criteriaRefs).
type StoredCriteria struct {
	SK string
	CriteriaVersion
}

// State is what a derivation reads of a room: the room, its current members
// and every criteria version, in SK order.
type State struct {
	Room     Room
	Exists   bool
	Members  []Member
	Criteria []StoredCriteria
}
