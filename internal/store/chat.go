package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/errs"
)

// Chat item types (seed 002; the seed's four tables are items here).
const (
	TypeChatRoom   = "ChatRoom"
	TypeMessage    = "Message"
	TypeConnection = "Connection"
)

const (
	prefixChatRoom   = "CHATROOM#"
	prefixConnection = "CONN#"
	// SKPrefixMessage starts a message's sort key: MSG#<createdAt>#<id>
	// (the id keeps two messages of the same millisecond apart).
	SKPrefixMessage = "MSG#"
)

// ChatRoomPK is a chat room's partition: the room and its messages.
func ChatRoomPK(roomID string) string { return prefixChatRoom + roomID }

// ChatRoomKey is a chat room.
func ChatRoomKey(roomID string) Key { return Key{ChatRoomPK(roomID), "META"} }

// MessageKey is a message.
func MessageKey(roomID, createdAt, messageID string) Key {
	return Key{ChatRoomPK(roomID), SKPrefixMessage + createdAt + "#" + messageID}
}

// ConnectionKey is a connection; its GSI1 key (ConnectionIndexKey) puts
// it under its room.
func ConnectionKey(connectionID string) Key { return Key{prefixConnection + connectionID, "META"} }

// ConnectionIndexKey is a connection's GSI1 key: its room's connections
// are one Query.
func ConnectionIndexKey(roomID, connectionID string) Key {
	return Key{ChatRoomPK(roomID), prefixConnection + connectionID}
}

func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// upsertRoom writes a room if it is new; its name and createdAt are kept
// when it exists. A sealed room (a deleted search room's chat) fails its
// condition: nobody connects to it or joins it again.
func (s Chat) upsertRoom(roomID, now string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.Table), Key: ChatRoomKey(roomID).AV(),
		ConditionExpression:       aws.String("attribute_not_exists(" + attrSealedAt + ")"),
		UpdateExpression:          aws.String("SET itemType = :t, roomId = :r, #n = if_not_exists(#n, :r), createdAt = if_not_exists(createdAt, :now)"),
		ExpressionAttributeNames:  map[string]string{"#n": "name"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": strAV(TypeChatRoom), ":r": strAV(roomID), ":now": strAV(now)}}}
}

// attrSealedAt marks a sealed chat room (chat.Room.SealedAt).
const attrSealedAt = "sealedAt"

// memberCheck is a condition that userID is a member of the search room
// roomID, for the transactions that act on its chat: the access check
// happens in the write itself, so a member removed (or a room deleted)
// between a read and the write cannot slip through.
func (s Chat) memberCheck(roomID, userID string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table),
		Key: MemberKey(roomID, userID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}}
}

// sealCheck is a condition that a chat room is not sealed.
func (s Chat) sealCheck(roomID string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table),
		Key: ChatRoomKey(roomID).AV(), ConditionExpression: aws.String("attribute_not_exists(" + attrSealedAt + ")")}}
}

// sealRoom is the write that closes a deleted search room's chat for good
// (in DeleteRoom's transaction): its ChatRoom item, created if nobody had
// used the chat, gets sealedAt, and every later connect, join and message
// fails its condition.
func (s Chat) sealRoom(roomID, at string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.Table), Key: ChatRoomKey(roomID).AV(),
		UpdateExpression:          aws.String("SET itemType = :t, roomId = :r, #n = if_not_exists(#n, :r), createdAt = if_not_exists(createdAt, :at), #s = if_not_exists(#s, :at)"),
		ExpressionAttributeNames:  map[string]string{"#n": "name", "#s": attrSealedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": strAV(TypeChatRoom), ":r": strAV(roomID), ":at": strAV(at)}}}
}

// chatRefused is the answer to a chat write whose access condition failed:
// the same NotFound an outsider gets for a room that does not exist.
func chatRefused(roomID string) error {
	return errs.New(errs.NotFound, "chat room %s not found", roomID)
}

// Connect records a connection in one transaction with its user's profile
// (created on first sight; the name set when the token carries one, else
// kept, else the user id; createdAt only the first time) and its room
// (created on first sight). An existing connection id is a Conflict.
func (s Chat) Connect(ctx context.Context, c chat.Connection) error {
	return s.ConnectLimited(ctx, c, ConnLimit{})
}

