package collab

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dynastream/dynastream/internal/text"
)

// ResourceType is what can be collaborated on.
type ResourceType string

// The resource types.
const (
	Goal  ResourceType = "goal"
	Quest ResourceType = "quest"
	Task  ResourceType = "task"
)

// ResourceTypes lists them.
var ResourceTypes = []ResourceType{Goal, Quest, Task}

// Valid reports whether t is a known type.
func (t ResourceType) Valid() bool { return slices.Contains(ResourceTypes, t) }

// Key is the type's form in keys: RESOURCE#GOAL#<id>.
func (t ResourceType) Key() string { return strings.ToUpper(string(t)) }

// InviteLimits bound the invites one user sends, and one resource gets,
// in a fixed window of time, so that invites (which e-mail any address)
// cannot relay spam. Past a limit, creating an invite is refused until the
// window ends.
type InviteLimits struct {
	PerUser, PerResource int
	Window               time.Duration
}

// DefaultInviteLimits: 20 invites per user and 10 per resource an hour.
var DefaultInviteLimits = InviteLimits{PerUser: 20, PerResource: 10, Window: time.Hour}

// Resource is a goal, quest or task (minimal: a title and an owner).
type Resource struct {
	ResourceType ResourceType `json:"resourceType" dynamodbav:"resourceType"`
	ResourceID   string       `json:"resourceId" dynamodbav:"resourceId"`
	Title        string       `json:"title" dynamodbav:"title"`
	OwnerID      string       `json:"ownerId" dynamodbav:"ownerId"`
	CreatedAt    string       `json:"createdAt" dynamodbav:"createdAt"`
}

// Invite statuses.
const (
	InvitePending  = "pending"
	InviteAccepted = "accepted"
	InviteDeclined = "declined"
	// InviteExpired is never stored: a pending invite past expiresAt reads
	// as expired, and DynamoDB's TTL removes it.
	InviteExpired = "expired"
)

// Invite is an invitation to collaborate on a resource.
type Invite struct {
	InviteID     string       `json:"inviteId" dynamodbav:"inviteId"`
	InviterID    string       `json:"inviterId" dynamodbav:"inviterId"`
	InviteeID    string       `json:"inviteeId,omitempty" dynamodbav:"inviteeId,omitempty"`
	InviteeEmail string       `json:"inviteeEmail,omitempty" dynamodbav:"inviteeEmail,omitempty"`
	ResourceType ResourceType `json:"resourceType" dynamodbav:"resourceType"`
	ResourceID   string       `json:"resourceId" dynamodbav:"resourceId"`
	Status       string       `json:"status" dynamodbav:"status"`
	Message      string       `json:"message,omitempty" dynamodbav:"message,omitempty"`
	ExpiresAt    string       `json:"expiresAt" dynamodbav:"expiresAt"`
	CreatedAt    string       `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt    string       `json:"updatedAt" dynamodbav:"updatedAt"`
	TTL          int64        `json:"-" dynamodbav:"ttl"`
}

// EffectiveStatus is the status a reader sees at now (a timestamp in the
// store's layout): a pending invite past its expiry is expired.
func (i Invite) EffectiveStatus(now string) string {
	if i.Status == InvitePending && i.ExpiresAt <= now {
		return InviteExpired
	}
	return i.Status
}

// CanRespond says why an invite cannot be accepted or declined at now.
func (i Invite) CanRespond(now string) error {
	switch st := i.EffectiveStatus(now); st {
	case InvitePending:
		return nil
	case InviteExpired:
		return fmt.Errorf("the invite expired at %s", i.ExpiresAt)
	default:
		return fmt.Errorf("the invite was already %s", st)
	}
}

// Collaborator is a user who accepted an invite.
type Collaborator struct {
	UserID       string       `json:"userId" dynamodbav:"userId"`
	ResourceType ResourceType `json:"resourceType" dynamodbav:"resourceType"`
	ResourceID   string       `json:"resourceId" dynamodbav:"resourceId"`
	Role         string       `json:"role" dynamodbav:"role"`
	JoinedAt     string       `json:"joinedAt" dynamodbav:"joinedAt"`
	InviteID     string       `json:"inviteId,omitempty" dynamodbav:"inviteId,omitempty"`
}

// The roles on a resource: its owner's, and the one collaborator role.
const (
	RoleOwner        = "owner"
	RoleCollaborator = "collaborator"
)

// MaxCommentLength bounds a comment's text, in characters.
const MaxCommentLength = 2000

// Edit is a previous version of a comment's text.
type Edit struct {
	Text     string `json:"text" dynamodbav:"text"`
	EditedAt string `json:"editedAt" dynamodbav:"editedAt"`
}

// Comment is a comment on a resource, or a reply to one (ParentID).
type Comment struct {
	CommentID    string       `json:"commentId" dynamodbav:"commentId"`
	ResourceType ResourceType `json:"resourceType" dynamodbav:"resourceType"`
	ResourceID   string       `json:"resourceId" dynamodbav:"resourceId"`
	ParentID     string       `json:"parentId,omitempty" dynamodbav:"parentId,omitempty"`
	UserID       string       `json:"userId" dynamodbav:"userId"`
	Text         string       `json:"text" dynamodbav:"text"`
	Mentions     []string     `json:"mentions" dynamodbav:"mentions,omitempty"`
	CreatedAt    string       `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt    string       `json:"updatedAt,omitempty" dynamodbav:"updatedAt,omitempty"`
	DeletedAt    string       `json:"deletedAt,omitempty" dynamodbav:"deletedAt,omitempty"`
	EditHistory  []Edit       `json:"editHistory,omitempty" dynamodbav:"editHistory,omitempty"`
	// Counts are the comment's reaction counts by emoji (derived).
	Counts map[string]int `json:"reactionCounts,omitempty" dynamodbav:"-"`
}

