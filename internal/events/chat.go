package events

// Chat events (seed 002).

// SourceChat is the chat domain's source.
const SourceChat = "dynastream.chat"

// ChatMessagePosted: a user posted a message in a chat room.
type ChatMessagePosted struct {
	RoomID    string `json:"roomId"`
	MessageID string `json:"messageId"`
	UserID    string `json:"userId"`
	UserName  string `json:"userName"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

func (e ChatMessagePosted) occurred() string { return e.CreatedAt }

// ChatRoomCreated: a chat room was used for the first time.
type ChatRoomCreated struct {
	RoomID    string `json:"roomId"`
	Name      string `json:"name"`
	CreatedAt string `json:"createdAt"`
}

func (e ChatRoomCreated) occurred() string { return e.CreatedAt }

func init() {
	const at = "2026-01-02T15:04:05.000Z"
	for _, d := range []Definition{
		{Name: "ChatMessagePosted", Source: SourceChat, Doc: "A user posted a message in a chat room (its content as written: escape it where you render it).",
			Example: ChatMessagePosted{"global", "01K…", "an", "An", "xin chào", at}},
		{Name: "ChatRoomCreated", Source: SourceChat, Doc: "A chat room was used for the first time (a connection or a join named it).",
			Example: ChatRoomCreated{"global", "global", at}},
	} {
		define(d)
	}
	register("Message", func(c Change) ([]any, error) {
		if c.Kind != Insert {
			return nil, nil
		}
		return one[ChatMessagePosted](c.New)
	})
	register("ChatRoom", func(c Change) ([]any, error) {
		if _, sealed := c.New["sealedAt"]; c.Kind != Insert || sealed {
			// A deleted search room's chat sealed before anyone used it
			// was never a room anyone used (RoomDeleted says the rest).
			return nil, nil
		}
		return one[ChatRoomCreated](c.New)
	})
	register("Connection", nil)       // transport state: a client's open socket, not a domain fact
	register("ConnectionFrames", nil) // a connection's frame count: transport state
}