// ConnLimit bounds one user's chat connections: at most Open at once, and
// at most PerMinute connects in each clock minute (a zero is no bound).
type ConnLimit struct {
	Open      int
	PerMinute int
	// Alive, when set, asks the gateway whether a connection is open (API
	// Gateway's GetConnection; locally the writer's own endpoint). A user at
	// the Open bound has the entries of connections older than
	// ConnectGrace that the gateway does not know dropped: a $connect whose
	// transaction committed but whose answer was lost (API Gateway refused
	// the socket, and no $disconnect comes) would otherwise count against
	// the bound for two hours.
	Alive func(ctx context.Context, connectionID string) (bool, error)
}

// ConnectGrace is how old a connection must be before Alive may say it
// is not open: a $connect still under way (API Gateway waits up to 29 s for
// its integration) has a connection the gateway does not know yet.
const ConnectGrace = 30 * time.Second

// connRegistry is a user's open connections, in the bookkeeping table:
// each connection id with the time its item expires, and the connects
// counted in the clock minute Minute (unix seconds / 60). Version is raised
// by every change, additions and removals alike, so a change conditioned
// on the version it read never writes back what another took out.
type connRegistry struct {
	Conns    map[string]int64 `dynamodbav:"conns"`
	Version  int64            `dynamodbav:"version"`
	Minute   int64            `dynamodbav:"minute"`
	Connects int              `dynamodbav:"connects"`
}

// ConnRegistryKey is userID's registry of open connections.
func ConnRegistryKey(userID string) Key {
	return Key{"CONNECTIONS#" + userScope(userID), "REGISTRY"}
}

// ConnectLimited is Connect under a user's limits (ConnLimit): the user's
// registry of open connections (ConnRegistryKey) is read, its expired
// entries dropped, and, when the user is under both bounds, written again
// with the new one (and the minute's count) in the connection's own
// transaction, on the condition that nobody changed it meanwhile (a
// concurrent connect or disconnect: it is read and tried again). Past a
// bound is TooMany, with when to try again for the per-minute one.
// Disconnect and the notifier's closes take entries out (raising the
// version); an entry whose $disconnect never came expires with its
// connection (2 hours), and an entry whose connection item is gone (a
// disconnect that stopped between its two writes) is dropped when the
// user is at the limit.
func (s Chat) ConnectLimited(ctx context.Context, c chat.Connection, l ConnLimit) error {
	for attempt := 0; ; attempt++ {
		var reg *types.TransactWriteItem
		if l.Open > 0 || l.PerMinute > 0 {
			var err error
			if reg, err = s.registerConnection(ctx, c, l); err != nil {
				return err
			}
		}
		err := s.connect(ctx, c, reg)
		switch {
		case errors.Is(err, errRegistryChanged) && attempt < 20:
			// Another change won: wait a jittered moment, so the user's
			// tabs that connect together do not collide again in step.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(1+mrand.IntN(4<<min(attempt, 5))) * time.Millisecond):
			}
			continue
		case errors.Is(err, errRegistryChanged):
			return tryAgain("%s opens connections faster than they can be counted; try again", c.UserID)
		}
		return err
	}
}

var errRegistryChanged = errors.New("store: the user's connections changed meanwhile")

// registerConnection is the registry write that adds c, or TooMany.
func (s Chat) registerConnection(ctx context.Context, c chat.Connection, l ConnLimit) (*types.TransactWriteItem, error) {
	k := ConnRegistryKey(c.UserID)
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.book()), Key: k.AV(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("store: read connections of %s: %w", c.UserID, err)
	}
	var reg connRegistry
	if out.Item != nil {
		if err := attributevalue.UnmarshalMap(out.Item, &reg); err != nil {
			return nil, fmt.Errorf("store: connections of %s: %w", c.UserID, err)
		}
	}
	t, _ := ParseTimestamp(c.ConnectedAt)
	minute := t.Unix() / 60
	if reg.Minute != minute {
		reg.Minute, reg.Connects = minute, 0
	}
	if l.PerMinute > 0 && reg.Connects >= l.PerMinute {
		e := errs.New(errs.TooMany, "at most %d chat connects per minute per user: wait a moment", l.PerMinute)
		e.RetryAfter = time.Unix((minute+1)*60, 0).Sub(t)
		return nil, e
	}
	live := map[string]int64{}
	for id, exp := range reg.Conns {
		if exp > t.Unix() {
			live[id] = exp
		}
	}
	if l.Open > 0 && len(live) >= l.Open {
		if err := s.dropClosed(ctx, live); err != nil {
			return nil, err
		}
		if len(live) >= l.Open && l.Alive != nil {
			s.dropRefused(ctx, c.UserID, live, t, l.Alive)
		}
		if len(live) >= l.Open {
			return nil, errs.New(errs.TooMany, "at most %d open chat connections per user: close one first", l.Open)
		}
	}
	live[c.ConnectionID] = c.TTL
	item, err := attributevalue.MarshalMap(connRegistry{Conns: live, Version: reg.Version + 1, Minute: minute, Connects: reg.Connects + 1})
	if err != nil {
		return nil, err
	}
	for n, v := range k.AV() {
		item[n] = v
	}
	item["derived"] = &types.AttributeValueMemberBOOL{Value: true}
	cond, vals := "attribute_not_exists(PK)", map[string]types.AttributeValue(nil)
	if out.Item != nil {
		cond, vals = "version = :v", map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(reg.Version, 10)}}
	}
	return &types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.book()), Item: item,
		ConditionExpression: aws.String(cond), ExpressionAttributeValues: vals}}, nil
}

