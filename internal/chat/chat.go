package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/text"
)

// DefaultRoom is the room a connection joins when it names none.
const DefaultRoom = "global"

// ConnectionTTL is how long a connection item lives: API Gateway closes a
// WebSocket connection after two hours, and a client that vanished
// without a $disconnect leaves its item to expire.
const ConnectionTTL = 2 * time.Hour

// MaxContent is the longest message, in characters.
const MaxContent = 2000

// Connection is one open WebSocket connection and the room it is in.
type Connection struct {
	ConnectionID string `json:"connectionId" dynamodbav:"connectionId"`
	UserID       string `json:"userId" dynamodbav:"userId"`
	UserName     string `json:"userName" dynamodbav:"userName"`
	RoomID       string `json:"roomId" dynamodbav:"roomId"`
	ConnectedAt  string `json:"connectedAt" dynamodbav:"connectedAt"`
	TTL          int64  `json:"-" dynamodbav:"ttl"`
	// SearchRoom says the room is a search room's chat: each message its
	// user sends checks that they are still a member.
	SearchRoom bool `json:"-" dynamodbav:"searchRoom,omitempty"`
}

// Room is a chat room. A room whose id is a search room's id is that
// room's chat, for its members only.
type Room struct {
	RoomID    string `json:"roomId" dynamodbav:"roomId"`
	Name      string `json:"name" dynamodbav:"name"`
	CreatedAt string `json:"createdAt" dynamodbav:"createdAt"`
	// SealedAt is when the search room whose chat this is was deleted:
	// the room is closed to everyone from then on ("": open).
	SealedAt string `json:"-" dynamodbav:"sealedAt,omitempty"`
}

// Message is one chat message, stored as its author wrote it (escaping
// belongs to whoever renders it).
type Message struct {
	RoomID    string `json:"roomId" dynamodbav:"roomId"`
	MessageID string `json:"messageId" dynamodbav:"messageId"`
	UserID    string `json:"userId" dynamodbav:"userId"`
	UserName  string `json:"userName" dynamodbav:"userName"`
	Content   string `json:"content" dynamodbav:"content"`
	CreatedAt string `json:"createdAt" dynamodbav:"createdAt"`
	// SearchRoom says the room is a search room's chat: the projector adds
	// the message to that room's activity feed.
	SearchRoom bool `json:"-" dynamodbav:"searchRoom,omitempty"`
}

// ExcerptLength is the longest excerpt of a message a feed entry shows.
const ExcerptLength = 140

// Excerpt is the start of a message's content, at most ExcerptLength
// characters (an ellipsis ends a cut one).
func Excerpt(content string) string {
	r := []rune(content)
	if len(r) <= ExcerptLength {
		return content
	}
	return string(r[:ExcerptLength-1]) + "…"
}

var roomIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// RoomIDRule describes a valid room id, for errors.
const RoomIDRule = "1-128 characters: letters, digits and . _ : - (not starting with a symbol)"

// ValidRoomID reports whether id can name a room (and sit in a key).
func ValidRoomID(id string) bool { return roomIDPattern.MatchString(id) }

// CheckContent says why a message's content cannot be stored (nil: it
// can): it must be valid UTF-8, hold something other than white space, be
// at most MaxContent characters, and have no control characters but line
// feeds and tabs.
func CheckContent(s string) error {
	switch {
	case !utf8.ValidString(s):
		return errs.Field("content", "must be valid UTF-8")
	case text.Blank(s):
		return errs.Field("content", "must not be empty")
	case utf8.RuneCountInString(s) > MaxContent:
		return errs.Field("content", fmt.Sprintf("must be at most %d characters", MaxContent))
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return errs.Field("content", fmt.Sprintf("must not contain control characters (found U+%04X)", r))
		}
	}
	return nil
}

// Actions a client sends (API Gateway's route selection expression is
// $request.body.action).
const (
	ActionSendMessage = "sendMessage"
	ActionJoinRoom    = "joinRoom"
)

// Inbound is a frame from a client.
type Inbound struct {
	Action  string `json:"action"`
	Content string `json:"content,omitempty"`
	RoomID  string `json:"roomId,omitempty"`
	// ClientMessageID, optional, names a message as an Idempotency-Key
	// names a request: a sendMessage sent again with it (the client did not
	// hear whether the first arrived) stores nothing and answers the first
	// message's sent frame; kept a day.
	ClientMessageID string `json:"clientMessageId,omitempty"`
}

// ClientMessageIDRule describes a valid client message id.
const ClientMessageIDRule = "1-64 visible ASCII characters (a UUID, say)"

// ValidClientMessageID reports whether id can name a message.
func ValidClientMessageID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= 0x20 || id[i] >= 0x7f {
			return false
		}
	}
	return true
}

// ParseInbound reads a client's frame. A frame that is not valid UTF-8 is
// refused as a whole (JSON decoding would replace the bad bytes silently).
func ParseInbound(b []byte) (Inbound, error) {
	var in Inbound
	if !utf8.Valid(b) {
		return in, errs.Field("frame", "must be valid UTF-8")
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, errs.Field("action", "the frame must be a JSON object with an action")
	}
	return in, nil
}

// Frame types sent to clients.
const (
	FrameMessage = "message" // a message of the room (broadcast)
	FrameSent    = "sent"    // the sender's own message was stored
	FrameJoined  = "joined"  // the connection moved to a room
	FrameError   = "error"   // the last frame was refused
)

// Outbound is a frame to a client. A message frame may come twice (the
// broadcast is at least once): a client drops a messageId it has seen.
type Outbound struct {
	Type    string   `json:"type"`
	Message *Message `json:"message,omitempty"`
	RoomID  string   `json:"roomId,omitempty"`
	// For errors: the action refused, the field at fault and why.
	Action string `json:"action,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Encode returns the frame's JSON.
func (o Outbound) Encode() []byte {
	b, _ := json.Marshal(o) // plain strings and structs: cannot fail
	return b
}

// ErrorFrame is the frame that tells a client why its action was refused:
// the field and reason of a validation error, the message of another
// refusal, and nothing of an internal error's detail.
//
// It names the action only when it is one of the actions (sendMessage,
// joinRoom): a frame's unknown action, of any length, is never echoed.
func ErrorFrame(action string, err error) Outbound {
	if action != ActionSendMessage && action != ActionJoinRoom {
		action = ""
	}
	o := Outbound{Type: FrameError, Action: action, Reason: "internal error; try again"}
	var e *errs.Error
	if errors.As(err, &e) && e.Code != errs.Internal && e.Code != errs.Unavailable {
		o.Reason = e.Message
		if len(e.Fields) > 0 {
			o.Field, o.Reason = e.Fields[0].Field, e.Fields[0].Reason
		}
	} else if errs.Is(err, errs.Unavailable) {
		o.Reason = "the service is busy; try again"
	}
	return o
}
