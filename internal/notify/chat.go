package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/push"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Pusher sends a frame to a WebSocket connection, or closes one; a
// connection that is gone answers an error wrapping push.ErrGone
// (*push.Client is one).
type Pusher interface {
	Push(ctx context.Context, connectionID string, frame []byte) error
	Close(ctx context.Context, connectionID string) error
}

// Defaults of Chat.
const (
	// DefaultFanout is how many pushes of one message run at once.
	DefaultFanout = 64
	// DefaultGrace is how old a connection must be before a push that
	// finds it gone deletes it: API Gateway refuses pushes to a connection
	// whose $connect is still running, and that one is not stale.
	DefaultGrace = 30 * time.Second
)

// Chat broadcasts each new chat message to the connections of its room
// (seed 002): a PostToConnection per connection, read from the room's
// connection index a page at a time, Fanout at once. A push that finds its
// connection gone deletes the connection's item; any other failure fails
// the message's record, so the stream delivers it again and the whole
// room gets it again: delivery is at least once, and a client drops a
// messageId it has seen. Rooms are separate groups of the batch
// (stream.Keyed by partition key), so a big room's broadcast holds up no
// other room's.
//
// A search room's chat is for its members: its messages are pushed only to
// the connections of users who are members when the push begins (read
// once per broadcast), none once the room is deleted; and a member's
// removal or the room's deletion closes that member's, or everyone's,
// connections to the chat (DeleteConnection through the management API)
// and deletes their items.
type Chat struct {
	Store  *store.Store
	Pusher Pusher
	Now    func() time.Time
	Fanout int           // default DefaultFanout
	Grace  time.Duration // default DefaultGrace

	// Pushes since start: delivered, to connections found gone, failed;
	// withheld from connections of users who may not read the room;
	// connections closed because their user may no longer use the room.
	Pushed, Gone, Failed, Withheld, Closed atomic.Int64
}

// fanout and grace are Fanout and Grace with their defaults.
func (c *Chat) fanout() int {
	if c.Fanout <= 0 {
		return DefaultFanout
	}
	return c.Fanout
}

func (c *Chat) grace() time.Duration {
	if c.Grace <= 0 {
		return DefaultGrace
	}
	return c.Grace
}

// isMessage says whether a change is a new chat message (the only chat
// change that pushes).
func isMessage(c stream.Change) bool {
	return c.Kind == stream.Insert && c.ItemType() == store.TypeMessage && !c.Derived()
}

// message decodes a new message from its change.
func message(c stream.Change) (chat.Message, error) {
	var m chat.Message
	if err := c.DecodeNew(&m); err != nil {
		return m, fmt.Errorf("chat message: %w", err)
	}
	if m.RoomID == "" || m.MessageID == "" {
		return m, errors.New("chat message: no roomId or messageId")
	}
	return m, nil
}

// broadcast pushes a room's new messages, in stream order, to every live
// connection of the room: the connections are read once for them all, and
// each connection gets the messages one after another (its order kept)
// while Fanout connections are served at once, so no message waits for
// the slowest push of the one before. It returns how many messages, from
// the first, reached every connection (a gone connection counts as
// reached: it is deleted), and the error of the first that did not.
func (c *Chat) broadcast(ctx context.Context, msgs []chat.Message) (int, error) {
	now := c.Now()
	cutoff := store.Timestamp(now.Add(-c.grace()))
	// A search room's chat: only its current members' connections.
	var audience *store.ChatAudience
	if msgs[0].SearchRoom {
		a, err := c.Store.Chat.ChatAudience(ctx, msgs[0].RoomID)
		if err != nil {
			return 0, fmt.Errorf("broadcast to room %s: %w", msgs[0].RoomID, err)
		}
		audience = &a
	}
	frames := make([][]byte, len(msgs))
	for i := range msgs {
		frames[i] = chat.Outbound{Type: chat.FrameMessage, Message: &msgs[i]}.Encode()
	}
	var mu sync.Mutex
	done := len(msgs)
	var errs []error // of message done
	fail := func(at int, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case at < done:
			done, errs = at, []error{err}
		case at == done && len(errs) < 3: // enough to say why; the count is in Failed
			errs = append(errs, err)
		}
	}
	sem := make(chan struct{}, c.fanout())
	var wg sync.WaitGroup
	err := c.Store.Chat.EachRoomConnection(ctx, msgs[0].RoomID, now.Unix(), func(conn chat.Connection) error {
		if audience != nil && !audience.May(conn.UserID) {
			c.Withheld.Add(int64(len(frames)))
			return nil
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			for i, f := range frames {
				err := c.Pusher.Push(ctx, conn.ConnectionID, f)
				switch {
				case err == nil:
					c.Pushed.Add(1)
					continue
				case errors.Is(err, push.ErrGone):
					c.Gone.Add(1)
					if _, err := c.Store.Chat.DeleteGoneConnection(ctx, conn, cutoff); err != nil {
						fail(i, err)
					}
				default:
					c.Failed.Add(1)
					fail(i, err)
				}
				return // this connection's later messages wait for the retry
			}
		})
		return nil
	})
	wg.Wait()
	if err != nil {
		return 0, fmt.Errorf("broadcast to room %s: %w", msgs[0].RoomID, err)
	}
	if len(errs) > 0 {
		return done, fmt.Errorf("broadcast %s to room %s: %w", msgs[done].MessageID, msgs[done].RoomID, errors.Join(errs...))
	}
	return done, nil
}

