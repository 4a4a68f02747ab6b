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

	"github.com/dynastream/dynastream/cmd/internal/app"
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
	// Quiet is another room meanwhile: QuietConnections connections, a
	// message a second; its message → push latency says whether the hot
	// room holds the others up.
	QuietConnections int   `json:"quietConnections"`
	QuietPushes      int64 `json:"quietPushes"`
	QuietExpected    int64 `json:"quietExpectedPushes"`
	QuietLatency     Dist  `json:"quietMessageToPush"`
	// CPU seconds per 1,000 pushes while the messages were sent and
	// pushed: the notifier's (what a deployment pays for in Lambda) and
	// the writer's, which is also the local gateway (in AWS, API
	// Gateway's).
	NotifierCPUPer1000 float64 `json:"notifierCpuSecondsPer1000Pushes,omitempty"`
	WriterCPUPer1000   float64 `json:"writerCpuSecondsPer1000Pushes,omitempty"`
}

func (r *ChatReport) print(w io.Writer) {
	fmt.Fprintf(w, "chat: %d connections in one room (opened in %.1f s), %d messages at %.0f/s\n", r.Connections, r.ConnectSeconds, r.Messages, r.Rate)
	fmt.Fprintf(w, "  pushes %d of %d (%d duplicates dropped), %.0f pushes/s; message → push p50 %s, p99 %s, max %s\n",
		r.Pushes, r.Expected, r.Duplicates, r.PushesPerSec, fms(r.Latency.P50Ms), fms(r.Latency.P99Ms), fms(r.Latency.MaxMs))
	if r.QuietConnections > 0 {
		fmt.Fprintf(w, "  another room meanwhile (%d connections, 1 message/s): pushes %d of %d; message → push p50 %s, p99 %s\n",
			r.QuietConnections, r.QuietPushes, r.QuietExpected, fms(r.QuietLatency.P50Ms), fms(r.QuietLatency.P99Ms))
	}
	if r.NotifierCPUPer1000 > 0 {
		fmt.Fprintf(w, "  CPU per 1,000 pushes: notifier %.3f s, writer (the local gateway) %.3f s\n", r.NotifierCPUPer1000, r.WriterCPUPer1000)
	}
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
func runChat(ctx context.Context, writer string, conns int, rate float64, d, drain time.Duration, metrics func() map[string]app.Metrics, progress io.Writer) (*ChatReport, error) {
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
	const room, quietRoom, quietConns = "load-chat", "load-chat-quiet", 20
	rep := &ChatReport{Connections: conns, Rate: rate, QuietConnections: quietConns}
	start := time.Now()
	clients, err := openChat(ctx, writer, room, conns, tokens)
	defer closeChat(clients)
	if err != nil {
		return nil, err
	}
	quiet, err := openChat(ctx, writer, quietRoom, quietConns, tokens)
	defer closeChat(quiet)
	if err != nil {
		return nil, err
	}
	rep.ConnectSeconds = time.Since(start).Seconds()
	fmt.Fprintf(progress, "chat: %d connections open in %.1f s (and %d in another room)\n", conns, rep.ConnectSeconds, quietConns)
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	var readers sync.WaitGroup
	hot, calm := &received{}, &received{}
	for _, cl := range clients {
		readers.Go(func() { cl.read(rctx, hot) })
	}
	for _, cl := range quiet {
		readers.Go(func() { cl.read(rctx, calm) })
	}
	before := metrics()
	// The other room: a message a second from its first connection.
	quietDone := make(chan int, 1)
	go func() {
		sent := 0
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
			<-t.C
			if quiet[0].c.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf(`{"action":"sendMessage","content":"quiet %d"}`, sent))) != nil {
				break
			}
			sent++
		}
		quietDone <- sent
	}()
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
	rep.QuietExpected = int64(<-quietDone) * quietConns
	for end := time.Now().Add(drain); (hot.pushes.Load() < rep.Expected || calm.pushes.Load() < rep.QuietExpected) && time.Now().Before(end) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
	}
	after := metrics()
	stopReading()
	readers.Wait()
	rep.Pushes, rep.Duplicates = hot.pushes.Load(), hot.dups.Load()
	if last := hot.last.Load(); last > 0 {
		rep.PushesPerSec = float64(rep.Pushes) / time.Unix(0, last).Sub(first).Seconds()
	}
	rep.Latency = dist(hot.lat)
	rep.QuietPushes, rep.QuietLatency = calm.pushes.Load(), dist(calm.lat)
	if total := rep.Pushes + rep.QuietPushes; total > 0 {
		cpu := func(name string) float64 {
			a, ok1 := after[name]
			b, ok2 := before[name]
			if !ok1 || !ok2 {
				return 0
			}
			return (a.CPUSeconds - b.CPUSeconds) / float64(total) * 1000
		}
		rep.NotifierCPUPer1000, rep.WriterCPUPer1000 = cpu("notifier"), cpu("writer")
	}
	return rep, nil
}

// received is what a room's clients received.
type received struct {
	pushes, dups, last atomic.Int64
	mu                 sync.Mutex
	lat                []time.Duration
}

// read records the messages pushed to cl until ctx ends.
func (cl *chatClient) read(ctx context.Context, into *received) {
	for {
		_, b, err := cl.c.Read(ctx)
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
			into.dups.Add(1)
			continue
		}
		into.pushes.Add(1)
		into.last.Store(now.UnixNano())
		if at, err := store.ParseTimestamp(f.Message.CreatedAt); err == nil {
			into.mu.Lock()
			into.lat = append(into.lat, now.Sub(at))
			into.mu.Unlock()
		}
	}
}

// openChat opens n connections to room, 16 at a time, the users taken in
// turn from tokens.
func openChat(ctx context.Context, writer, room string, n int, tokens []string) ([]*chatClient, error) {
	ws := "ws" + strings.TrimPrefix(writer, "http") + "/ws?roomId=" + room + "&token="
	clients := make([]*chatClient, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var dialErr atomic.Value
	for i := range clients {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			c, err := dialChat(dctx, ws+tokens[i%len(tokens)])
			if err != nil {
				dialErr.Store(err)
				return
			}
			c.SetReadLimit(1 << 20)
			clients[i] = &chatClient{c: c, seen: map[string]bool{}}
		})
	}
	wg.Wait()
	if err, _ := dialErr.Load().(error); err != nil {
		return clients, fmt.Errorf("chat: connect to %s: %w", room, err)
	}
	return clients, nil
}

// dialChat opens one connection, again after a 503: the writer answers a
// $connect it could not record now (DynamoDB busy, throttled: a fault
// suite injects both) with 503, which says to try again.
func dialChat(ctx context.Context, url string) (*websocket.Conn, error) {
	for attempt := 0; ; attempt++ {
		c, resp, err := websocket.Dial(ctx, url, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || attempt == 5 {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
}

func closeChat(clients []*chatClient) {
	for _, cl := range clients {
		if cl != nil {
			_ = cl.c.CloseNow()
		}
	}
}
