package eventbus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/dynastream/dynastream/eventbus"
)

// The wire format below is the awsJson1_1 protocol as the aws-sdk-go-v2
// eventbridge module (v1.55.8) speaks it for PutEvents:
//
//   - request (request_snapshot/PutEvents.request.snap): POST / with
//     Content-Type: application/x-amz-json-1.1 and
//     X-Amz-Target: AWSEvents.PutEvents, body
//     {"Entries":[{"Detail":…,"DetailType":…,"EventBusName":…,
//     "Resources":[…],"Source":…,"Time":<epoch seconds, ms precision>,
//     "TraceHeader":…}]}, signed with SigV4 for the "events" service
//     (auth.go);
//   - reply (response_snapshot/PutEvents.response.snap):
//     {"Entries":[{"EventId":…} | {"ErrorCode":…,"ErrorMessage":…}],
//     "FailedEntryCount":n}, results matched to entries by position;
//   - errors (response_snapshot/*.error.snap): an HTTP error status with
//     {"__type":"<code>","message":"…"}; throttling is HTTP 400
//     ThrottlingException.

type wireEntry struct {
	Source       string
	DetailType   string
	Detail       string
	EventBusName string
	TraceHeader  string
	Resources    []string
	Time         *float64
}

type wireRequest struct {
	Entries    []wireEntry
	EndpointId *string
}

type wireResult struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

type wireResponse struct {
	Entries          []wireResult
	FailedEntryCount int
}

// wireSize recomputes an entry's size from what arrived on the wire, by
// the rule of "Calculating Amazon EventBridge PutEvents event entry size".
func wireSize(e wireEntry) int {
	n := 0
	if e.Time != nil {
		n += 14
	}
	n += len(e.Source) + len(e.DetailType) + len(e.Detail)
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// callFailure is one scripted failure of a whole call.
type callFailure struct {
	status int
	body   string // raw body
	hijack bool   // close the connection without a response
}

func throttled() *callFailure {
	return &callFailure{status: http.StatusBadRequest, body: `{"__type":"ThrottlingException","message":"Rate exceeded"}`}
}

func apiError(status int, code string) *callFailure {
	return &callFailure{status: status, body: fmt.Sprintf(`{"__type":%q,"message":"scripted %s"}`, code, code)}
}

// fakeBus speaks enough of EventBridge PutEvents for the real client. It
// checks each request (target, content type, SigV4, entry count, total
// size recomputed from the wire), records the entries, and answers from
// two scripts: failCall fails a whole call, failEntry an entry ("" =
// accept) given how many times that entry (its Detail) has arrived.
type fakeBus struct {
	t        *testing.T
	maxBytes int

	mu        sync.Mutex
	calls     [][]wireEntry
	seen      map[string]int
	failCall  func(call int) *callFailure
	failEntry func(e wireEntry, seen int) string
	onCall    func(call int)

	srv *httptest.Server
}

func newFakeBus(t *testing.T) *fakeBus {
	t.Helper()
	f := &fakeBus{t: t, maxBytes: eventbus.DefaultMaxBytes, seen: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBus) serve(w http.ResponseWriter, r *http.Request) {
	t := f.t
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		t.Errorf("request %s %s, want POST /", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
		t.Errorf("X-Amz-Target = %q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-amz-json-1.1" {
		t.Errorf("Content-Type = %q", got)
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") ||
		!strings.Contains(auth, "/us-east-1/events/aws4_request") ||
		!strings.Contains(auth, "SignedHeaders=") ||
		!strings.Contains(auth, "Signature=") {
		t.Errorf("Authorization = %q, want a SigV4 signature for events in us-east-1", auth)
	}
	if r.Header.Get("X-Amz-Date") == "" {
		t.Error("no X-Amz-Date header")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read body: %v", err)
	}
	var req wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Errorf("decode body: %v", err)
	}
	if req.EndpointId != nil {
		t.Errorf("EndpointId = %q, want none", *req.EndpointId)
	}

	if n := len(req.Entries); n == 0 || n > 10 {
		t.Errorf("call with %d entries, want 1..10", n)
		writeJSON(w, http.StatusBadRequest, `{"__type":"ValidationException","message":"1 validation error detected"}`)
		return
	}
	total := 0
	for _, e := range req.Entries {
		total += wireSize(e)
	}
	if total > f.maxBytes {
		t.Errorf("call with %d entries of %d bytes in total, over %d", len(req.Entries), total, f.maxBytes)
		writeJSON(w, http.StatusBadRequest, `{"__type":"ValidationException","message":"Total size of the entries in the request is over the limit."}`)
		return
	}

	f.mu.Lock()
	f.calls = append(f.calls, req.Entries)
	call := len(f.calls)
	seen := make([]int, len(req.Entries))
	for i, e := range req.Entries {
		f.seen[e.Detail]++
		seen[i] = f.seen[e.Detail]
	}
	failCall, failEntry, onCall := f.failCall, f.failEntry, f.onCall
	f.mu.Unlock()

	if onCall != nil {
		onCall(call)
	}
	if failCall != nil {
		if fail := failCall(call); fail != nil {
			if fail.hijack {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				conn.Close()
				return
			}
			writeJSON(w, fail.status, fail.body)
			return
		}
	}
	resp := wireResponse{Entries: make([]wireResult, len(req.Entries))}
	for i, e := range req.Entries {
		code := ""
		if failEntry != nil {
			code = failEntry(e, seen[i])
		}
		if code != "" {
			resp.Entries[i] = wireResult{ErrorCode: code, ErrorMessage: "scripted " + code}
			resp.FailedEntryCount++
			continue
		}
		resp.Entries[i] = wireResult{EventId: fmt.Sprintf("evt-%d-%d", call, i)}
	}
	out, _ := json.Marshal(resp)
	writeJSON(w, http.StatusOK, string(out))
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeBus) allCalls() [][]wireEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]wireEntry(nil), f.calls...)
}

func (f *fakeBus) timesSeen(detail []byte) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[string(detail)]
}

