package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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
	lines, quit := make(chan string), make(chan struct{})
	defer close(quit) // the reader of the input stops with run
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-quit:
				return
			}
		}
	}()
	for {
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				return finish(ctx, c, done, answered, pending)
			}
			line = l
		case err := <-done:
			// The connection ended while waiting for input: say so now,
			// not at the next line typed.
			return ended(ctx, err)
		}
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
			select {
			case rerr := <-done: // closed meanwhile: why, rather than the write's error
				return ended(ctx, rerr)
			case <-time.After(time.Second):
				return err
			}
		}
		pending++
	}
}

// answerWait is how long, at the end of input, the client waits for the
// answers to the frames it sent before it closes anyway: a server that
// does not answer must not keep it open for ever. Tests raise it, so that
// a machine slowed by other work does not cut their answers short.
var answerWait = 5 * time.Second

// finish waits, at the end of input, for every frame sent to be answered
// (answerWait at most), then closes the connection.
func finish(ctx context.Context, c *websocket.Conn, done <-chan error, answered <-chan struct{}, pending int) error {
	for wait := time.After(answerWait); pending > 0; pending-- {
		select {
		case <-answered:
		case <-wait:
			pending = 1
		case err := <-done:
			return ended(ctx, err)
		}
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return nil
}

// ended says why the connection ended, when it was not this client's
// doing: the server's close frame (its status and reason: a member removed
// from the room, the room deleted, the server stopping) or the lost
// connection. Interrupted (Ctrl-C), it is nil.
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		reason := ce.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return fmt.Errorf("the server closed the connection: %d (%s): %s", int(ce.Code), ce.Code, reason)
	}
	return fmt.Errorf("connection lost: %w", err)
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
			return err // run says why (ended)
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
