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

// Pusher sends a frame to a WebSocket connection; a connection that is
// gone answers an error wrapping push.ErrGone (*push.Client is one).
type Pusher interface {
	Push(ctx context.Context, connectionID string, frame []byte) error
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
type Chat struct {
	Store  *store.Store
	Pusher Pusher
	Now    func() time.Time
	Fanout int           // default DefaultFanout
	Grace  time.Duration // default DefaultGrace

	// Pushes since start: delivered, to connections found gone, failed.
	Pushed, Gone, Failed atomic.Int64
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
	fanout, grace := c.Fanout, c.Grace
	if fanout <= 0 {
		fanout = DefaultFanout
	}
	if grace <= 0 {
		grace = DefaultGrace
	}
	now := c.Now()
	cutoff := store.Timestamp(now.Add(-grace))
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
	sem := make(chan struct{}, fanout)
	var wg sync.WaitGroup
	err := c.Store.EachRoomConnection(ctx, msgs[0].RoomID, now.Unix(), func(conn chat.Connection) error {
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
					if _, err := c.Store.DeleteGoneConnection(ctx, conn.ConnectionID, cutoff); err != nil {
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
