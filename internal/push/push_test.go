package push_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/dynastream/dynastream/internal/push"
)

// Push through the real client: the wire request (POST
// /@connections/{id}, SigV4 for execute-api, the frame as the body), 410
// as ErrGone, other errors as errors, after the client's retries.
func TestPush(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Authorization"), "/execute-api/aws4_request") {
			t.Errorf("request %s %s, Authorization %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		switch r.URL.Path {
		case "/prod/@connections/ok=":
			if string(body) != `{"type":"message"}` {
				t.Errorf("body %q", body)
			}
		case "/prod/@connections/gone=":
			w.Header().Set("X-Amzn-ErrorType", "GoneException")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"message":"gone"}`))
		default:
			w.Header().Set("X-Amzn-ErrorType", "ForbiddenException")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"no"}`))
		}
	}))
	defer srv.Close()
	c := push.New(aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}, srv.URL+"/prod")
	ctx := context.Background()
	if err := c.Push(ctx, "ok=", []byte(`{"type":"message"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Push(ctx, "gone=", []byte(`{}`)); !errors.Is(err, push.ErrGone) {
		t.Fatalf("gone: %v", err)
	}
	if err := c.Push(ctx, "forbidden=", []byte(`{}`)); err == nil || errors.Is(err, push.ErrGone) {
		t.Fatalf("forbidden: %v", err)
	}
	if calls != 3 {
		t.Errorf("%d requests: a 410 or 403 is not retried", calls)
	}
}

// A push is the request the SDK's PostToConnection makes: the connection
// id escaped as the SDK escapes it, the frame as an octet-stream body, and
// a SigV4 signature for execute-api that the server can recompute from
// what it received (with the session token signed in). Throttling and 5xx
// answers are tried again, up to three attempts; 410 is ErrGone at once.
func TestPushWire(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "TOKEN")
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	answers := map[string][]int{} // path → statuses to answer in turn
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/octet-stream" || r.Header.Get("X-Amz-Security-Token") != "TOKEN" {
			t.Errorf("headers %v", r.Header)
		}
		// the signature, recomputed from what arrived
		check := r.Clone(context.Background())
		check.Header = http.Header{}
		for _, h := range []string{"Content-Type", "X-Amz-Security-Token"} {
			check.Header.Set(h, r.Header.Get(h))
		}
		check.Host, check.URL.Scheme, check.URL.Host = r.Host, "http", r.Host
		sum := sha256.Sum256(body)
		c, _ := creds.Retrieve(context.Background())
		if err := v4.NewSigner().SignHTTP(context.Background(), c, check, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", at); err != nil {
			t.Fatal(err)
		}
		if got, want := r.Header.Get("Authorization"), check.Header.Get("Authorization"); got != want {
			t.Errorf("signature\n got %s\nwant %s", got, want)
		}
		mu.Lock()
		p := r.URL.EscapedPath()
		calls[p]++
		status := http.StatusOK
		if as := answers[p]; len(as) > 0 {
			status, answers[p] = as[0], as[1:]
		}
		mu.Unlock()
		w.Header().Set("Date", at.Format(http.TimeFormat)) // the server's clock agrees
		w.WriteHeader(status)
	}))
	defer srv.Close()
	c := push.New(aws.Config{Region: "eu-west-1", Credentials: creds}, srv.URL+"/prod")
	push.Quick(c, time.Millisecond, func() time.Time { return at })
	ctx := context.Background()

	answers["/prod/@connections/ab%2Fc%3Dd"] = []int{500, 429}
	if err := c.Push(ctx, "ab/c=d", []byte(`{"type":"message"}`)); err != nil {
		t.Errorf("a push answered 500, 429, 200: %v", err)
	}
	answers["/prod/@connections/busy"] = []int{503, 503, 503, 200}
	if err := c.Push(ctx, "busy", []byte(`{}`)); err == nil || errors.Is(err, push.ErrGone) {
		t.Errorf("three 503s: %v, want an error", err)
	}
	answers["/prod/@connections/gone"] = []int{410}
	if err := c.Push(ctx, "gone", []byte(`{}`)); !errors.Is(err, push.ErrGone) {
		t.Errorf("410: %v, want ErrGone", err)
	}
	// the configuration's Retryer decides the attempts
	five := push.New(aws.Config{Region: "eu-west-1", Credentials: creds, Retryer: func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 5) }}, srv.URL+"/prod")
	push.Quick(five, time.Millisecond, func() time.Time { return at })
	answers["/prod/@connections/patient"] = []int{503, 503, 503, 503}
	if err := five.Push(ctx, "patient", []byte(`{}`)); err != nil {
		t.Errorf("four 503s with five attempts: %v", err)
	}
	want := map[string]int{"/prod/@connections/ab%2Fc%3Dd": 3, "/prod/@connections/busy": 3, "/prod/@connections/gone": 1, "/prod/@connections/patient": 5}
	for p, n := range want {
		if calls[p] != n {
			t.Errorf("%s: %d requests, want %d", p, calls[p], n)
		}
	}
}

// A machine whose clock is off: the first push is refused as SigV4
// refuses a request signed too far from the server's time (403
// InvalidSignatureException, with the server's Date), tried again signed
// as of the server's clock, and later pushes are signed so at once, as the
// SDK's clock skew correction does. A refusal while the clocks agree is
// not tried again.
func TestPushClockSkew(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	server := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	ours := server.Add(-17 * time.Minute) // this machine's clock
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Date", server.Format(http.TimeFormat))
		signed, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if err != nil || signed.Sub(server).Abs() > 5*time.Minute || r.URL.Path == "/prod/@connections/refused" {
			w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"Signature expired"}`))
		}
	}))
	defer srv.Close()
	c := push.New(aws.Config{Region: "eu-west-1", Credentials: creds}, srv.URL+"/prod")
	push.Quick(c, time.Millisecond, func() time.Time { return ours })
	ctx := context.Background()
	if err := c.Push(ctx, "a", []byte(`{}`)); err != nil || calls != 2 {
		t.Fatalf("the first push: %v after %d requests, want success after 2", err, calls)
	}
	if err := c.Push(ctx, "b", []byte(`{}`)); err != nil || calls != 3 {
		t.Fatalf("the next push: %v after %d requests in all, want success in 1", err, calls)
	}
	if err := c.Push(ctx, "refused", []byte(`{}`)); err == nil || calls != 4 {
		t.Fatalf("a refusal with the clocks agreeing: %v after %d requests in all, want an error in 1", err, calls)
	}
}