// dropClosed takes out of live the entries whose connection item is gone,
// read with one consistent BatchGetItem. A registry entry is written in
// one transaction with its connection item, so an entry without its item
// is a connection deleted by a disconnect or a close that stopped before
// taking it out of the registry.
func (s Chat) dropClosed(ctx context.Context, live map[string]int64) error {
	keys := make([]Key, 0, len(live))
	for id := range live {
		keys = append(keys, ConnectionKey(id))
	}
	found := map[string]bool{}
	err := s.batchGet(ctx, keys, true, func(it map[string]types.AttributeValue) error {
		found[strings.TrimPrefix(itemKey(it).PK, prefixConnection)] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: read open connections: %w", err)
	}
	for id := range live {
		if !found[id] {
			delete(live, id)
		}
	}
	return nil
}

// dropRefused takes out of live the entries of connections older than
// ConnectGrace (at now) that the gateway does not know (alive), and
// deletes their items: connections whose $connect committed but which the
// gateway refused. The registry written next leaves them out. An entry
// the gateway could not be asked about, or whose item could not be
// deleted, stays (the user is then at the bound, as before).
func (s Chat) dropRefused(ctx context.Context, userID string, live map[string]int64, now time.Time, alive func(context.Context, string) (bool, error)) {
	old := now.Add(chat.ConnectionTTL - ConnectGrace).Unix() // an entry's expiry is its connect + ConnectionTTL
	var ask []string
	for id, exp := range live {
		if exp <= old { // younger ones: too young to tell
			ask = append(ask, id)
		}
	}
	var mu sync.Mutex
	var refused []string
	var wg sync.WaitGroup
	for _, id := range ask {
		wg.Go(func() {
			ok, err := alive(ctx, id)
			if err == nil && !ok {
				// only this user's: the id names no other's connection
				_, err = s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: ConnectionKey(id).AV(),
					ConditionExpression:       aws.String("attribute_not_exists(PK) OR userId = :u"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":u": strAV(userID)}})
				if isConditionFailed(err) {
					err = nil
				}
			}
			if err == nil && !ok {
				mu.Lock()
				refused = append(refused, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, id := range refused {
		delete(live, id)
	}
}

// unregisterConnection takes a connection out of its user's registry and
// raises its version, so a connect that read the registry before this
// fails its condition instead of writing the entry back.
func (s Chat) unregisterConnection(ctx context.Context, userID, connectionID string) error {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.book()), Key: ConnRegistryKey(userID).AV(),
		UpdateExpression:          aws.String("REMOVE conns.#c ADD version :one"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#c": connectionID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("store: unregister connection %s: %w", connectionID, err)
	}
	return nil
}

func (s Chat) connect(ctx context.Context, c chat.Connection, reg *types.TransactWriteItem) error {
	it, err := marshal(head{Key: ConnectionKey(c.ConnectionID), ItemType: TypeConnection}, c)
	if err != nil {
		return err
	}
	ix := ConnectionIndexKey(c.RoomID, c.ConnectionID)
	it["GSI1PK"], it["GSI1SK"] = strAV(ix.PK), strAV(ix.SK)
	pk := ProfileKey(c.UserID)
	vals := map[string]types.AttributeValue{":t": strAV(TypeProfile), ":u": strAV(c.UserID), ":now": strAV(c.ConnectedAt), ":gpk": strAV(pk.PK), ":gsk": strAV(pk.SK)}
	name := "#n = if_not_exists(#n, :u), updatedAt = if_not_exists(updatedAt, :now)"
	if c.UserName != "" {
		name, vals[":name"] = "#n = :name, updatedAt = :now", strAV(c.UserName)
	}
	profile := types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.Table), Key: pk.AV(),
		UpdateExpression:          aws.String("SET itemType = :t, userId = :u, GSI1PK = :gpk, GSI1SK = :gsk, createdAt = if_not_exists(createdAt, :now), " + name),
		ExpressionAttributeNames:  map[string]string{"#n": "name"},
		ExpressionAttributeValues: vals}}
	items := []types.TransactWriteItem{profile, s.upsertRoom(c.RoomID, c.ConnectedAt), put(s.Table, it, "attribute_not_exists(PK)")}
	member := -1
	if c.SearchRoom {
		member = len(items)
		items = append(items, s.memberCheck(c.RoomID, c.UserID))
	}
	registry := -1
	if reg != nil {
		registry = len(items)
		items = append(items, *reg)
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if r := cancelReasons(err); r != nil {
		switch {
		case failedAt(r, 1) || failedAt(r, member):
			return chatRefused(c.RoomID)
		case failedAt(r, 2):
			return errs.New(errs.Conflict, "connection %s already exists", c.ConnectionID)
		case failedAt(r, registry):
			return errRegistryChanged
		}
	}
	if err != nil {
		return fmt.Errorf("store: connect: %w", err)
	}
	return nil
}

// Disconnect deletes a connection (gone already: nothing to do) and takes
// it out of its user's registry.
func (s Chat) Disconnect(ctx context.Context, connectionID string) error {
	out, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: ConnectionKey(connectionID).AV(),
		ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return fmt.Errorf("store: disconnect: %w", err)
	}
	if u, ok := out.Attributes["userId"].(*types.AttributeValueMemberS); ok {
		return s.unregisterConnection(ctx, u.Value, connectionID)
	}
	return nil
}

