package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/store"
)

// ChatReport is the chat workload's measurements: Connections clients in
// one room (the seed's hot partition), a few of them sending Messages at
// Rate per second; every message is pushed to every connection through
// the table, the stream, the notifier and the writer's management
// endpoint.
type ChatReport struct {
	Connections int     `json:"connections"`
	Rate        float64 `json:"messagesPerSec"`
	Messages    int     `json:"messages"`
	// ConnectSeconds is how long the connections took to open ($connect:
	// a transaction each).
	ConnectSeconds float64 `json:"connectSeconds"`
	// Pushes received (duplicates not counted), expected (messages ×
	// connections), and duplicates (at least once).
	Pushes     int64 `json:"pushes"`
	Expected   int64 `json:"expectedPushes"`
	Duplicates int64 `json:"duplicates"`
	// PushesPerSec is pushes over the time from the first message to the
	// last push.
	PushesPerSec float64 `json:"pushesPerSec"`
	// Latency is message → push: from the message's createdAt (the
	// writer's clock, when it stored it) to its arrival at a client.
	Latency Dist `json:"messageToPush"`
}

func (r *ChatReport) print(w io.Writer) {
	fmt.Fprintf(w, "chat: %d connections in one room (opened in %.1f s), %d messages at %.0f/s\n", r.Connections, r.ConnectSeconds, r.Messages, r.Rate)
	fmt.Fprintf(w, "  pushes %d of %d (%d duplicates dropped), %.0f pushes/s; message → push p50 %s, p99 %s, max %s\n",
		r.Pushes, r.Expected, r.Duplicates, r.PushesPerSec, fms(r.Latency.P50Ms), fms(r.Latency.P99Ms), fms(r.Latency.MaxMs))
}

// chatClient is one measured connection.
type chatClient struct {
	c    *websocket.Conn
	mu   sync.Mutex
	seen map[string]bool
}

// runChat opens conns connections to room on the writer, sends rate
// messages per second for d from the first few, and waits up to drain
// for every push.
func runChat(ctx context.Context, writer string, conns int, rate float64, d, drain time.Duration, progress io.Writer) (*ChatReport, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	// Ten connections a user at most: the writer allows a user 20
	// (api.DefaultChatConnectionsPerUser).
	users := max(50, (conns+9)/10)
	tokens := make([]string, users)
	for i := range tokens {
		res, err := hc.Post(writer+"/dev/tokens", "application/json", strings.NewReader(fmt.Sprintf(`{"userId":"chatter-%02d","name":"Chatter %d"}`, i, i)))
		if err != nil {
			return nil, err
		}
		var t struct{ Token string }
		err = json.NewDecoder(res.Body).Decode(&t)
		res.Body.Close()
		if err != nil || t.Token == "" {
			return nil, fmt.Errorf("dev token: %v", err)
		}
		tokens[i] = t.Token
	}
	const room = "load-chat"
	ws := "ws" + strings.TrimPrefix(writer, "http") + "/ws?roomId=" + room + "&token="
	rep := &ChatReport{Connections: conns, Rate: rate}
	var mu sync.Mutex
	var lat []time.Duration
	var pushes, dups atomic.Int64
	var lastPush atomic.Int64
	clients := make([]*chatClient, conns)
	start := time.Now()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var dialErr atomic.Value
	for i := range clients {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(dctx, ws+tokens[i%users], nil)
			if err != nil {
				dialErr.Store(err)
				return
			}
			c.SetReadLimit(1 << 20)
			clients[i] = &chatClient{c: c, seen: map[string]bool{}}
		})
	}
	wg.Wait()
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				_ = cl.c.CloseNow()
			}
		}
	}()
	if err, _ := dialErr.Load().(error); err != nil {
		return nil, fmt.Errorf("chat: connect: %w", err)
	}
	rep.ConnectSeconds = time.Since(start).Seconds()
	fmt.Fprintf(progress, "chat: %d connections open in %.1f s\n", conns, rep.ConnectSeconds)
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	var readers sync.WaitGroup
	for _, cl := range clients {
		readers.Go(func() {
			for {
				_, b, err := cl.c.Read(rctx)
				if err != nil {
					return
				}
				now := time.Now()
				var f chat.Outbound
				if json.Unmarshal(b, &f) != nil || f.Type != chat.FrameMessage || f.Message == nil {
					continue
				}
				cl.mu.Lock()
				dup := cl.seen[f.Message.MessageID]
				cl.seen[f.Message.MessageID] = true
				cl.mu.Unlock()
				if dup {
					dups.Add(1)
					continue
				}
				pushes.Add(1)
				lastPush.Store(now.UnixNano())
				if at, err := store.ParseTimestamp(f.Message.CreatedAt); err == nil {
					mu.Lock()
					lat = append(lat, now.Sub(at))
					mu.Unlock()
				}
			}
		})
	}
	// Senders: the first few connections, in turn.
	n := int(rate * d.Seconds())
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	first := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		<-tick.C
		frame := fmt.Sprintf(`{"action":"sendMessage","content":"load message %d"}`, i)
		if err := clients[i%min(5, conns)].c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			tick.Stop()
			return nil, fmt.Errorf("chat: send: %w", err)
		}
		rep.Messages++
	}
	tick.Stop()
	rep.Expected = int64(rep.Messages) * int64(conns)
	for end := time.Now().Add(drain); pushes.Load() < rep.Expected && time.Now().Before(end) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
	}
	stopReading()
	readers.Wait()
	rep.Pushes, rep.Duplicates = pushes.Load(), dups.Load()
	if last := lastPush.Load(); last > 0 {
		rep.PushesPerSec = float64(rep.Pushes) / time.Unix(0, last).Sub(first).Seconds()
	}
	rep.Latency = dist(lat)
	return rep, nil
}