// Reaction is one user's emoji on a comment.
type Reaction struct {
	CommentID    string       `json:"commentId" dynamodbav:"commentId"`
	ResourceType ResourceType `json:"resourceType" dynamodbav:"resourceType"`
	ResourceID   string       `json:"resourceId" dynamodbav:"resourceId"`
	UserID       string       `json:"userId" dynamodbav:"userId"`
	Emoji        string       `json:"emoji" dynamodbav:"emoji"`
	CreatedAt    string       `json:"createdAt" dynamodbav:"createdAt"`
}

// Preferences are a user's notification preferences.
type Preferences struct {
	UserID          string `json:"userId" dynamodbav:"userId"`
	EmailOnInvite   bool   `json:"emailOnInvite" dynamodbav:"emailOnInvite"`
	EmailOnComment  bool   `json:"emailOnComment" dynamodbav:"emailOnComment"`
	EmailOnMention  bool   `json:"emailOnMention" dynamodbav:"emailOnMention"`
	EmailOnReaction bool   `json:"emailOnReaction" dynamodbav:"emailOnReaction"`
	UpdatedAt       string `json:"updatedAt,omitempty" dynamodbav:"updatedAt,omitempty"`
}

// DefaultPreferences apply when a user has stored none (docs/design.md §4):
// invite on, comment off, mention on, reaction off.
func DefaultPreferences(userID string) Preferences {
	return Preferences{UserID: userID, EmailOnInvite: true, EmailOnMention: true}
}

// Profile is the one user profile all domains share.
type Profile struct {
	UserID string `json:"userId" dynamodbav:"userId"`
	Name   string `json:"name" dynamodbav:"name"`
	Email  string `json:"email,omitempty" dynamodbav:"email,omitempty"`
	// Locale is a BCP 47 language tag (en, vi-VN), optional.
	Locale    string `json:"locale,omitempty" dynamodbav:"locale,omitempty"`
	UpdatedAt string `json:"updatedAt" dynamodbav:"updatedAt"`
	// CreatedAt is when the profile was first written (by a chat
	// connection or a PUT), kept by every later PUT.
	CreatedAt string `json:"createdAt,omitempty" dynamodbav:"createdAt,omitempty"`
}

// mentionPattern finds @user-id mentions: '@' not preceded by a word
// character (so e-mail addresses are not mentions), then a user id.
var mentionPattern = regexp.MustCompile(`(?:^|[^\w@])@([A-Za-z0-9][A-Za-z0-9._:+-]{0,127})`)