// GetConnection reads a connection; an unknown or expired one is NotFound.
func (s Chat) GetConnection(ctx context.Context, connectionID string, nowUnix int64) (chat.Connection, error) {
	var c chat.Connection
	ok, err := s.get(ctx, ConnectionKey(connectionID), &c)
	if err != nil {
		return c, err
	}
	if !ok || c.TTL <= nowUnix {
		return chat.Connection{}, errs.New(errs.NotFound, "connection %s not found", connectionID)
	}
	return c, nil
}

// MoveConnection puts a connection in another room (created on first
// sight), in one transaction; an unknown connection is NotFound.
// searchRoom says the room is a search room's chat (chat.Connection): then
// userID must be one of its members when the write happens. A sealed room
// is NotFound, and so is a connection being closed (CloseConnectionIn).
func (s Chat) MoveConnection(ctx context.Context, connectionID, userID, roomID, now string, searchRoom bool) error {
	ix := ConnectionIndexKey(roomID, connectionID)
	set, vals := "SET roomId = :r, GSI1PK = :pk, GSI1SK = :sk", map[string]types.AttributeValue{":r": strAV(roomID), ":pk": strAV(ix.PK), ":sk": strAV(ix.SK)}
	if searchRoom {
		set, vals[":s"] = set+", searchRoom = :s", &types.AttributeValueMemberBOOL{Value: true}
	} else {
		set += " REMOVE searchRoom"
	}
	items := []types.TransactWriteItem{
		s.upsertRoom(roomID, now),
		{Update: &types.Update{TableName: aws.String(s.Table), Key: ConnectionKey(connectionID).AV(),
			ConditionExpression:       aws.String("attribute_exists(PK) AND attribute_not_exists(closing)"), // not one being closed
			UpdateExpression:          aws.String(set),
			ExpressionAttributeValues: vals}},
	}
	if searchRoom {
		items = append(items, s.memberCheck(roomID, userID))
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if r := cancelReasons(err); r != nil {
		switch {
		case failedAt(r, 1):
			return errs.New(errs.NotFound, "connection %s not found", connectionID)
		case failedAt(r, 0) || failedAt(r, 2):
			return chatRefused(roomID)
		}
	}
	if err != nil {
		return fmt.Errorf("store: move connection: %w", err)
	}
	return nil
}

// RoomConnections lists a room's live connections (GSI1, a page at a
// time); expired ones that DynamoDB has not deleted yet are left out.
func (s Chat) RoomConnections(ctx context.Context, roomID string, nowUnix int64, p Page) ([]chat.Connection, string, error) {
	var out []chat.Connection
	next, err := s.queryPage(ctx, query{index: IndexGSI1, pk: ChatRoomPK(roomID), skPrefix: prefixConnection, page: p, liveAt: nowUnix}, decodeInto(s.Store, &out))
	return out, next, err
}

// ChatAccess is what deciding who may use a chat room needs.
type ChatAccess struct {
	// SearchRoom: the id is a search room's, whose chat is for its
	// members only; Member: the user is one of them.
	SearchRoom, Member bool
	// ChatRoom: the chat room exists (someone has connected to it).
	ChatRoom bool
	// Sealed: the chat room was a search room's, and that room was
	// deleted: closed to everyone for good.
	Sealed bool
}

// Open says whether userID may use the chat room: not sealed, and, for a
// search room's chat, a member.
func (a ChatAccess) Open() bool { return !a.Sealed && (!a.SearchRoom || a.Member) }

// ChatAccess reads, in one request, whether roomID is a search room's id,
// whether userID is a member of it, and whether its chat room exists.
func (s Chat) ChatAccess(ctx context.Context, roomID, userID string) (ChatAccess, error) {
	var a ChatAccess
	room, mem, cr := RoomKey(roomID), MemberKey(roomID, userID), ChatRoomKey(roomID)
	// Consistent: a member removed a moment ago must not read on.
	err := s.batchGet(ctx, []Key{room, mem, cr}, true, func(it map[string]types.AttributeValue) error {
		pk, _ := it[AttrPK].(*types.AttributeValueMemberS)
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil {
			return nil
		}
		switch (Key{pk.Value, sk.Value}) {
		case room:
			a.SearchRoom = true
		case mem:
			a.Member = true
		case cr:
			a.ChatRoom = true
			_, a.Sealed = it[attrSealedAt]
		}
		return nil
	})
	if err != nil {
		return ChatAccess{}, fmt.Errorf("store: chat access: %w", err)
	}
	return a, nil
}

// GetChatRoom reads a chat room.
func (s Chat) GetChatRoom(ctx context.Context, roomID string) (chat.Room, error) {
	var r chat.Room
	ok, err := s.get(ctx, ChatRoomKey(roomID), &r)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "chat room %s not found", roomID)
	}
	return r, err
}