func (f *fakeBus) config() aws.Config {
	return aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
	}
}

// publisher returns a Publisher on the real client against f, with
// recorded sleeps and no jitter (each pause is its full bound).
func (f *fakeBus) publisher(sl *sleeps, log *logBuffer) *eventbus.Publisher {
	return &eventbus.Publisher{
		Client:      eventbus.NewClient(f.config(), f.srv.URL),
		BusName:     "dynastream-domain",
		MaxAttempts: 5,
		Backoff:     100 * time.Millisecond,
		Sleep:       sl.sleep,
		Jitter:      fullBound,
		Logger:      log.logger(),
	}
}

// sleeps records the pauses Publish asks for without sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func fullBound(d time.Duration) time.Duration { return d }

// logBuffer collects log output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var baseTime = time.Date(2026, 1, 2, 15, 4, 5, 123_000_000, time.UTC)

// entry returns a small entry whose Detail carries id.
func entry(id int) eventbus.Entry {
	return eventbus.Entry{
		Source:     "dynastream.test",
		DetailType: "Small",
		Detail:     fmt.Appendf(nil, `{"id":"e-%05d"}`, id),
		Time:       baseTime.Add(time.Duration(id) * time.Second),
	}
}

// sized returns an entry whose Size is exactly size (at least 64).
func sized(id, size int) eventbus.Entry {
	return sizedAs(id, size, "dynastream.test", "Big")
}

// sizedAs is sized with the given source and detail type.
func sizedAs(id, size int, source, detailType string) eventbus.Entry {
	e := eventbus.Entry{
		Source:     source,
		DetailType: detailType,
		Time:       baseTime,
	}
	head := fmt.Sprintf(`{"id":"e-%05d","pad":"`, id)
	pad := size - e.Size() - len(head) - len(`"}`)
	if pad < 0 {
		panic("sized: too small")
	}
	e.Detail = []byte(head + strings.Repeat("x", pad) + `"}`)
	if e.Size() != size {
		panic("sized: wrong size")
	}
	return e
}

func details(es []wireEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Detail
	}
	return out
}

func entryDetails(es []eventbus.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Detail)
	}
	return out
}

// wireTime turns the wire's epoch seconds back into a time.
func wireTime(f float64) time.Time {
	return time.UnixMilli(int64(math.Round(f * 1000))).UTC()
}
