package consumer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// The admin handler of a live runner: stuck is 503 with the reason,
// pause and resume work from this machine, and neither another machine
// nor a cross-site page can pause it.
func TestAdmin(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	put := func(pk string) {
		t.Helper()
		if _, err := tbl.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tbl.Name),
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
	r := &stream.Runner{
		Config: stream.Config{StreamARN: tbl.StreamARN, Consumer: "admin", PollInterval: 10 * time.Millisecond, StuckAfter: 50 * time.Millisecond},
		API:    tbl.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: &stream.MemoryDeadLetters{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, h) }()
	defer func() { cancel(); <-done }()

	adm := consumer.Admin(r, consumer.AdminOptions{})
	srv := httptest.NewServer(adm)
	defer srv.Close()
	call := func(method, path string, v any) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode
	}
	var hz struct{ Status, Reason string }
	waitUntil(t, "503", func() bool { return call("GET", "/healthz", &hz) == http.StatusServiceUnavailable })
	if hz.Status != stream.Stuck || !strings.Contains(hz.Reason, "a handler call has not returned") {
		t.Errorf("stuck /healthz: %+v", hz)
	}
	close(release)
	waitUntil(t, "idle", func() bool { return call("GET", "/healthz", &hz) == http.StatusOK && hz.Status == stream.Idle })

	var st stream.Health
	if code := call("POST", "/pause", &st); code != http.StatusOK || st.Status != stream.Paused {
		t.Fatalf("POST /pause: %d %+v", code, st)
	}
	put("B")
	time.Sleep(100 * time.Millisecond)
	if call("GET", "/status", &st); st.Status != stream.Paused || st.Stats.RecordsRead != 1 {
		t.Errorf("paused /status: %+v", st)
	}
	if code := call("POST", "/resume", &st); code != http.StatusOK || st.Status == stream.Paused {
		t.Fatalf("POST /resume: %d %+v", code, st)
	}
	waitUntil(t, "B handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled == 2 })

	for name, c := range map[string]struct{ remote, site string }{
		"another machine":   {"192.0.2.7:41000", ""},
		"a cross-site form": {"127.0.0.1:41000", "cross-site"},
	} {
		req := httptest.NewRequest("POST", "/pause", strings.NewReader("x=1"))
		req.RemoteAddr = c.remote
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		w := httptest.NewRecorder()
		adm.ServeHTTP(w, req)
		if w.Code != http.StatusForbidden {
			t.Errorf("POST /pause from %s: %d %s", name, w.Code, w.Body)
		}
	}
	if r.Health().Status == stream.Paused {
		t.Error("a refused pause paused")
	}
}
