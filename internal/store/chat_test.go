package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// Seed 002's access patterns on the one table: a connection put on
// connect (with its user and room upserted), got by id, queried by room,
// moved, deleted on disconnect; messages put and paged by time.
func TestChatSeed002(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := func(d time.Duration) string { return store.Timestamp(t0.Add(d)) }
	ttl := t0.Add(chat.ConnectionTTL).Unix()
	conn := func(id, user, name, room string, d time.Duration) chat.Connection {
		return chat.Connection{ConnectionID: id, UserID: user, UserName: name, RoomID: room, ConnectedAt: at(d), TTL: ttl}
	}
	// First connection: the user (no name in the token: the id stands in)
	// and the room are created.
	if err := f.st.Chat.Connect(f.ctx, conn("c1", "an", "", chat.DefaultRoom, 0)); err != nil {
		t.Fatal(err)
	}
	p := f.getRaw("USER#an", "PROFILE")
	if p == nil || p["name"].(*types.AttributeValueMemberS).Value != "an" || p["createdAt"].(*types.AttributeValueMemberS).Value != at(0) ||
		p["GSI1PK"].(*types.AttributeValueMemberS).Value != "USER#an" {
		t.Fatalf("profile: %v", p)
	}
	// A later connection with a name: the name is set, createdAt kept; a
	// name set by PUT /me/profile is kept when the token has none.
	if err := f.st.Chat.Connect(f.ctx, conn("c2", "an", "An Nguyen", chat.DefaultRoom, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Collab.PutProfile(f.ctx, collab.Profile{UserID: "binh", Name: "Bình", UpdatedAt: at(0)}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Chat.Connect(f.ctx, conn("c3", "binh", "", chat.DefaultRoom, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := f.st.Collab.GetProfile(f.ctx, "an"); err != nil || got.Name != "An Nguyen" {
		t.Fatalf("an: %+v %v", got, err)
	}
	if got, err := f.st.Collab.GetProfile(f.ctx, "binh"); err != nil || got.Name != "Bình" {
		t.Fatalf("binh: %+v %v", got, err)
	}
	if p := f.getRaw("USER#an", "PROFILE"); p["createdAt"].(*types.AttributeValueMemberS).Value != at(0) {
		t.Fatalf("createdAt changed: %v", p["createdAt"])
	}
	// PUT /me/profile after the connection made the profile: its createdAt
	// stays, an e-mail left out is removed, the index keys stay.
	if _, err := f.st.Collab.PutProfile(f.ctx, collab.Profile{UserID: "an", Name: "An", Email: "an@example.com", UpdatedAt: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := f.st.Collab.PutProfile(f.ctx, collab.Profile{UserID: "an", Name: "An N.", UpdatedAt: at(2 * time.Hour)})
	if err != nil || got.CreatedAt != at(0) || got.Email != "" || got.Name != "An N." || got.UpdatedAt != at(2*time.Hour) {
		t.Fatalf("profile after two PUTs: %+v %v", got, err)
	}
	if p := f.getRaw("USER#an", "PROFILE"); p["GSI1PK"].(*types.AttributeValueMemberS).Value != "USER#an" || p["email"] != nil {
		t.Fatalf("stored profile: %v", p)
	}
	room := f.getRaw("CHATROOM#global", "META")
	if room == nil || room["createdAt"].(*types.AttributeValueMemberS).Value != at(0) || room["itemType"].(*types.AttributeValueMemberS).Value != "ChatRoom" {
		t.Fatalf("room: %v", room)
	}
	if err := f.st.Chat.Connect(f.ctx, conn("c1", "binh", "", chat.DefaultRoom, 0)); !errs.Is(err, errs.Conflict) {
		t.Fatalf("a connection id taken by another: %v", err)
	}
	// By id, by room (GSI1 CHATROOM#<room> / CONN#<id>), paginated.
	c, err := f.st.Chat.GetConnection(f.ctx, "c2", t0.Unix())
	if err != nil || c.UserName != "An Nguyen" || c.RoomID != chat.DefaultRoom {
		t.Fatalf("get: %+v %v", c, err)
	}
	raw := f.getRaw("CONN#c2", "META")
	if raw["GSI1PK"].(*types.AttributeValueMemberS).Value != "CHATROOM#global" || raw["GSI1SK"].(*types.AttributeValueMemberS).Value != "CONN#c2" {
		t.Fatalf("connection keys: %v", raw)
	}
	var ids []string
	for cur := ""; ; {
		cs, next, err := f.st.Chat.RoomConnections(f.ctx, chat.DefaultRoom, t0.Unix(), store.Page{Limit: 2, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			ids = append(ids, c.ConnectionID)
		}
		if cur = next; cur == "" {
			break
		}
	}
	if fmt.Sprint(ids) != "[c1 c2 c3]" {
		t.Fatalf("room's connections: %v", ids)
	}
	// Expired connections are never returned.
	if _, err := f.st.Chat.GetConnection(f.ctx, "c2", ttl); !errs.Is(err, errs.NotFound) {
		t.Fatalf("expired: %v", err)
	}
	if cs, _, _ := f.st.Chat.RoomConnections(f.ctx, chat.DefaultRoom, ttl, store.Page{}); len(cs) != 0 {
		t.Fatalf("expired in the room: %v", cs)
	}
	// Move; disconnect.
	if err := f.st.Chat.MoveConnection(f.ctx, "c3", "", "kitchen", at(3*time.Minute), false); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Chat.MoveConnection(f.ctx, "nope", "", "kitchen", at(3*time.Minute), false); !errs.Is(err, errs.NotFound) {
		t.Fatalf("move unknown: %v", err)
	}
	if err := f.st.Chat.Disconnect(f.ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if f.getRaw("CONN#c1", "META") != nil {
		t.Fatal("c1 still there")
	}
	g, _, _ := f.st.Chat.RoomConnections(f.ctx, chat.DefaultRoom, t0.Unix(), store.Page{})
	k, _, _ := f.st.Chat.RoomConnections(f.ctx, "kitchen", t0.Unix(), store.Page{})
	if len(g) != 1 || g[0].ConnectionID != "c2" || len(k) != 1 || k[0].ConnectionID != "c3" {
		t.Fatalf("after move and disconnect: global %v, kitchen %v", g, k)
	}
	if r, err := f.st.Chat.GetChatRoom(f.ctx, "kitchen"); err != nil || r.Name != "kitchen" || r.CreatedAt != at(3*time.Minute) {
		t.Fatalf("kitchen: %+v %v", r, err)
	}

	// Messages: two in the same millisecond both kept; newest first,
	// paginated; after a time, oldest first.
	msg := func(id string, d time.Duration) chat.Message {
		return chat.Message{RoomID: "kitchen", MessageID: id, UserID: "binh", UserName: "Bình", Content: "<b>hi</b> " + id, CreatedAt: at(d)}
	}
	for _, m := range []chat.Message{msg("m1", time.Hour), msg("m2", time.Hour), msg("m3", time.Hour+time.Second), msg("m4", time.Hour+2*time.Second)} {
		if err := f.st.Chat.PutMessage(f.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// The same message id again is a Conflict, whatever its content (the
	// writer's clients, ddb.Config.OwnWrites, take the very same message
	// again as done: see internal/api's lost-response test).
	if err := f.st.Chat.PutMessage(f.ctx, msg("m1", time.Hour)); !errs.Is(err, errs.Conflict) {
		t.Fatalf("same message again: %v", err)
	}
	other := msg("m1", time.Hour)
	other.Content = "something else"
	if err := f.st.Chat.PutMessage(f.ctx, other); !errs.Is(err, errs.Conflict) {
		t.Fatalf("same id, other content: %v", err)
	}
	var newest []string
	for cur := ""; ; {
		ms, next, err := f.st.Chat.Messages(f.ctx, "kitchen", store.Page{Limit: 3, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			newest = append(newest, m.MessageID)
		}
		if cur = next; cur == "" {
			break
		}
	}
	if fmt.Sprint(newest) != "[m4 m3 m2 m1]" {
		t.Fatalf("newest first: %v", newest)
	}
	after, _, err := f.st.Chat.MessagesAfter(f.ctx, "kitchen", at(time.Hour), store.Page{})
	if err != nil || len(after) != 2 || after[0].MessageID != "m3" || after[1].MessageID != "m4" || after[0].Content != "<b>hi</b> m3" {
		t.Fatalf("after the first second: %+v %v", after, err)
	}
	if raw := f.getRaw("CHATROOM#kitchen", "MSG#"+at(time.Hour)+"#m2"); raw == nil || raw["itemType"].(*types.AttributeValueMemberS).Value != "Message" {
		t.Fatalf("message key: %v", raw)
	}
}

// A search room's chat: ChatAccess tells a search room's id from a plain
// chat room's and a member from an outsider, and a connection moved into
// it carries the searchRoom flag (out of it, loses it).
func TestChatAccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "Flat", CreatedByUserID: "owner", CreatedAt: store.Timestamp(t0), SearchType: "rent"}); err != nil {
		t.Fatal(err)
	}
	conn := chat.Connection{ConnectionID: "c1", UserID: "owner", RoomID: chat.DefaultRoom, ConnectedAt: store.Timestamp(t0), TTL: t0.Add(chat.ConnectionTTL).Unix()}
	if err := f.st.Chat.Connect(f.ctx, conn); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		room, user string
		want       store.ChatAccess
	}{
		{"r1", "owner", store.ChatAccess{SearchRoom: true, Member: true}},
		{"r1", "outsider", store.ChatAccess{SearchRoom: true}},
		{"global", "owner", store.ChatAccess{ChatRoom: true}},
		{"nowhere", "owner", store.ChatAccess{}},
	} {
		if got, err := f.st.Chat.ChatAccess(f.ctx, c.room, c.user); err != nil || got != c.want {
			t.Errorf("ChatAccess(%s, %s) = %+v, %v; want %+v", c.room, c.user, got, err, c.want)
		}
	}
	for _, search := range []bool{true, false} {
		to := map[bool]string{true: "r1", false: "global"}[search]
		if err := f.st.Chat.MoveConnection(f.ctx, "c1", "owner", to, store.Timestamp(t0), search); err != nil {
			t.Fatal(err)
		}
		if got, err := f.st.Chat.GetConnection(f.ctx, "c1", t0.Unix()); err != nil || got.RoomID != to || got.SearchRoom != search {
			t.Fatalf("moved to %s: %+v %v", to, got, err)
		}
	}
}

// A search room's chat keeps its access in its writes: a member removed
// after their connection was checked can no longer post, connect or join
// (the transaction's member check), and a deleted room's chat is sealed in
// the deletion's own transaction: nobody, not even its owner, connects,
// joins or posts again, ChatAccess says it is sealed, and the cascade
// deletes its messages while the seal stays.
func TestChatSealedAndMembers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := func(d time.Duration) string { return store.Timestamp(t0.Add(d)) }
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r1", Name: "Flat", CreatedByUserID: "alice", CreatedAt: at(0), SearchType: "rent"}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Rooms.AddMember(f.ctx, room.Member{RoomID: "r1", UserID: "bob", Role: room.RoleMember, JoinedAt: at(0)}); err != nil {
		t.Fatal(err)
	}
	conn := func(id, user string) chat.Connection {
		return chat.Connection{ConnectionID: id, UserID: user, RoomID: "r1", ConnectedAt: at(0), TTL: t0.Add(chat.ConnectionTTL).Unix(), SearchRoom: true}
	}
	msg := func(id, user string, d time.Duration) chat.Message {
		return chat.Message{RoomID: "r1", MessageID: id, UserID: user, UserName: user, Content: id, CreatedAt: at(d), SearchRoom: true}
	}
	for _, c := range []chat.Connection{conn("a1", "alice"), conn("b1", "bob")} {
		if err := f.st.Chat.Connect(f.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.st.Chat.Connect(f.ctx, conn("c1", "carol")); !errs.Is(err, errs.NotFound) {
		t.Fatalf("an outsider's connection: %v, want NotFound", err)
	}
	for i, m := range []chat.Message{msg("m1", "alice", time.Second), msg("m2", "bob", 2*time.Second)} {
		if err := f.st.Chat.PutMessage(f.ctx, m); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := f.st.Chat.PutMessage(f.ctx, msg("m2", "bob", 2*time.Second)); !errs.Is(err, errs.Conflict) {
		t.Fatalf("the same message again: %v, want Conflict", err)
	}
	changed := msg("m2", "bob", 2*time.Second)
	changed.Content = "edited"
	if err := f.st.Chat.PutMessage(f.ctx, changed); !errs.Is(err, errs.Conflict) {
		t.Fatalf("the same id with other content: %v, want Conflict", err)
	}
	if a, err := f.st.Chat.ChatAudience(f.ctx, "r1"); err != nil || !a.May("alice") || !a.May("bob") || a.May("carol") {
		t.Fatalf("audience: %+v %v", a, err)
	}

	// bob is removed: his open connection can do nothing in the room.
	if err := f.st.Rooms.RemoveMember(f.ctx, "r1", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Chat.PutMessage(f.ctx, msg("m3", "bob", 3*time.Second)); !errs.Is(err, errs.NotFound) {
		t.Errorf("a removed member's message: %v, want NotFound", err)
	}
	if err := f.st.Chat.Connect(f.ctx, conn("b2", "bob")); !errs.Is(err, errs.NotFound) {
		t.Errorf("a removed member's new connection: %v, want NotFound", err)
	}
	if err := f.st.Chat.MoveConnection(f.ctx, "b1", "bob", "r1", at(3*time.Second), true); !errs.Is(err, errs.NotFound) {
		t.Errorf("a removed member joining again: %v, want NotFound", err)
	}
	if a, err := f.st.Chat.ChatAudience(f.ctx, "r1"); err != nil || a.May("bob") || !a.May("alice") {
		t.Errorf("audience after the removal: %+v %v", a, err)
	}

	// The room is deleted: sealed for everyone.
	if err := f.st.Rooms.DeleteRoom(f.ctx, "r1", at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if a, err := f.st.Chat.ChatAccess(f.ctx, "r1", "alice"); err != nil || !a.Sealed || a.Open() {
		t.Errorf("access after the deletion: %+v %v", a, err)
	}
	if err := f.st.Chat.PutMessage(f.ctx, msg("m4", "alice", time.Minute)); !errs.Is(err, errs.NotFound) {
		t.Errorf("the owner's message after the deletion: %v, want NotFound", err)
	}
	if err := f.st.Chat.Connect(f.ctx, chat.Connection{ConnectionID: "c2", UserID: "carol", RoomID: "r1", ConnectedAt: at(time.Minute), TTL: t0.Add(chat.ConnectionTTL).Unix()}); !errs.Is(err, errs.NotFound) {
		t.Errorf("connecting to the sealed room as to a plain one: %v, want NotFound", err)
	}
	if err := f.st.Chat.MoveConnection(f.ctx, "a1", "alice", "r1", at(time.Minute), false); !errs.Is(err, errs.NotFound) {
		t.Errorf("joining the sealed room as a plain one: %v, want NotFound", err)
	}
	if a, err := f.st.Chat.ChatAudience(f.ctx, "r1"); err != nil || a.May("alice") {
		t.Errorf("audience after the deletion: %+v %v", a, err)
	}
	if err := f.st.Rooms.DeleteRoom(f.ctx, "r1", at(2*time.Minute)); !errs.Is(err, errs.NotFound) {
		t.Errorf("deleting it again: %v, want NotFound", err)
	}
	if n, err := f.st.Rooms.DeleteRoomCascade(f.ctx, "r1"); err != nil || n == 0 {
		t.Fatalf("cascade: %d %v", n, err)
	}
	if ms := f.queryRaw("CHATROOM#r1", "MSG#"); len(ms) != 0 {
		t.Errorf("%d messages left after the cascade", len(ms))
	}
	seal := f.getRaw("CHATROOM#r1", "META")
	if s, _ := seal["sealedAt"].(*types.AttributeValueMemberS); s == nil || s.Value != at(time.Minute) {
		t.Errorf("the seal after the cascade (and a second deletion): %v", seal)
	}
}

// A clientMessageId's record lasts a day: used again after it expired
// (DynamoDB deletes it late, DynamoDB Local never), the id names a new
// message, not the old one (and another content is no conflict).
func TestClientMessageIDExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	msg := func(id, content string, d time.Duration) chat.Message {
		return chat.Message{RoomID: chat.DefaultRoom, MessageID: id, UserID: "an", Content: content, CreatedAt: store.Timestamp(t0.Add(d))}
	}
	first, err := f.st.Chat.PutMessageOnce(f.ctx, msg("m1", "pho?", 0), "c-1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.st.Chat.PutMessageOnce(f.ctx, msg("m2", "pho?", time.Hour), "c-1"); err != nil || again.MessageID != first.MessageID {
		t.Fatalf("the id again within the day: %+v, %v; want the first message", again, err)
	}
	later, err := f.st.Chat.PutMessageOnce(f.ctx, msg("m3", "ramen?", 25*time.Hour), "c-1")
	if err != nil || later.MessageID != "m3" {
		t.Fatalf("the id a day later: %+v, %v; want a new message", later, err)
	}
}

// openConn is a connection of user's to the default room, made at t0.
func openConn(id, user string) chat.Connection {
	return chat.Connection{ConnectionID: id, UserID: user, RoomID: chat.DefaultRoom,
		ConnectedAt: store.Timestamp(t0), TTL: t0.Add(chat.ConnectionTTL).Unix()}
}

// A user's registry of open connections equals the open connections while
// tabs reload (each closes its socket and opens another at once), all at
// the same time: a connect that read the registry before a disconnect
// took an entry out must not write it back.
func TestConnRegistryRacesDisconnects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const tabs, reloads = 6, 12
	l := store.ConnLimit{Open: 20}
	conn := func(tab, n int) chat.Connection { return openConn(fmt.Sprintf("t%d-%d", tab, n), "reloader") }
	errc := make(chan error, tabs)
	for tab := range tabs {
		go func() {
			for n := range reloads {
				if n > 0 {
					if err := f.st.Chat.Disconnect(f.ctx, conn(tab, n-1).ConnectionID); err != nil {
						errc <- err
						return
					}
				}
				// a browser tries again on "try again" (503), as the
				// refusal asks: under a busy machine six tabs at once can
				// outlast a connect's own retries
				err := f.st.Chat.ConnectLimited(f.ctx, conn(tab, n), l)
				for try := 0; errs.Is(err, errs.Unavailable) && try < 5; try++ {
					time.Sleep(time.Duration(50*(try+1)) * time.Millisecond)
					err = f.st.Chat.ConnectLimited(f.ctx, conn(tab, n), l)
				}
				if err != nil {
					errc <- fmt.Errorf("tab %d, reload %d: %w", tab, n, err)
					return
				}
			}
			errc <- nil
		}()
	}
	for range tabs {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	reg := f.getRaw(store.ConnRegistryKey("reloader").PK, "REGISTRY")
	conns := reg["conns"].(*types.AttributeValueMemberM).Value
	if len(conns) != tabs {
		t.Errorf("the registry holds %d connections, want the %d open", len(conns), tabs)
	}
	for tab := range tabs {
		if _, ok := conns[conn(tab, reloads-1).ConnectionID]; !ok {
			t.Errorf("tab %d's open connection is not in the registry", tab)
		}
	}
}

// A registry entry whose connection item is gone (a disconnect that
// stopped between its two writes) is not counted once the user is at the
// limit: the next connect is served, and the entry is gone.
func TestConnRegistryDropsClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := store.ConnLimit{Open: 2}
	conn := func(id string) chat.Connection { return openConn(id, "crashy") }
	for _, id := range []string{"k1", "k2"} {
		if err := f.st.Chat.ConnectLimited(f.ctx, conn(id), l); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("k3"), l); !errs.Is(err, errs.TooMany) {
		t.Fatalf("a third connection: %v, want TooMany", err)
	}
	// k1's item deleted, its registry entry left (the crash).
	k := store.ConnectionKey("k1")
	if _, err := f.db.DeleteItem(f.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.table), Key: k.AV()}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("k3"), l); err != nil {
		t.Fatalf("a connect after k1 went: %v", err)
	}
	conns := f.getRaw(store.ConnRegistryKey("crashy").PK, "REGISTRY")["conns"].(*types.AttributeValueMemberM).Value
	if _, ok := conns["k1"]; ok || len(conns) != 2 {
		t.Errorf("registry %v, want k2 and k3", conns)
	}
}

// A $connect whose transaction committed but whose answer was lost (API
// Gateway refused the socket; no $disconnect comes) leaves an entry and an
// item the gateway does not know. A user at the limit has those older than
// the grace dropped (ConnLimit.Alive), their items deleted; an unknown
// connection younger than the grace (a $connect under way) is kept, and
// without Alive nothing is dropped.
func TestConnRegistryDropsRefusedConnects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	conn := func(id string, age time.Duration) chat.Connection {
		at := t0.Add(-age)
		return chat.Connection{ConnectionID: id, UserID: "tabby", RoomID: chat.DefaultRoom,
			ConnectedAt: store.Timestamp(at), TTL: at.Add(chat.ConnectionTTL).Unix()}
	}
	open := map[string]bool{"live": true}
	var asked []string
	alive := func(_ context.Context, id string) (bool, error) { asked = append(asked, id); return open[id], nil }
	l := store.ConnLimit{Open: 3, Alive: alive}
	for _, c := range []chat.Connection{conn("live", time.Hour), conn("refused", 10*time.Minute), conn("young", 10*time.Second)} {
		if err := f.st.Chat.ConnectLimited(f.ctx, c, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("next", 0), store.ConnLimit{Open: 3}); !errs.Is(err, errs.TooMany) {
		t.Fatalf("at the limit without Alive: %v, want TooMany", err)
	}
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("next", 0), l); err != nil {
		t.Fatalf("at the limit with a refused connect among them: %v", err)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"live", "refused"}) {
		t.Errorf("asked the gateway about %v, want the two older than the grace", asked)
	}
	conns := f.getRaw(store.ConnRegistryKey("tabby").PK, "REGISTRY")["conns"].(*types.AttributeValueMemberM).Value
	if _, ok := conns["refused"]; ok || len(conns) != 3 {
		t.Errorf("registry %v, want live, young and next", conns)
	}
	if it := f.getRaw(store.ConnectionKey("refused").PK, "META"); it != nil {
		t.Errorf("the refused connection's item is still there: %v", it)
	}
	// at the limit again, with every one open or young: TooMany
	asked = nil
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("more", 0), l); !errs.Is(err, errs.TooMany) {
		t.Errorf("at the limit with none refused: %v, want TooMany", err)
	}
}

// Connects are bounded per clock minute: past the bound TooMany with the
// time to the next minute, and the next minute serves the user again.
func TestConnectsPerMinute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := store.ConnLimit{Open: 20, PerMinute: 2}
	start := t0.Truncate(time.Minute).Add(10 * time.Second)
	conn := func(id string, at time.Time) chat.Connection {
		return chat.Connection{ConnectionID: id, UserID: "hopper", RoomID: chat.DefaultRoom,
			ConnectedAt: store.Timestamp(at), TTL: at.Add(chat.ConnectionTTL).Unix()}
	}
	for _, id := range []string{"h1", "h2"} {
		if err := f.st.Chat.ConnectLimited(f.ctx, conn(id, start), l); err != nil {
			t.Fatal(err)
		}
		if err := f.st.Chat.Disconnect(f.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	err := f.st.Chat.ConnectLimited(f.ctx, conn("h3", start), l)
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.TooMany || e.RetryAfter != 50*time.Second {
		t.Fatalf("a third connect in the minute: %v, want TooMany after 50s", err)
	}
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("h3", start.Add(time.Minute)), l); err != nil {
		t.Fatalf("the next minute: %v", err)
	}
}

// The race above made certain: a disconnect lands between a connect's
// read of the registry and its write. The connect must read again, and
// the registry hold only what is open.
func TestConnRegistryConnectAfterItsRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := store.ConnLimit{Open: 20}
	conn := func(id string) chat.Connection { return openConn(id, "tab") }
	if err := f.st.Chat.ConnectLimited(f.ctx, conn("old"), l); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	hooked := dynamodb.New(f.db.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("disconnect-between", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if _, ok := in.Parameters.(*dynamodb.GetItemInput); ok && err == nil {
					once.Do(func() {
						if derr := f.st.Chat.Disconnect(ctx, "old"); derr != nil {
							t.Error(derr)
						}
					})
				}
				return out, md, err
			}), middleware.After)
		})
	})
	if err := store.New(hooked, f.table).Chat.ConnectLimited(f.ctx, conn("new"), l); err != nil {
		t.Fatal(err)
	}
	conns := f.getRaw(store.ConnRegistryKey("tab").PK, "REGISTRY")["conns"].(*types.AttributeValueMemberM).Value
	if _, ok := conns["old"]; ok || len(conns) != 1 {
		t.Errorf("registry %v, want only the new connection", conns)
	}
}

