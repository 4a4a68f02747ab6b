package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/gateway"
	"github.com/dynastream/dynastream/internal/store"
)

// Chat returns the WebSocket API's routes (seed 002): $connect verifies
// the token (Server.Tokens) and records the connection, $disconnect
// forgets it, and a frame's action sends a message or joins a room. The
// same routes serve API Gateway (gateway.Lambda) and the local endpoint
// (gateway.Local).
func (s *Server) Chat() gateway.Routes { return chatRoutes{s} }

type chatRoutes struct{ s *Server }

// chatAccess says whether userID may use the chat room roomID: anyone may
// use a plain chat room; a search room's chat is for its members, and a
// deleted search room's chat is sealed, for nobody; who may not gets the
// same NotFound as for a chat room that does not exist. With existing, a
// chat room nobody has connected to yet is NotFound too (history);
// without, connecting creates it. The writes that act on a search room's
// chat check membership and the seal again as their conditions.
func (s *Server) chatAccess(ctx context.Context, roomID, userID string, existing bool) (searchRoom bool, err error) {
	a, err := s.Store.Chat.ChatAccess(ctx, roomID, userID)
	if err != nil {
		return false, err
	}
	// An id shaped like a search room's (a ULID) is a search room's chat
	// or nothing: nobody opens a plain chat room under the id a search
	// room may get later, to read its members' messages.
	_, ulidErr := ulid.ParseStrict(roomID)
	if !a.Open() || (existing && !a.ChatRoom) || (!a.SearchRoom && ulidErr == nil) {
		return a.SearchRoom, errs.New(errs.NotFound, "chat room %s not found", roomID)
	}
	return a.SearchRoom, nil
}