// PutMessage stores a message (its room must exist: the sender is
// connected to it). The same message id again is a Conflict (with
// ddb.Config.OwnWrites, as the writer has it, the very same message again
// — a write whose answer was lost, sent again — is done). A search
// room's message (m.SearchRoom) is written on the condition that its
// sender is a member and its chat is not sealed, in one transaction: a
// member removed or a room deleted since the sender's connection was
// checked is refused as NotFound, and nothing is written.
func (s Chat) PutMessage(ctx context.Context, m chat.Message) error {
	_, err := s.PutMessageOnce(ctx, m, "")
	return err
}

// sentMessage is the record of a message sent with a client message id,
// in the bookkeeping table for a day: the same id again finds the message.
type sentMessage struct {
	RoomID    string `dynamodbav:"roomId"`
	MessageID string `dynamodbav:"messageId"`
	CreatedAt string `dynamodbav:"createdAt"`
	Content   string `dynamodbav:"contentSum"`
}

// SentMessageKey is the record of userID's client message id.
func SentMessageKey(userID, clientMessageID string) Key {
	return Key{"CHATMSG#" + userScope(userID) + "#" + clientMessageID, "IDEMPOTENCY"}
}

// PutMessageOnce is PutMessage for a client that names its message
// (clientMessageID, "": none): the first message with that id is stored
// with a record of it (in the same transaction), and the same id again
// from the same user — a frame the client sent again, not knowing whether
// the first arrived — stores nothing and returns the first message; the id
// with another room or content is a Conflict. It returns the message
// stored.
func (s Chat) PutMessageOnce(ctx context.Context, m chat.Message, clientMessageID string) (chat.Message, error) {
	it, err := marshal(head{Key: MessageKey(m.RoomID, m.CreatedAt, m.MessageID), ItemType: TypeMessage}, m)
	if err != nil {
		return m, err
	}
	sum := sha256.Sum256([]byte(m.Content))
	var sent map[string]types.AttributeValue
	var sentAt time.Time // the message's time: a record expired by then is absent
	if clientMessageID != "" {
		rec, err := attributevalue.MarshalMap(sentMessage{RoomID: m.RoomID, MessageID: m.MessageID, CreatedAt: m.CreatedAt, Content: hex.EncodeToString(sum[:])})
		if err != nil {
			return m, err
		}
		for k, v := range SentMessageKey(m.UserID, clientMessageID).AV() {
			rec[k] = v
		}
		t, _ := ParseTimestamp(m.CreatedAt)
		sentAt = t
		rec[AttrTTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Add(24*time.Hour).Unix(), 10)}
		rec["derived"] = &types.AttributeValueMemberBOOL{Value: true}
		sent = rec
	}
	if m.SearchRoom || sent != nil {
		items := []types.TransactWriteItem{put(s.Table, it, "attribute_not_exists(PK)")}
		if m.SearchRoom {
			items = append(items, s.memberCheck(m.RoomID, m.UserID), s.sealCheck(m.RoomID))
		}
		at := len(items)
		if sent != nil {
			// an expired record (24 h: DynamoDB deletes it late, DynamoDB
			// Local never) is absent: the id is free again
			p := put(s.book(), sent, "attribute_not_exists(PK) OR #ttl < :now")
			p.Put.ExpressionAttributeNames = map[string]string{"#ttl": AttrTTL}
			p.Put.ExpressionAttributeValues = map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(sentAt.Unix(), 10)}}
			p.Put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
			items = append(items, p)
		}
		_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var tc *types.TransactionCanceledException
		if errors.As(err, &tc) {
			r := cancelReasons(err)
			switch {
			case m.SearchRoom && (failedAt(r, 1) || failedAt(r, 2)):
				return m, chatRefused(m.RoomID)
			case sent != nil && failedAt(r, at):
				var first sentMessage
				if err := attributevalue.UnmarshalMap(tc.CancellationReasons[at].Item, &first); err != nil {
					return m, fmt.Errorf("store: sent message record: %w", err)
				}
				if first.RoomID != m.RoomID || first.Content != hex.EncodeToString(sum[:]) {
					return m, errs.New(errs.Conflict, "clientMessageId %s was used for another message: use a new one for a new message", clientMessageID)
				}
				var stored chat.Message
				ok, err := s.getItem(ctx, MessageKey(first.RoomID, first.CreatedAt, first.MessageID), true, &stored)
				if err != nil {
					return m, err
				}
				if !ok { // deleted since (a deleted room's cascade)
					return m, chatRefused(m.RoomID)
				}
				return stored, nil
			case failedAt(r, 0):
				return m, errs.New(errs.Conflict, "message %s already exists", m.MessageID)
			}
		}
	} else {
		_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")})
		if isConditionFailed(err) {
			return m, errs.New(errs.Conflict, "message %s already exists", m.MessageID)
		}
	}
	if err != nil {
		return m, fmt.Errorf("store: put message: %w", err)
	}
	return m, nil
}

