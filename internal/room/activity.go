package room

import "time"

// Activity types (docs/design.md §3).
const (
	ActivityRoomCreated          = "RoomCreated"
	ActivityMemberJoined         = "MemberJoined"
	ActivityMemberLeft           = "MemberLeft"
	ActivityListingPinned        = "ListingPinned"
	ActivityListingStatusChanged = "ListingStatusChanged"
	ActivityCriteriaUpdated      = "CriteriaUpdated"
	ActivityCompatibilityUpdated = "CompatibilityUpdated"
	ActivityChatMessage          = "ChatMessage"
)

// Sender types.
const (
	SenderUser      = "user"
	SenderAICopilot = "ai_copilot"
	SenderSystem    = "system"
)

// CopilotID is the sender id of the AI copilot's entries.
const CopilotID = "copilot"

// ActivityTTL is how long an activity entry lives.
const ActivityTTL = 90 * 24 * time.Hour

// Activity is one entry of a room's activity feed (derived).
type Activity struct {
	RoomID     string `json:"roomId" dynamodbav:"roomId"`
	ActivityID string `json:"activityId" dynamodbav:"activityId"`
	Type       string `json:"type" dynamodbav:"type"`
	CreatedAt  string `json:"createdAt" dynamodbav:"createdAt"`
	SenderType string `json:"senderType" dynamodbav:"senderType"`
	SenderID   string `json:"senderId" dynamodbav:"senderId"`
	// What the entry is about; which fields are set depends on Type.
	UserID       string `json:"userId,omitempty" dynamodbav:"userId,omitempty"`
	ListingID    string `json:"listingId,omitempty" dynamodbav:"listingId,omitempty"`
	Title        string `json:"title,omitempty" dynamodbav:"title,omitempty"`
	From         Status `json:"from,omitempty" dynamodbav:"from,omitempty"`
	To           Status `json:"to,omitempty" dynamodbav:"to,omitempty"`
	ScorePercent *int   `json:"scorePercent,omitempty" dynamodbav:"scorePercent,omitempty"`
	Level        string `json:"level,omitempty" dynamodbav:"level,omitempty"`
	// A ChatMessage's message and the start of its text.
	MessageID string `json:"messageId,omitempty" dynamodbav:"messageId,omitempty"`
	Excerpt   string `json:"excerpt,omitempty" dynamodbav:"excerpt,omitempty"`
	// TTL is the expiry in epoch seconds (CreatedAt + 90 days).
	TTL int64 `json:"expiresAt" dynamodbav:"ttl"`
}