// A frame is counted in the connection's FRAMES item, which has no index
// keys, so a frame writes nothing in the room's GSI1 partition; the limit
// holds per window, and an unknown connection is NotFound.
func TestTakeFrameKeepsTheRoomsIndex(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := f.st.Chat.Connect(f.ctx, openConn("c1", "an")); err != nil {
		t.Fatal(err)
	}
	before := f.getRaw("CONN#c1", "META")
	l := store.FrameLimit{Frames: 3, Per: time.Minute}
	now := t0.Truncate(time.Minute).Add(time.Second)
	for i := range 3 {
		c, err := f.st.Chat.TakeFrame(f.ctx, "c1", now, l)
		if err != nil || c.ConnectionID != "c1" || c.RoomID != chat.DefaultRoom {
			t.Fatalf("frame %d: %+v %v", i, c, err)
		}
	}
	if _, err := f.st.Chat.TakeFrame(f.ctx, "c1", now, l); !errs.Is(err, errs.TooMany) {
		t.Fatalf("a fourth frame in the window: %v", err)
	}
	if _, err := f.st.Chat.TakeFrame(f.ctx, "c1", now.Add(time.Minute), l); err != nil {
		t.Fatalf("the next window's first frame: %v", err)
	}
	if after := f.getRaw("CONN#c1", "META"); !cmpItems(before, after) {
		t.Errorf("the connection's item changed:\n%v\n%v", before, after)
	}
	frames := f.getRaw("CONN#c1", "FRAMES")
	if frames["frames"].(*types.AttributeValueMemberN).Value != "1" || frames["GSI1PK"] != nil || frames["itemType"].(*types.AttributeValueMemberS).Value != store.TypeConnectionFrames || frames["ttl"] == nil {
		t.Errorf("frames item: %v", frames)
	}
	if _, err := f.st.Chat.TakeFrame(f.ctx, "nobody", now, l); !errs.Is(err, errs.NotFound) {
		t.Errorf("an unknown connection: %v", err)
	}
}

func cmpItems(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if fmt.Sprint(v) != fmt.Sprint(b[k]) {
			return false
		}
	}
	return true
}
