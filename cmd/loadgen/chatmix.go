package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/dynastream/dynastream/internal/store"
)

// The mix's chat messages (seed 002): chatConns connections of chatUsers
// users in one room, the seed's default room that everyone is in, each
// message sent from one of them in turn and pushed to all. What a message
// derives (its pushes) is measured by -chat, not here: in the mix it is
// a write whose keys the scale projection counts.
const (
	chatRoom  = "global"
	chatUsers = 10
	chatConns = 20
)

type chatMix struct {
	clients []*chatClient
	sent    atomic.Uint64
	recv    received
}

// setupChat opens the mix's chat connections and reads what they are
// pushed until ctx ends.
func (w *world) setupChat(ctx context.Context) error {
	tokens := make([]string, chatUsers)
	for i := range tokens {
		tok, err := w.token(ctx, w.freshUser())
		if err != nil {
			return err
		}
		tokens[i] = tok
	}
	clients, err := openChat(ctx, w.c.base, chatRoom, chatConns, tokens)
	if err != nil {
		closeChat(clients)
		return err
	}
	w.chat = &chatMix{clients: clients}
	for _, cl := range clients {
		go cl.read(ctx, &w.chat.recv)
	}
	go func() {
		<-ctx.Done()
		closeChat(clients)
	}()
	return nil
}

// message sends one chat message; its op expects nothing of the stream.
func (w *world) message(ctx context.Context, pickN uint64) (*op, error) {
	o := &op{name: "message", route: "WS sendMessage (frame written)", untracked: true}
	if w.chat == nil {
		return o, fmt.Errorf("chat: no connections")
	}
	n := w.chat.sent.Add(1)
	cl := w.chat.clients[pickN%uint64(len(w.chat.clients))]
	frame := fmt.Sprintf(`{"action":"sendMessage","content":"mix message %d"}`, n)
	o.sent = time.Now()
	err := cl.c.Write(ctx, websocket.MessageText, []byte(frame)) // safe concurrently
	o.done = time.Now()
	return o, err
}

// chatPins are the mix's chat room's keys: its messages' partition and its
// connections' index key, one room whatever the number of users.
func chatPins(out map[string]string) {
	out[store.ChatRoomPK(chatRoom)] = "the chat room everyone is in"
}