// Messages lists a room's messages newest first.
func (s Chat) Messages(ctx context.Context, roomID string, p Page) ([]chat.Message, string, error) {
	var out []chat.Message
	next, err := s.queryPage(ctx, query{pk: ChatRoomPK(roomID), skPrefix: SKPrefixMessage, desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// MessagesAfter lists a room's messages created after a time (a stored
// timestamp), oldest first: what a client that reconnects missed.
func (s Chat) MessagesAfter(ctx context.Context, roomID, after string, p Page) ([]chat.Message, string, error) {
	var out []chat.Message
	// "MSG#<after>$" sorts after every "MSG#<after>#<id>" ('$' follows '#'),
	// and "MSG$" after every message.
	q := query{pk: ChatRoomPK(roomID), skPrefix: SKPrefixMessage, skFrom: SKPrefixMessage + after + "$", skTo: "MSG$", page: p}
	next, err := s.queryPage(ctx, q, decodeInto(s.Store, &out))
	return out, next, err
}

// EachRoomConnection calls fn with each live connection of a room as the
// room's index is read (a page, up to 1 MB, at a time), so a broadcast
// pushes to the first connections while later pages are read; it stops at
// fn's first error. A connection that cannot be decoded is quarantined,
// not passed on.
func (s Chat) EachRoomConnection(ctx context.Context, roomID string, nowUnix int64, fn func(chat.Connection) error) error {
	q := query{index: IndexGSI1, pk: ChatRoomPK(roomID), skPrefix: prefixConnection, liveAt: nowUnix}
	return s.queryAll(ctx, q, func(it map[string]types.AttributeValue) error {
		var c chat.Connection
		if !s.decode(it, &c) {
			return nil
		}
		return fn(c)
	})
}

// DeleteGoneConnection deletes a connection API Gateway says is gone,
// unless it connected after cutoff (a stored timestamp): a push that races
// a $connect still in progress is refused as gone too, and must not delete
// the connection being made. It reports whether it deleted.
func (s Chat) DeleteGoneConnection(ctx context.Context, c chat.Connection, cutoff string) (bool, error) {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: ConnectionKey(c.ConnectionID).AV(),
		ConditionExpression:       aws.String("connectedAt <= :cutoff"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":cutoff": strAV(cutoff)}})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: delete gone connection: %w", err)
	}
	return true, s.unregisterConnection(ctx, c.UserID, c.ConnectionID)
}