// recovered turns a route's panic into an internal error in *err, logged
// with its stack: a bug in one frame must not take the process (locally
// every connection, in Lambda the execution environment) down. Routes
// defer it, as Handler's requests do the same.
func (c chatRoutes) recovered(route string, err *error) {
	if p := recover(); p != nil {
		c.s.log().Error("chat route panicked", "route", route, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = errs.New(errs.Internal, "chat %s panicked: %v", route, p)
	}
}

// observe tells Server.Observe about one chat route's call, as "WS " and
// the route ($connect, $disconnect, sendMessage, joinRoom, or $default for
// any other action, as API Gateway routes it) with the HTTP status its
// error maps to (200 when none).
func (c chatRoutes) observe(route string, start time.Time, err error) {
	if c.s.Observe == nil {
		return
	}
	status := http.StatusOK
	if err != nil {
		status = statusOf[errs.CodeOf(err)]
	}
	c.s.Observe("WS "+route, status, time.Since(start))
}

func (c chatRoutes) Connect(ctx context.Context, r gateway.ConnectRequest) (err error) {
	start := time.Now()
	defer func() { c.observe("$connect", start, err) }()
	defer c.recovered("$connect", &err)
	if c.s.Tokens == nil {
		return errs.New(errs.Internal, "chat: no token verifier configured")
	}
	id, err := c.s.Tokens.Verify(ctx, r.Token)
	if err != nil {
		return err
	}
	roomID := chat.DefaultRoom
	if v, ok := r.Query["roomId"]; ok {
		if len(v) != 1 || !chat.ValidRoomID(v[0]) {
			return errs.Field("roomId", chat.RoomIDRule)
		}
		roomID = v[0]
	}
	search, err := c.s.chatAccess(ctx, roomID, id.UserID, false)
	if err != nil {
		return err
	}
	now := c.s.Now()
	l := store.ConnLimit{Open: c.s.ChatConnectionsPerUser, PerMinute: c.s.ChatConnectsPerMinute, Alive: c.s.ConnectionAlive}
	if l.Open <= 0 {
		l.Open = DefaultChatConnectionsPerUser
	}
	if l.PerMinute <= 0 {
		l.PerMinute = DefaultChatConnectsPerMinute
	}
	return c.s.Store.Chat.ConnectLimited(ctx, chat.Connection{
		ConnectionID: r.ConnectionID, UserID: id.UserID, UserName: id.Name, RoomID: roomID,
		ConnectedAt: store.Timestamp(now), TTL: now.Add(chat.ConnectionTTL).Unix(), SearchRoom: search,
	}, l)
}

func (c chatRoutes) Disconnect(ctx context.Context, connectionID string) (err error) {
	start := time.Now()
	defer func() { c.observe("$disconnect", start, err) }()
	defer c.recovered("$disconnect", &err)
	return c.s.Store.Chat.Disconnect(ctx, connectionID)
}

// Message answers every frame with one frame: sent, joined, or an error
// naming the field and the reason. A frame never closes the connection.
// Every frame counts against its connection's limit, one that does not
// parse or names no action too, so junk costs a sender what a message does.
func (c chatRoutes) Message(ctx context.Context, connectionID string, frame []byte) []byte {
	start := time.Now()
	in, perr := chat.ParseInbound(frame)
	var err error
	defer func() {
		route := in.Action
		if route != chat.ActionSendMessage && route != chat.ActionJoinRoom {
			route = "$default"
		}
		c.observe(route, start, err)
	}()
	var out chat.Outbound
	if out, err = c.safeHandle(ctx, connectionID, in, perr); err == nil {
		return out.Encode()
	}
	if errs.CodeOf(err) == errs.Internal {
		c.s.log().Error("chat: frame failed", "connectionId", connectionID, "action", in.Action, "err", err)
	}
	return chat.ErrorFrame(in.Action, err).Encode()
}

// safeHandle is handle with a panic answered as an internal error frame.
func (c chatRoutes) safeHandle(ctx context.Context, connectionID string, in chat.Inbound, parseErr error) (out chat.Outbound, err error) {
	defer c.recovered(in.Action, &err)
	return c.handle(ctx, connectionID, in, parseErr)
}

// handle counts the frame, then answers it: parseErr is the frame's own
// fault, answered once the frame is counted.
func (c chatRoutes) handle(ctx context.Context, connectionID string, in chat.Inbound, parseErr error) (chat.Outbound, error) {
	now := c.s.Now()
	limit := c.s.ChatFrames
	if limit.Frames <= 0 || limit.Per <= 0 {
		limit = DefaultChatFrames
	}
	// The connection, its frame counted against its limit (TooMany past it).
	conn, err := c.s.Store.Chat.TakeFrame(ctx, connectionID, now, limit)
	if errs.Is(err, errs.NotFound) {
		return chat.Outbound{}, errs.New(errs.NotFound, "this connection is not known (it expired): reconnect")
	}
	if err != nil {
		return chat.Outbound{}, err
	}
	if parseErr != nil {
		return chat.Outbound{}, parseErr
	}
	if in.Action != chat.ActionSendMessage && in.Action != chat.ActionJoinRoom {
		return chat.Outbound{}, errs.Field("action", fmt.Sprintf("must be %s or %s", chat.ActionSendMessage, chat.ActionJoinRoom))
	}
	if in.Action == chat.ActionJoinRoom {
		if !chat.ValidRoomID(in.RoomID) {
			return chat.Outbound{}, errs.Field("roomId", chat.RoomIDRule)
		}
		search, err := c.s.chatAccess(ctx, in.RoomID, conn.UserID, false)
		if err != nil {
			return chat.Outbound{}, err
		}
		if err := c.s.Store.Chat.MoveConnection(ctx, connectionID, conn.UserID, in.RoomID, store.Timestamp(now), search); err != nil {
			return chat.Outbound{}, err
		}
		return chat.Outbound{Type: chat.FrameJoined, RoomID: in.RoomID}, nil
	}
	if err := chat.CheckContent(in.Content); err != nil {
		return chat.Outbound{}, err
	}
	if in.ClientMessageID != "" && !chat.ValidClientMessageID(in.ClientMessageID) {
		return chat.Outbound{}, errs.Field("clientMessageId", chat.ClientMessageIDRule)
	}
	m := chat.Message{RoomID: conn.RoomID, MessageID: c.s.NewID(), UserID: conn.UserID, UserName: conn.UserName,
		Content: in.Content, CreatedAt: store.Timestamp(now), SearchRoom: conn.SearchRoom}
	if m.UserName == "" {
		m.UserName = m.UserID
	}
	// A search room's message is written on the condition that its sender
	// is still a member and the chat is not sealed; a client message id
	// sent again finds the first message (Store.PutMessageOnce).
	m, err = c.s.Store.Chat.PutMessageOnce(ctx, m, in.ClientMessageID)
	if err != nil {
		return chat.Outbound{}, err
	}
	return chat.Outbound{Type: chat.FrameSent, Message: &m}, nil
}

// Refusal is the handshake answer to a refused $connect
// (gateway.Refusal): the status of the error's code (the one table,
// statusOf) and a problem+json body.
func (s *Server) Refusal(err error) (int, http.Header, []byte) {
	rec := &bufferedResponse{header: http.Header{}}
	writeError(rec, s.log(), &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "$connect"}}, err)
	return rec.status, rec.header, rec.body.Bytes()
}

// bufferedResponse is an http.ResponseWriter in memory.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 { // the first counts, as net/http's
		b.status = status
	}
}

// getChatRoom is GET /chat/rooms/{roomId}.
func (s *Server) getChatRoom(w http.ResponseWriter, r *http.Request) error {
	roomID := r.PathValue("roomId")
	if _, err := s.chatAccess(r.Context(), roomID, identity(r.Context()).UserID, true); err != nil {
		return err
	}
	return reply(w, http.StatusOK)(s.Store.Chat.GetChatRoom(r.Context(), roomID))
}

// chatMessages is GET /chat/rooms/{roomId}/messages: newest first, or with
// ?after=<timestamp> the messages after it, oldest first (to catch up
// after a reconnect).
func (s *Server) chatMessages(w http.ResponseWriter, r *http.Request) error {
	roomID := r.PathValue("roomId")
	if _, err := s.chatAccess(r.Context(), roomID, identity(r.Context()).UserID, true); err != nil {
		return err
	}
	p, err := page(r)
	if err != nil {
		return err
	}
	if after := r.URL.Query().Get("after"); after != "" {
		t, err := store.ParseTimestamp(after)
		if err != nil {
			return errs.Field("after", "must be a timestamp like 2026-01-02T15:04:05.000Z (a message's createdAt)")
		}
		return replyPage(w)(s.Store.Chat.MessagesAfter(r.Context(), roomID, store.Timestamp(t), p))
	}
	return replyPage(w)(s.Store.Chat.Messages(r.Context(), roomID, p))
}
