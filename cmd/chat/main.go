package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/dynastream/dynastream/internal/chat"
)

func main() {
	base := flag.String("url", "ws://127.0.0.1:8080/ws", "the chat's WebSocket URL")
	token := flag.String("token", os.Getenv("TOKEN"), "a token (locally: POST /dev/tokens; in AWS: a Cognito ID token)")
	room := flag.String("room", chat.DefaultRoom, "the room to join")
	flag.Parse()
	if err := run(*base, *token, *room, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func run(base, token, room string, in io.Reader, out io.Writer) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	q := u.Query()
	q.Set("token", token)
	q.Set("roomId", room)
	u.RawQuery = q.Encode()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(dctx, u.String(), nil)
	if err != nil {
		if res != nil {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			return fmt.Errorf("refused: %s %s", res.Status, strings.TrimSpace(string(b)))
		}
		return err
	}
	defer c.CloseNow()
	fmt.Fprintf(out, "connected to %s; type a message, /join <room>, /quit (/help)\n", room)
	done := make(chan error, 1)
	answered := make(chan struct{}, 1024) // one per answer (sent, joined or error)
	go func() { done <- printFrames(ctx, c, out, answered) }()
	pending := 0
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), 64<<10)
	for lines.Scan() {
		line := lines.Text()
		var f chat.Inbound
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "//"): // a message that starts with a slash
			f = chat.Inbound{Action: chat.ActionSendMessage, Content: line[1:]}
		case !strings.HasPrefix(line, "/"):
			f = chat.Inbound{Action: chat.ActionSendMessage, Content: line}
		case cmd == "/quit":
			return c.Close(websocket.StatusNormalClosure, "")
		case cmd == "/join" && strings.TrimSpace(arg) != "":
			f = chat.Inbound{Action: chat.ActionJoinRoom, RoomID: strings.TrimSpace(arg)}
		case cmd == "/join":
			fmt.Fprintln(out, "usage: /join <room>")
			continue
		case cmd == "/help":
			fmt.Fprint(out, help)
			continue
		default:
			fmt.Fprintf(out, "unknown command %s (/help lists them; //text sends a message that starts with /)\n", cmd)
			continue
		}
		b, _ := json.Marshal(f)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return err
		}
		pending++
	}
	// End of input: every frame sent gets its answer before the close.
	for wait := time.After(5 * time.Second); pending > 0; pending-- {
		select {
		case <-answered:
		case <-wait:
			pending = 1
		case <-done:
			return nil
		}
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return nil
}

// help is what /help prints.
const help = `a line is sent as a message to the room; commands:
  /join <room>  move to another room
  /quit         close (so does the end of input)
  /help         this
  //text        send "/text" as a message
`

// printFrames prints each frame until the connection ends.
func printFrames(ctx context.Context, c *websocket.Conn, out io.Writer, answered chan<- struct{}) error {
	seen := map[string]bool{}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == -1 && ctx.Err() == nil {
				fmt.Fprintln(out, "connection lost:", err)
			}
			return err
		}
		var f chat.Outbound
		if err := json.Unmarshal(b, &f); err != nil {
			fmt.Fprintf(out, "? %s\n", b)
			continue
		}
		if f.Type != chat.FrameMessage {
			select {
			case answered <- struct{}{}:
			default:
			}
		}
		switch f.Type {
		case chat.FrameMessage:
			if f.Message == nil || seen[f.Message.MessageID] {
				continue // at least once: a message may come again
			}
			seen[f.Message.MessageID] = true
			fmt.Fprintf(out, "[%s] %s: %s\n", f.Message.RoomID, show(f.Message.UserName), show(f.Message.Content))
		case chat.FrameJoined:
			fmt.Fprintf(out, "joined %s\n", f.RoomID)
		case chat.FrameSent:
		case chat.FrameError:
			if f.Field != "" {
				fmt.Fprintf(out, "refused (%s): %s\n", f.Field, f.Reason)
			} else {
				fmt.Fprintf(out, "refused: %s\n", f.Reason)
			}
		}
	}
}

// show prints text as written, with what a terminal would interpret
// (escape sequences, other control characters) escaped.
func show(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