// ChatAudience is who may read a search room's chat now: Exists says the
// room is there (a deleted room's chat is for nobody), Members are its
// current members.
type ChatAudience struct {
	Exists  bool
	Members map[string]bool
}

// May says whether userID may read the chat now.
func (a ChatAudience) May(userID string) bool { return a.Exists && a.Members[userID] }

// ChatAudience reads, in one consistent Query, a search room's item and
// its Member items (their sort keys, MEMBER#… and ROOM, are one range of
// the partition), so a push that follows it reaches nobody removed before
// it began.
func (s Chat) ChatAudience(ctx context.Context, roomID string) (ChatAudience, error) {
	a := ChatAudience{Members: map[string]bool{}}
	q := query{pk: RoomPK(roomID), skFrom: SKPrefixMember, skTo: SKRoom, consistent: true}
	err := s.queryAll(ctx, q, func(it map[string]types.AttributeValue) error {
		switch k := itemKey(it); {
		case k.SK == SKRoom:
			a.Exists = true
		case strings.HasPrefix(k.SK, SKPrefixMember):
			a.Members[strings.TrimPrefix(k.SK, SKPrefixMember)] = true
		}
		return nil
	})
	if err != nil {
		return ChatAudience{}, fmt.Errorf("store: chat audience of %s: %w", roomID, err)
	}
	return a, nil
}

// CloseConnectionIn marks a connection as being closed if it is still in
// roomID (one that moved to another room meanwhile is left alone), and
// reports whether it did: the socket may then be closed and the item
// deleted (DeleteConnectionIn). The mark (closing = roomID) keeps the
// connection from moving to another room (MoveConnection refuses it), and
// keeps it in the room's index, so a closure that crashed after closing
// the socket and before deleting the item finds it again on its retry. A
// closure that fails for good (its record dead-lettered) leaves the mark
// until the connection's ttl: the socket is then refused a move, which is
// what its user, removed from the room, should get anyway.
func (s Chat) CloseConnectionIn(ctx context.Context, c chat.Connection, roomID string) (bool, error) {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: ConnectionKey(c.ConnectionID).AV(),
		UpdateExpression:          aws.String("SET closing = :r"),
		ConditionExpression:       aws.String("roomId = :r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": strAV(roomID)}})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: close connection %s: %w", c.ConnectionID, err)
	}
	return true, nil
}

// DeleteConnectionIn deletes a connection if it is still in roomID (one
// that moved to another room meanwhile is kept); an absent one is nothing
// to do. It reports whether it deleted.
func (s Chat) DeleteConnectionIn(ctx context.Context, c chat.Connection, roomID string) (bool, error) {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.Table), Key: ConnectionKey(c.ConnectionID).AV(),
		ConditionExpression:       aws.String("roomId = :r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": strAV(roomID)}})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: delete connection %s: %w", c.ConnectionID, err)
	}
	return true, s.unregisterConnection(ctx, c.UserID, c.ConnectionID)
}

// FrameLimit bounds the frames one connection sends: at most Frames in
// each window of Per.
type FrameLimit struct {
	Frames int
	Per    time.Duration
}

