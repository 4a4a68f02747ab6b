package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// syncBuffer is a log destination the test reads while the runner writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A consumer's admin endpoint: /healthz answers 503 with the reason while
// the runner is stuck and 200 otherwise; /status is the runner's Health;
// POST /pause and /resume (and SIGUSR1 and SIGUSR2) pause and resume it,
// from this machine only.
func TestAdminEndpointOfAConsumer(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	put := func(pk string) {
		t.Helper()
		if _, err := c.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "v"}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("A")
	release := make(chan struct{})
	var mu sync.Mutex
	handled := 0
	h := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		<-release
		mu.Lock()
		handled += len(ev.Records)
		mu.Unlock()
		return events.DynamoDBEventResponse{}, nil
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	r := &stream.Runner{
		Config: stream.Config{StreamARN: arn, Consumer: "admin", PollInterval: 10 * time.Millisecond, StuckAfter: 50 * time.Millisecond},
		API:    c.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: &stream.MemoryDeadLetters{}, Logger: log,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, h) }()
	defer func() { cancel(); <-done }()
	go watchHealth(ctx, log, r, 10*time.Millisecond)
	pauseOnSignals(ctx, log, r)

	mux, _ := adminMux(&localMetrics{program: "admin", runner: r, data: &ddb.Counter{}})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string, v any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode
	}
	post := func(path string, v any) int {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode
	}
	type healthz struct{ Status, Reason string }

	// The handler does not return: stuck, 503, and the log says so.
	var hz healthz
	waitUntil(t, "503", func() bool { return get("/healthz", &hz) == http.StatusServiceUnavailable })
	if hz.Status != stream.Stuck || !strings.Contains(hz.Reason, "1 record(s) waiting") || !strings.Contains(hz.Reason, "a handler call has not returned") {
		t.Errorf("stuck /healthz: %+v", hz)
	}
	waitUntil(t, "the log line", func() bool { return strings.Contains(logs.String(), `"msg":"consumer stuck"`) })
	close(release)
	waitUntil(t, "idle", func() bool { return get("/healthz", &hz) == http.StatusOK && hz.Status == stream.Idle })
	waitUntil(t, "the log line", func() bool { return strings.Contains(logs.String(), `"msg":"consumer no longer stuck"`) })

	var st stream.Health
	if code := post("/pause", &st); code != http.StatusOK || st.Status != stream.Paused {
		t.Fatalf("POST /pause: %d %+v", code, st)
	}
	put("B")
	time.Sleep(100 * time.Millisecond) // ten poll intervals
	if code := get("/healthz", &hz); code != http.StatusOK || hz.Status != stream.Paused {
		t.Errorf("paused /healthz: %d %+v", code, hz)
	}
	if get("/status", &st); st.Status != stream.Paused || st.Stats.RecordsRead != 1 || len(st.Shards) != 1 || st.Shards[0].Checkpoint == "" {
		t.Errorf("paused /status: %+v", st)
	}
	if code := post("/resume", &st); code != http.StatusOK || st.Status == stream.Paused {
		t.Fatalf("POST /resume: %d %+v", code, st)
	}
	waitUntil(t, "B handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled == 2 })

	// The signals (where the platform has them).
	if pause, resume, ok := pauseSignals(); ok {
		self, _ := os.FindProcess(os.Getpid())
		if err := self.Signal(pause); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "paused by SIGUSR1", func() bool { return r.Health().Status == stream.Paused })
		if err := self.Signal(resume); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "resumed by SIGUSR2", func() bool { return r.Health().Status != stream.Paused })
	}

	// From another machine: refused.
	for _, path := range []string{"/pause", "/resume"} {
		req := httptest.NewRequest("POST", path, nil)
		req.RemoteAddr = "192.0.2.7:41000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("POST %s from afar: %d %s", path, w.Code, w.Body)
		}
	}
	// From a web page: the served endpoint refuses a cross-site POST and
	// a rebound Host.
	port, err := ddblocal.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := serveAdmin(ctx, log, fmt.Sprintf("127.0.0.1:%d", port), &localMetrics{program: "admin", runner: r, data: &ddb.Counter{}}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		host, site string
		want       int
	}{
		"a cross-site form": {fmt.Sprintf("127.0.0.1:%d", port), "cross-site", http.StatusForbidden},
		"DNS rebinding":     {fmt.Sprintf("rebind.evil.example:%d", port), "", http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/pause", port), strings.NewReader("x=1"))
		req.Host = c.host
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST /pause, %s: %d, want %d", name, resp.StatusCode, c.want)
		}
	}
	if r.Health().Status == stream.Paused {
		t.Error("a refused pause paused")
	}
	var m Metrics
	if get("/metrics", &m); m.Health == nil || m.Stream == nil || m.Stream.RecordsRead != 2 {
		t.Errorf("/metrics: %+v", m)
	}
}

// The writer's endpoint has no runner: /healthz is 200, there is no pause.
// Its /metrics carries its memory, and its profiles answer this machine
// only (httptest's requests come from 192.0.2.1).
func TestAdminEndpointOfTheWriter(t *testing.T) {
	mux, paths := adminMux(&localMetrics{program: "writer", data: &ddb.Counter{}})
	if paths != "/metrics /metrics/keys /healthz /debug/pprof/" {
		t.Errorf("paths %q", paths)
	}
	for remote, want := range map[string]int{"127.0.0.1:5000": 200, "[::1]:5000": 200, "192.0.2.1:5000": 403} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/debug/pprof/heap?debug=1", nil)
		req.RemoteAddr = remote
		mux.ServeHTTP(w, req)
		if w.Code != want || (want == 200 && !strings.Contains(w.Body.String(), "heap profile")) {
			t.Errorf("GET /debug/pprof/heap from %s: %d, want %d", remote, w.Code, want)
		}
	}
	runtime.GC() // the live heap is known from the first collection on
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	var m Metrics
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m.Memory.HeapLiveBytes == 0 || m.Memory.GoBytes < m.Memory.HeapLiveBytes || m.Memory.Goroutines == 0 ||
		(runtime.GOOS == "linux" && m.Memory.RSSBytes == 0) ||
		m.Memory.RSSAnonBytes+m.Memory.RSSFileBytes > m.Memory.RSSBytes+8<<20 ||
		(splitTold() && (m.Memory.RSSAnonBytes == 0 || m.Memory.RSSFileBytes == 0)) {
		t.Errorf("/metrics memory %+v: %v", m.Memory, err)
	}
	for path, want := range map[string]int{"GET /healthz": 200, "GET /metrics": 200, "GET /metrics/keys": 200, "POST /pause": 404, "GET /status": 404} {
		method, p, _ := strings.Cut(path, " ")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(method, p, nil))
		if w.Code != want {
			t.Errorf("%s: %d, want %d", path, w.Code, want)
		}
	}
}

// splitTold says whether /proc/self/status tells the resident set's
// parts (Linux 4.5 and later).
func splitTold() bool {
	b, err := os.ReadFile("/proc/self/status")
	return err == nil && bytes.Contains(b, []byte("\nRssAnon:")) && bytes.Contains(b, []byte("\nRssFile:"))
}