// closure is a change that takes a search room's chat away from someone: a
// member's removal (UserID set) or the room's deletion (UserID "":
// everyone).
type closure struct{ RoomID, UserID string }

// closureOf says whether a change takes a search room's chat away from
// someone (a Member or Room item removed).
func closureOf(c stream.Change) (*closure, error) {
	if c.Derived() || (c.Kind != stream.Remove && c.Kind != stream.TTLRemove) {
		return nil, nil
	}
	var v struct {
		RoomID string `dynamodbav:"roomId"`
		UserID string `dynamodbav:"userId"`
	}
	switch c.ItemType() {
	case store.TypeMember:
		if err := c.DecodeOld(&v); err != nil {
			return nil, fmt.Errorf("removed member: %w", err)
		}
		if v.RoomID == "" || v.UserID == "" {
			return nil, errors.New("removed member: no roomId or userId")
		}
		return &closure{RoomID: v.RoomID, UserID: v.UserID}, nil
	case store.TypeRoom:
		if err := c.DecodeOld(&v); err != nil {
			return nil, fmt.Errorf("deleted room: %w", err)
		}
		if v.RoomID == "" {
			return nil, errors.New("deleted room: no roomId")
		}
		return &closure{RoomID: v.RoomID}, nil
	}
	return nil, nil
}

// close closes, through the management API, every connection to the
// room's chat of the closure's user (of everyone when none) and deletes
// its item: the user may not use the room any more. A connection already
// gone is only deleted; one that moved to another room meanwhile keeps its
// item. Running it again finds nothing left to do.
func (c *Chat) close(ctx context.Context, cl closure) error {
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, c.fanout())
	var wg sync.WaitGroup
	err := c.Store.Chat.EachRoomConnection(ctx, cl.RoomID, c.Now().Unix(), func(conn chat.Connection) error {
		if cl.UserID != "" && conn.UserID != cl.UserID {
			return nil
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// Marked first, on the condition that the connection is still
			// in this room (one that joined another meanwhile is kept, and
			// not closed); then the socket; then the item. A crash between
			// any two leaves the item in the room, so the retry does the
			// rest (a socket closed already is gone: nothing to do).
			mine, err := c.Store.Chat.CloseConnectionIn(ctx, conn, cl.RoomID)
			if err == nil && mine {
				if err = c.Pusher.Close(ctx, conn.ConnectionID); err == nil || errors.Is(err, push.ErrGone) {
					var deleted bool
					if deleted, err = c.Store.Chat.DeleteConnectionIn(ctx, conn, cl.RoomID); deleted {
						c.Closed.Add(1)
					}
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		return nil
	})
	wg.Wait()
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		who := "everyone's"
		if cl.UserID != "" {
			who = cl.UserID + "'s"
		}
		return fmt.Errorf("close %s connections to room %s: %w", who, cl.RoomID, err)
	}
	return nil
}