// TypeConnectionFrames is a connection's frame count: CONN#<id> / FRAMES.
const TypeConnectionFrames = "ConnectionFrames"

// FramesKey is the key of a connection's frame count. It is an item of its
// own, without index keys: a frame written to the connection's item would
// also write that item's GSI1 entry, in the room's partition
// (CHATROOM#<roomId>), so every frame in a busy room would write the
// room's index.
func FramesKey(connectionID string) Key { return Key{prefixConnection + connectionID, "FRAMES"} }

// TakeFrame counts one frame of a connection against its limit and
// returns the connection: NotFound when it is unknown or expired, TooMany
// (with when the window ends) when it has sent its frames for the window.
// The count lives in the connection's FRAMES item (frames, frameWindow;
// ttl a day after the window), so it holds across the writer's instances,
// at one write per frame; the connection is read beside it, at once.
// (Builds before kept the count on the connection's own item; a
// connection made by one starts its count again here, once.)
func (s Chat) TakeFrame(ctx context.Context, connectionID string, now time.Time, l FrameLimit) (chat.Connection, error) {
	var conn chat.Connection
	var connErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: ConnectionKey(connectionID).AV(), ConsistentRead: aws.Bool(true)})
		switch {
		case err != nil:
			connErr = fmt.Errorf("store: read connection %s: %w", connectionID, err)
		case out.Item == nil:
			connErr = errs.New(errs.NotFound, "connection %s not found", connectionID)
		default:
			conn, connErr = s.liveConnection(out.Item, connectionID, now)
		}
	}()
	countErr := s.countFrame(ctx, connectionID, now, l)
	<-done
	if connErr != nil {
		return chat.Connection{}, connErr
	}
	return conn, countErr
}

// countFrame counts one frame in the connection's FRAMES item.
func (s Chat) countFrame(ctx context.Context, connectionID string, now time.Time, l FrameLimit) error {
	window := now.UnixMilli() / l.Per.Milliseconds()
	num := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	k := FramesKey(connectionID).AV()
	for attempt := 0; attempt < 3; attempt++ {
		_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: k,
			UpdateExpression:                    aws.String("SET frames = frames + :one"),
			ConditionExpression:                 aws.String("frameWindow = :w AND frames < :max"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":one": num(1), ":w": num(window), ":max": num(int64(l.Frames))},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		var cf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &cf):
			return fmt.Errorf("store: count a frame of %s: %w", connectionID, err)
		}
		if w, ok := cf.Item["frameWindow"].(*types.AttributeValueMemberN); ok && w.Value == strconv.FormatInt(window, 10) {
			e := errs.New(errs.TooMany, "too many frames: at most %d in %s; wait a moment", l.Frames, l.Per)
			e.RetryAfter = time.UnixMilli((window + 1) * l.Per.Milliseconds()).Sub(now)
			return e
		}
		// A new window (or the connection's first frame): its first frame.
		ttl := time.UnixMilli((window + 1) * l.Per.Milliseconds()).Add(24 * time.Hour).Unix()
		_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.Table), Key: k,
			UpdateExpression:          aws.String("SET frames = :one, frameWindow = :w, itemType = :t, #ttl = :ttl"),
			ConditionExpression:       aws.String("attribute_not_exists(frameWindow) OR frameWindow < :w"),
			ExpressionAttributeNames:  map[string]string{"#ttl": "ttl"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":w": num(window), ":t": strAV(TypeConnectionFrames), ":ttl": num(ttl)}})
		if err == nil {
			return nil
		}
		if !isConditionFailed(err) {
			return fmt.Errorf("store: count a frame of %s: %w", connectionID, err)
		}
		// Another frame opened the window meanwhile: count against it.
	}
	return errs.New(errs.Unavailable, "connection %s: its frame count is contended; try again", connectionID)
}

// liveConnection decodes a connection item; an expired one is NotFound.
func (s Chat) liveConnection(item map[string]types.AttributeValue, connectionID string, now time.Time) (chat.Connection, error) {
	var c chat.Connection
	if err := attributevalue.UnmarshalMap(item, &c); err != nil {
		return c, fmt.Errorf("store: decode connection %s: %w", connectionID, err)
	}
	if c.TTL <= now.Unix() {
		return chat.Connection{}, errs.New(errs.NotFound, "connection %s not found", connectionID)
	}
	return c, nil
}
