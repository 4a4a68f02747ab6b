package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/coder/websocket"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/proc"
	"github.com/dynastream/dynastream/internal/store"
)

// TestLocalStack runs what `make run` runs — the real binaries — and walks
// the README: two users, a room, a member, criteria for both, then the
// derived combined criteria and compatibility. Then it stops the stack with
// SIGINT, as Ctrl-C does, and checks that no process is left behind.
func TestLocalStack(t *testing.T) { walkREADME(t) }

// TestLocalStackOnKinesis walks the README on `STREAM_SOURCE=kinesis make
// run`: the consumers read a Kinesis data stream on moto_server that the
// table's changes are carried into, each with a chance of a fifth to be
// put twice and a fifth to be put after its item's next change (where one
// comes in the same batch: rare at a walkthrough's pace), and every answer
// is the same.
func TestLocalStackOnKinesis(t *testing.T) {
	logs := walkREADME(t, "STREAM_SOURCE=kinesis", "KINESIS_REPEAT=0.2", "KINESIS_REORDER=0.2", "KINESIS_SEED=7")
	if !strings.Contains(logs, "the consumers read it") || !strings.Contains(logs, `"msg":"moto_server stopped"`) {
		t.Error("the logs do not say the consumers read a Kinesis stream on moto_server, then stopped it")
	}
	var stopped struct{ Changes, Repeated, Reordered int }
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"msg":"the Kinesis destination stopped"`) {
			_ = json.Unmarshal([]byte(line), &stopped)
		}
	}
	t.Logf("the Kinesis destination: %+v", stopped)
	if stopped.Changes == 0 || stopped.Repeated == 0 {
		t.Errorf("the Kinesis destination carried %d changes and repeated %d: want both above 0", stopped.Changes, stopped.Repeated)
	}
}

// walkREADME is TestLocalStack with env added to devstack's; it returns
// the stack's logs.
func walkREADME(t *testing.T, env ...string) string {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "../writer", "../projector", "../notifier", ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build: %v", err)
	}
	ddbPort, err := ddblocal.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	httpPort, err := ddblocal.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "devstack"))
	cmd.Env = append(os.Environ(),
		"BIN_DIR="+bin, "LOCAL_DIR="+local, "DYNAMODB_TABLE_NAME=search-room",
		"DYNAMODB_LOCAL_PORT="+strconv.Itoa(ddbPort), "WRITER_ADDR=127.0.0.1:"+strconv.Itoa(httpPort),
		"STREAM_POLL_INTERVAL=50ms")
	cmd.Env = append(cmd.Env, env...)
	proc.Group(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Kill(cmd.Process) })
	var logs bytes.Buffer
	up, scanned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "local stack up") {
				once = true
				close(up)
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(60 * time.Second):
		t.Fatalf("stack not up after 60 s:\n%s", logs.String())
	}

	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	call := func(method, path, token, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		switch { // as the README's curl commands send them
		case path == "/dev/tokens":
			req.Header.Set("Content-Type", "application/json")
		case body != "":
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // curl -d
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	// What a web page could send the local stack is refused: a rebound
	// name, a body a form can send without a preflight, a cross-site push,
	// an unsigned management call.
	for name, c := range map[string]struct {
		method, path, host, ctype, site string
		want                            int
	}{
		"DNS rebinding":             {"POST", "/dev/tokens", "rebind.evil.example:" + strconv.Itoa(httpPort), "application/json", "", 421},
		"a token from a text/plain": {"POST", "/dev/tokens", "", "text/plain", "", 415},
		"a cross-site push":         {"POST", "/@connections/abc", "", "text/plain", "cross-site", 403},
		"an unsigned push":          {"POST", "/@connections/abc", "", "text/plain", "", 403},
		"an unsigned read":          {"GET", "/@connections/abc", "", "", "", 403},
		"an unsigned close":         {"DELETE", "/@connections/abc", "", "", "", 403},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(`{"userId":"root","groups":["admins"]}`))
		if c.host != "" {
			req.Host = c.host
		}
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || strings.Contains(string(b), "token") && resp.StatusCode < 300 {
			t.Errorf("%s: %d %s, want %d", name, resp.StatusCode, b, c.want)
		}
	}

	alice := call("POST", "/dev/tokens", "", `{"userId":"alice"}`, 201)["token"].(string)
	bob := call("POST", "/dev/tokens", "", `{"userId":"bob"}`, 201)["token"].(string)
	roomID := call("POST", "/rooms", alice, `{"name":"Flat in Zurich","searchType":"rent","context":{"combineMode":"strict"}}`, 201)["roomId"].(string)
	call("POST", "/rooms/"+roomID+"/members", alice, `{"userId":"bob"}`, 201)
	call("PUT", "/rooms/"+roomID+"/criteria", alice, `{"criteria":{"locations":["Zurich","Basel"],"priceMin":1500,"priceMax":3000,"roomsMin":3,"features":["balcony"]},"weights":{"price":5}}`, 201)
	call("PUT", "/rooms/"+roomID+"/criteria", bob, `{"criteria":{"locations":["Zurich"],"priceMin":2000,"priceMax":3500,"roomsMin":2,"roomsMax":4,"features":["lift"]}}`, 201)
	put := time.Now()

	var compat map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest("GET", base+"/rooms/"+roomID+"/compatibility", nil)
		req.Header.Set("Authorization", "Bearer "+bob)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			_ = json.Unmarshal(b, &compat)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("compatibility not derived after 10 s: %s\n%s", b, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("PUT criteria → compatibility visible: %v", time.Since(put).Round(time.Millisecond))
	if compat["scorePercent"] != float64(50) || compat["level"] != "medium" {
		t.Errorf("compatibility = %v, want 50%% medium (README)", compat)
	}
	comb := call("GET", "/rooms/"+roomID+"/combined-criteria", bob, "", 200)
	crit, _ := json.Marshal(comb["criteria"])
	if string(crit) != `{"features":["balcony","lift"],"locations":["Zurich"],"priceMax":3000,"priceMin":2000,"roomsMax":4,"roomsMin":3}` {
		t.Errorf("combined criteria = %s", crit)
	}
	// The notifier sees the derived snapshot on the stream after the
	// projector wrote it: wait for it.
	var outbox []byte
	waitUntil(t, "CompatibilityUpdated in the outbox", func() bool {
		outbox, _ = os.ReadFile(filepath.Join(local, "outbox", "events.jsonl"))
		return bytes.Contains(outbox, []byte(`"detailType":"CompatibilityUpdated"`))
	})
	// The third consumer, on the projector's reader: the audit trail has
	// the criteria versions (core changes), and none of the derived items.
	waitUntil(t, "the criteria in the audit trail", func() bool {
		trail, _ := os.ReadFile(filepath.Join(local, "audit.jsonl"))
		return bytes.Count(trail, []byte(`"itemType":"Criteria"`)) == 2
	})
	if trail, _ := os.ReadFile(filepath.Join(local, "audit.jsonl")); bytes.Contains(trail, []byte(`"itemType":"Compatibility"`)) {
		t.Errorf("the audit trail has derived items:\n%s", trail)
	}

	// The bad item: another writer puts a Criteria item whose
	// criteria is a string. Its record is dead-lettered at once, the item
	// is quarantined, and the room's next change derives as usual.
	clients, err := ddb.New(context.Background(), ddb.Config{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", ddbPort)})
	if err != nil {
		t.Fatal(err)
	}
	bad := store.CriteriaKey(roomID, "bob", store.Timestamp(time.Now()))
	_, err = clients.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("search-room"), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: bad.PK}, "SK": &types.AttributeValueMemberS{Value: bad.SK},
		"itemType": &types.AttributeValueMemberS{Value: store.TypeCriteria}, "roomId": &types.AttributeValueMemberS{Value: roomID},
		"userId": &types.AttributeValueMemberS{Value: "bob"}, "criteria": &types.AttributeValueMemberS{Value: "Zurich, 3 rooms"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	deadLetters := filepath.Join(local, "deadletters", "projector.jsonl")
	waitUntil(t, "the bad record in the projector's dead letters", func() bool {
		b, _ := os.ReadFile(deadLetters)
		return bytes.Contains(b, []byte(bad.SK))
	})
	before := compat["timestamp"]
	call("PUT", "/rooms/"+roomID+"/criteria", alice, `{"criteria":{"locations":["Zurich"],"priceMin":1500,"priceMax":3000,"roomsMin":3,"features":["balcony"]},"weights":{"price":5}}`, 201)
	waitUntil(t, "a compatibility snapshot after the bad item", func() bool {
		c := call("GET", "/rooms/"+roomID+"/compatibility", bob, "", 200)
		return c["timestamp"] != before
	})
	q := exec.Command(filepath.Join(bin, "projector"), "quarantine")
	q.Env = append(os.Environ(), "DYNAMODB_TABLE_NAME=search-room", fmt.Sprintf("DYNAMODB_ENDPOINT=http://127.0.0.1:%d", ddbPort), "LOCAL_DIR="+local)
	qout, err := q.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !bytes.Contains(qout, []byte(bad.SK)) || bytes.Count(qout, []byte("\n")) != 1 {
		t.Errorf("projector quarantine: %v, output:\n%s", err, qout)
	}
	if _, err := clients.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("search-room"), Key: bad.AV()}); err != nil {
		t.Fatal(err)
	}

	// docs/walkthrough.md's first part: listings, their lifecycle, the feed, leaving
	// and deleting the room.
	listing := call("POST", "/rooms/"+roomID+"/listings", bob, `{"sourceBrand":"homegate","externalId":"HG-4711","title":"3.5 rooms near the lake","location":"Zurich","price":2800}`, 201)["listingId"].(string)
	dup := call("POST", "/rooms/"+roomID+"/listings", alice, `{"sourceBrand":"homegate","externalId":"HG-4711","title":"same again","location":"Zurich"}`, 409)
	if dup["existingListingId"] != listing {
		t.Errorf("duplicate listing: %v, want existingListingId %s", dup, listing)
	}
	if seen := call("POST", "/rooms/"+roomID+"/listings/"+listing+"/seen", alice, "", 200); seen["status"] != "SEEN" {
		t.Errorf("after seen: %v", seen)
	}
	call("PUT", "/rooms/"+roomID+"/listings/"+listing+"/status", alice, `{"status":"VISIT_PLANNED"}`, 200)
	call("PUT", "/rooms/"+roomID+"/listings/"+listing+"/status", alice, `{"status":"UNSEEN"}`, 409)
	if got := call("GET", "/rooms/"+roomID+"/listings?status=VISIT_PLANNED", bob, "", 200)["items"].([]any); len(got) != 1 {
		t.Errorf("listings by status: %v", got)
	}
	call("GET", "/rooms/"+roomID+"/listings/lookup?sourceBrand=homegate&externalId=HG-4711", bob, "", 200)
	waitUntil(t, "the status change in the feed", func() bool {
		items := call("GET", "/rooms/"+roomID+"/activities?limit=3", bob, "", 200)["items"].([]any)
		return len(items) > 0 && items[0].(map[string]any)["type"] == "ListingStatusChanged" && items[0].(map[string]any)["to"] == "VISIT_PLANNED"
	})
	call("DELETE", "/rooms/"+roomID+"/members/bob", bob, "", 204)
	call("DELETE", "/rooms/"+roomID, alice, "", 202)
	waitUntil(t, "the room's cascade", func() bool {
		return len(call("GET", "/me/rooms", alice, "", 200)["items"].([]any)) == 0
	})

	// docs/walkthrough.md's collaboration part: invite (an .eml appears), accept,
	// comment with a mention, react, counts and notifications.
	call("PUT", "/me/profile", alice, `{"name":"Alice","email":"alice@example.com"}`, 200)
	call("PUT", "/me/profile", bob, `{"name":"Bob","email":"bob@example.com"}`, 200)
	goal := call("POST", "/resources", alice, `{"resourceType":"goal","title":"Run a marathon"}`, 201)["resourceId"].(string)
	invite := call("POST", "/resources/goal/"+goal+"/invites", alice, `{"inviteeId":"bob","message":"Join me <3"}`, 201)["inviteId"].(string)
	mailDir := filepath.Join(local, "outbox", "mail")
	waitUntil(t, "the invite e-mail", func() bool { return countEML(t, mailDir, "To: bob@example.com", "invited you to collaborate") == 1 })
	// its link leads to a page of the writer's that says how to accept
	link := base + "/app/invites/goal/" + goal + "/" + invite
	if countEML(t, mailDir, "To: bob@example.com", "Accept the invite: "+link) != 1 {
		t.Errorf("the invite e-mail has no link %s", link)
	}
	if resp, err := http.Get(link); err != nil {
		t.Error(err)
	} else {
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(page), "/resources/goal/"+goal+"/invites/"+invite+"/accept") {
			t.Errorf("GET %s: %s\n%s", link, resp.Status, page)
		}
	}
	if got := call("GET", "/me/invites?status=pending", bob, "", 200)["items"].([]any); len(got) != 1 {
		t.Errorf("pending invites: %v", got)
	}
	call("POST", "/resources/goal/"+goal+"/invites/"+invite+"/accept", bob, "", 200)
	comment := call("POST", "/resources/goal/"+goal+"/comments", bob, `{"text":"Count me in, @alice! <b>Sundays</b>?"}`, 201)
	if comment["text"] != "Count me in, @alice! &lt;b&gt;Sundays&lt;/b&gt;?" {
		t.Errorf("stored text %q", comment["text"])
	}
	commentID := comment["commentId"].(string)
	call("PUT", "/comments/"+commentID+"/reactions/%F0%9F%91%8D", alice, "", 201)
	waitUntil(t, "the reaction count", func() bool {
		counts, _ := call("GET", "/comments/"+commentID, alice, "", 200)["reactionCounts"].(map[string]any)
		return counts["👍"] == float64(1)
	})
	waitUntil(t, "the mention e-mail and notification", func() bool {
		notes := call("GET", "/me/notifications", alice, "", 200)["items"].([]any)
		return len(notes) == 1 && countEML(t, mailDir, "To: alice@example.com", "mentioned you") == 1
	})

	// docs/walkthrough.md's cooking part: an ingredient found by its name in capitals,
	// a recipe, a cooking and a session completed twice, then what the
	// projector derives — the exact rating, recent and trending cookings.
	ga := call("POST", "/ingredients", alice, `{"name":"Thịt gà"}`, 201)
	if ga["normalizedName"] != "thit-ga" {
		t.Errorf("ingredient %v", ga)
	}
	if got := call("GET", "/ingredients?name=TH%E1%BB%8AT%20G%C3%80", bob, "", 200)["items"].([]any); len(got) != 1 {
		t.Errorf("ingredients named THỊT GÀ: %v", got)
	}
	recipe := call("POST", "/recipes", alice, `{"title":"Gà xào sả ớt","method":"stir-fry","servings":2,"steps":["Chop","Fry"],"ingredients":[{"ingredientId":"`+ga["ingredientId"].(string)+`","quantity":300,"unit":"g"}]}`, 201)["recipeId"].(string)
	recipe2 := call("POST", "/recipes", alice, `{"title":"Phở gà","method":"simmer","servings":4,"steps":["Simmer"],"ingredients":[{"ingredientId":"`+ga["ingredientId"].(string)+`","quantity":500,"unit":"g"}]}`, 201)["recipeId"].(string)
	call("POST", "/me/cooking-history", bob, `{"recipeId":"`+recipe+`","cookDate":"2025-12-29T19:30:00+07:00","rating":5,"favorite":true}`, 201)
	session := call("POST", "/me/cooking-sessions", alice, `{"recipeId":"`+recipe+`"}`, 201)["sessionId"].(string)
	call("PUT", "/me/cooking-sessions/"+session+"/step", alice, `{"step":1}`, 200)
	first := call("POST", "/me/cooking-sessions/"+session+"/complete", alice, `{"rating":4}`, 201)
	if again := call("POST", "/me/cooking-sessions/"+session+"/complete", alice, `{"rating":4}`, 200); again["historyId"] != first["historyId"] {
		t.Errorf("completed twice: %v then %v", first, again)
	}
	waitUntil(t, "the recipe's rating", func() bool {
		items := call("GET", "/recipes?method=stir-fry", bob, "", 200)["items"].([]any)
		return len(items) == 1 && items[0].(map[string]any)["ratingCount"] == float64(2) && items[0].(map[string]any)["avgRating"] == 4.5
	})
	waitUntil(t, "recent and trending cookings", func() bool {
		recent := call("GET", "/cooking/recent?month=2025-12", bob, "", 200)["items"].([]any)
		trend := call("GET", "/cooking/trending?week=2026-W01", bob, "", 200)["items"].([]any)
		return len(recent) == 1 && len(trend) == 1 && trend[0].(map[string]any)["count"] == float64(1)
	})
	if favs := call("GET", "/me/cooking-favorites", bob, "", 200)["items"].([]any); len(favs) != 1 {
		t.Errorf("bob's favourites: %v", favs)
	}
	// bob rated alice's stir-fry 5: her other recipe is suggested to him
	waitUntil(t, "bob's suggestion", func() bool {
		items, _ := call("GET", "/me/suggestions", bob, "", 200)["items"].([]any)
		return len(items) == 1 && items[0].(map[string]any)["recipeId"] == recipe2
	})

	// docs/walkthrough.md's chat part: two WebSocket clients in a room each get the
	// other's message, through the table, the stream and the notifier; a
	// connection whose client vanished (its writer died before
	// $disconnect) is deleted when a push finds it gone.
	st := store.New(clients.DB, "search-room")
	stale := chat.Connection{ConnectionID: "vanished", UserID: "carol", RoomID: "kitchen",
		ConnectedAt: store.Timestamp(time.Now().Add(-time.Hour)), TTL: time.Now().Add(time.Hour).Unix()}
	if err := st.Chat.Connect(context.Background(), stale); err != nil {
		t.Fatal(err)
	}
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws?roomId=kitchen&token="
	dial := func(tok string) *websocket.Conn {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, ws+tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Frames come in any order (a push may arrive before the answer to
	// one's own message): each connection's frames are kept as read.
	got := map[*websocket.Conn]map[string]bool{}
	readUntil := func(c *websocket.Conn, typ, content string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if got[c] == nil {
			got[c] = map[string]bool{}
		}
		for !got[c][typ+" "+content] {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for a %s frame %q: %v", typ, content, err)
			}
			var f chat.Outbound
			if json.Unmarshal(b, &f) == nil && f.Message != nil {
				got[c][f.Type+" "+f.Message.Content] = true
			}
		}
	}
	ca, cb := dial(alice), dial(bob)
	for c, text := range map[*websocket.Conn]string{ca: "Pho tonight?", cb: "Yes! <3"} {
		if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"action":"sendMessage","content":"`+text+`"}`)); err != nil {
			t.Fatal(err)
		}
		readUntil(c, chat.FrameSent, text)
	}
	readUntil(ca, chat.FrameMessage, "Yes! <3")
	readUntil(cb, chat.FrameMessage, "Pho tonight?")
	waitUntil(t, "the vanished connection's cleanup", func() bool {
		_, err := st.Chat.GetConnection(context.Background(), "vanished", time.Now().Unix())
		return errs.Is(err, errs.NotFound)
	})
	if got := call("GET", "/chat/rooms/kitchen/messages", bob, "", 200)["items"].([]any); len(got) != 2 {
		t.Errorf("kitchen history: %v", got)
	}
	_ = ca.Close(websocket.StatusNormalClosure, "")
	_ = cb.Close(websocket.StatusNormalClosure, "")

	// A search room's chat: once bob is removed, his open socket gets
	// nothing sent after the removal and is closed by the notifier (through
	// the management endpoint); once the room is deleted, alice's too, and
	// nobody connects to its chat again.
	flat := call("POST", "/rooms", alice, `{"name":"Flat in Bern","searchType":"rent"}`, 201)["roomId"].(string)
	call("POST", "/rooms/"+flat+"/members", alice, `{"userId":"bob"}`, 201)
	ws = "ws" + strings.TrimPrefix(base, "http") + "/ws?roomId=" + flat + "&token="
	fa, fb := dial(alice), dial(bob)
	if err := fa.Write(context.Background(), websocket.MessageText, []byte(`{"action":"sendMessage","content":"before"}`)); err != nil {
		t.Fatal(err)
	}
	readUntil(fb, chat.FrameMessage, "before")
	call("DELETE", "/rooms/"+flat+"/members/bob", alice, "", 204)
	if err := fa.Write(context.Background(), websocket.MessageText, []byte(`{"action":"sendMessage","content":"after"}`)); err != nil {
		t.Fatal(err)
	}
	readUntil(fa, chat.FrameMessage, "after")
	// bob's socket: read to its end; "after" never comes, the close does.
	closedBy := func(c *websocket.Conn) (websocket.StatusCode, []string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var contents []string
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return websocket.CloseStatus(err), contents
			}
			var f chat.Outbound
			if json.Unmarshal(b, &f) == nil && f.Message != nil {
				contents = append(contents, f.Type+" "+f.Message.Content)
			}
		}
	}
	if code, frames := closedBy(fb); code != websocket.StatusNormalClosure || strings.Contains(fmt.Sprint(frames), "after") {
		t.Errorf("bob's socket after his removal: closed with %v, frames %q; want a normal closure and no \"after\"", code, frames)
	}
	call("DELETE", "/rooms/"+flat, alice, "", 202)
	if code, _ := closedBy(fa); code != websocket.StatusNormalClosure {
		t.Errorf("alice's socket after the room's deletion: closed with %v, want a normal closure", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if _, res, err := websocket.Dial(ctx, ws+alice, nil); err == nil || res == nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("connecting to a deleted room's chat: %v %v, want 404", err, res)
	}
	cancel()
	call("GET", "/chat/rooms/"+flat+"/messages", alice, "", 404)

	// Ctrl-C: the stack stops by itself, and leaves no process behind.
	children := descendants(cmd.Process.Pid)
	if len(children) < 4 {
		t.Fatalf("expected java + 3 programs under devstack, found %v", children)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("devstack exited with %v after SIGINT", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("devstack still running 20 s after SIGINT:\n%s", logs.String())
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("process %d outlived devstack", pid)
		}
	}
	<-scanned
	return logs.String()
}

// countEML counts the .eml files in dir that contain every one of parts.
func countEML(t *testing.T, dir string, parts ...string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	n := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue // a file being written (EMLDir renames it into place); Glob's * matches a leading dot
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// quoted-printable soft line breaks undone, so a long line is found whole
		b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("=\r\n"), nil), []byte("=\n"), nil)
		all := true
		for _, p := range parts {
			all = all && bytes.Contains(b, []byte(p))
		}
		if all {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// descendants lists the pids whose parent chain leads to pid: from /proc,
// or where there is none (macOS) from ps.
func descendants(pid int) []int {
	parent := map[int]int{}
	if out, err := exec.Command("ps", "-A", "-o", "pid=", "-o", "ppid=").Output(); err == nil && !dirExists("/proc/self") {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				p, _ := strconv.Atoi(f[0])
				pp, _ := strconv.Atoi(f[1])
				parent[p] = pp
			}
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			pp, _ := strconv.Atoi(fields[1])
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if !dirExists("/proc/self") {
		return proc.Running(pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}