// A Probe is GetConnection as the SDK makes it (GET /@connections/{id},
// no body, SigV4 for execute-api): 200 is open, 410 is not, a 5xx is tried
// again, and a 403 is an error.
func TestProbe(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodGet || len(body) != 0 || !strings.Contains(r.Header.Get("Authorization"), "/execute-api/aws4_request") {
			t.Errorf("request %s %s (%d bytes), Authorization %q", r.Method, r.URL.Path, len(body), r.Header.Get("Authorization"))
		}
		id := strings.TrimPrefix(r.URL.Path, "/prod/@connections/")
		mu.Lock()
		calls[id]++
		n := calls[id]
		mu.Unlock()
		switch {
		case id == "open=" || id == "flaky=" && n > 1:
			_, _ = w.Write([]byte(`{"connectedAt":"2026-12-01T00:00:00Z"}`))
		case id == "gone=":
			w.Header().Set("X-Amzn-ErrorType", "GoneException")
			w.WriteHeader(http.StatusGone)
		case id == "flaky=":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.Header().Set("X-Amzn-ErrorType", "ForbiddenException")
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()
	p := push.NewProbe(aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer: func() aws.Retryer { return retry.AddWithMaxBackoffDelay(retry.NewStandard(), time.Millisecond) }}, srv.URL+"/prod")
	ctx := context.Background()
	for id, want := range map[string]bool{"open=": true, "gone=": false, "flaky=": true} {
		if ok, err := p.Alive(ctx, id); err != nil || ok != want {
			t.Errorf("%s: %v, %v; want %v", id, ok, err, want)
		}
	}
	if ok, err := p.Alive(ctx, "forbidden="); err == nil || ok {
		t.Errorf("forbidden: %v, %v; want an error", ok, err)
	}
	if calls["flaky="] != 2 || calls["gone="] != 1 {
		t.Errorf("requests %v: a 500 is tried again, a 410 is not", calls)
	}
}