// Mentions returns the distinct user ids mentioned in text, in order of
// first mention, without self (the author) and trailing dots.
func Mentions(text, author string) []string {
	var out []string
	for _, m := range mentionPattern.FindAllStringSubmatch(text, -1) {
		id := strings.TrimRight(m[1], ".:")
		if id != "" && id != author && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// SanitizeText makes comment text safe to render as HTML: it escapes the
// HTML metacharacters (< > & ' "), so no tag — no <script> — survives, and
// drops control characters other than newline and tab. Stored text is
// therefore HTML-escaped: clients show it as HTML, or unescape it for a
// plain-text view.
func SanitizeText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
	return html.EscapeString(s)
}

// CheckText validates raw comment text: non-blank, valid UTF-8, at most
// MaxCommentLength characters (before escaping).
func CheckText(s string) error {
	switch {
	case !utf8.ValidString(s):
		return fmt.Errorf("must be valid UTF-8")
	case text.Blank(s):
		return fmt.Errorf("is required")
	case utf8.RuneCountInString(s) > MaxCommentLength:
		return fmt.Errorf("must be at most %d characters", MaxCommentLength)
	}
	return nil
}

// ValidEmoji reports whether s is one emoji (a short run of symbols: no
// letters, digits, spaces or '#', at most 8 code points, 32 bytes).
func ValidEmoji(s string) bool {
	if s == "" || len(s) > 32 || utf8.RuneCountInString(s) > 8 || !utf8.ValidString(s) {
		return false
	}
	symbol := false
	for _, r := range s {
		switch {
		case r == '#' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) || unicode.IsControl(r):
			return false
		case unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r):
			symbol = true
		}
	}
	return symbol
}

// Notification types (in-app).
const (
	NotifyInvite   = "invite"
	NotifyComment  = "comment"
	NotifyMention  = "mention"
	NotifyReaction = "reaction"
	// Cooking (seed 003): a recipe's author hears that it was cooked, rated,
	// or entered a week's top 10 (derived by the projector).
	NotifyRecipeCooked = "recipe-cooked"
	NotifyRecipeRated  = "recipe-rated"
	NotifyRecipeTop10  = "recipe-top10"
)

// ResourceRecipe is the resourceType of a cooking notification.
const ResourceRecipe ResourceType = "recipe"

// NotificationTTL is how long an in-app notification lives.
const NotificationTTL = 30 * 24 * time.Hour

// Notification is an in-app notification (derived by the notifier).
type Notification struct {
	UserID         string       `json:"userId" dynamodbav:"userId"`
	NotificationID string       `json:"notificationId" dynamodbav:"notificationId"`
	Type           string       `json:"type" dynamodbav:"type"`
	CreatedAt      string       `json:"createdAt" dynamodbav:"createdAt"`
	ActorID        string       `json:"actorId" dynamodbav:"actorId"`
	ResourceType   ResourceType `json:"resourceType" dynamodbav:"resourceType"`
	ResourceID     string       `json:"resourceId" dynamodbav:"resourceId"`
	InviteID       string       `json:"inviteId,omitempty" dynamodbav:"inviteId,omitempty"`
	CommentID      string       `json:"commentId,omitempty" dynamodbav:"commentId,omitempty"`
	Emoji          string       `json:"emoji,omitempty" dynamodbav:"emoji,omitempty"`
	Rating         int          `json:"rating,omitempty" dynamodbav:"rating,omitempty"`
	Week           string       `json:"week,omitempty" dynamodbav:"week,omitempty"`
	// Count, on a recipe-cooked notification, is how often the recipe was
	// cooked that day (UTC) by others than its author, and on a
	// recipe-rated one how often it was rated (a rating given or changed):
	// one notification per recipe, type and day, updated in place, dated
	// the day, with no actor.
	Count int   `json:"count,omitempty" dynamodbav:"count,omitempty"`
	TTL   int64 `json:"expiresAt" dynamodbav:"ttl"`
}

// MarshalJSON writes mentions as a list even when there are none (the table
// leaves the attribute out).
func (c Comment) MarshalJSON() ([]byte, error) {
	type plain Comment
	if c.Mentions == nil {
		c.Mentions = []string{}
	}
	return json.Marshal(plain(c))
}
