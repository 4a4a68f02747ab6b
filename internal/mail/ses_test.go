package mail_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/mail"
)

// The wire format below follows the SESv2 REST-JSON protocol as the
// aws-sdk-go-v2 sesv2 module (v1.79.6) serializes it: SendEmail is
// POST /v2/email/outbound-emails (schemas.SendEmail), the body mirrors
// SendEmailInput with its member names (request_snapshot/SendEmail), the
// reply is {"MessageId": ...}, and errors carry their code in the
// X-Amzn-ErrorType header or "__type" with {"message": ...}
// (response_snapshot/*.error.snap, smithy-go restjson1.deserializeError).

type wireContent struct {
	Data    string
	Charset string
}

type wireTag struct{ Name, Value string }

type wireSendEmail struct {
	FromEmailAddress     string
	ConfigurationSetName string
	Destination          struct{ ToAddresses []string }
	Content              struct {
		Simple struct {
			Subject wireContent
			Body    struct{ Text, Html *wireContent }
			Headers []wireTag
		}
	}
	EmailTags []wireTag
}

// failure is one scripted error reply.
type failure struct {
	status    int
	errorType string // X-Amzn-ErrorType, "" for none
	body      string // raw body; default {"message": "..."}
}

// fakeSES speaks enough of SESv2 SendEmail for the real client: it checks
// the request line and SigV4 header, decodes the body, and answers from a
// script of failures before succeeding.
type fakeSES struct {
	t        *testing.T
	mu       sync.Mutex
	requests []wireSendEmail
	script   func(attempt int) *failure // nil → success
	srv      *httptest.Server
}

func newFakeSES(t *testing.T, script func(attempt int) *failure) *fakeSES {
	t.Helper()
	f := &fakeSES{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSES) serve(w http.ResponseWriter, r *http.Request) {
	t := f.t
	if r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails" {
		t.Errorf("request %s %s, want POST /v2/email/outbound-emails", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") ||
		!strings.Contains(auth, "/us-east-1/ses/aws4_request") ||
		!strings.Contains(auth, "Signature=") {
		t.Errorf("Authorization = %q, want a SigV4 signature for ses in us-east-1", auth)
	}
	if r.Header.Get("X-Amz-Date") == "" {
		t.Error("no X-Amz-Date header")
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var req wireSendEmail
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		t.Errorf("decode body: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	attempt := len(f.requests)
	f.mu.Unlock()

	if fail := f.script(attempt); fail != nil {
		if fail.errorType != "" {
			w.Header().Set("X-Amzn-ErrorType", fail.errorType)
		}
		body := fail.body
		if body == "" {
			w.Header().Set("Content-Type", "application/json")
			body = `{"message":"scripted failure"}`
		}
		w.WriteHeader(fail.status)
		fmt.Fprint(w, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"MessageId":"msg-%d"}`, attempt)
}

func (f *fakeSES) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeSES) config() aws.Config {
	return aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
	}
}

// sleeps records the pauses the sender asks for without sleeping.
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

func testMessage() mail.Message {
	return mail.Message{
		To:             []string{"bob@example.com", "Carol <carol@example.com>", "Zoë <zoe@example.com>"},
		Subject:        "Alice invited you",
		Text:           "Hello Bob\nplain part",
		HTML:           "<p>Hello Bob</p>",
		Tags:           map[string]string{"type": "invite", "bad key!": "v@l ue"},
		IdempotencyKey: "INVITE#inv-1#bob@example.com",
	}
}

func newSES(f *fakeSES, sl *sleeps) *mail.SES {
	return &mail.SES{
		Client:           mail.NewSESClient(f.config(), f.srv.URL),
		From:             "Dynastream <no-reply@dynastream.dev>",
		ConfigurationSet: "notifier",
		MaxAttempts:      5,
		Backoff:          100 * time.Millisecond,
		Sleep:            sl.sleep,
		Jitter:           fullBound,
	}
}

func never(int) *failure { return nil }

func TestSESSendsSimpleContent(t *testing.T) {
	f := newFakeSES(t, never)
	sl := &sleeps{}
	id, err := newSES(f, sl).Send(context.Background(), testMessage())
	if err != nil {
		t.Fatal(err)
	}
	if id != "msg-1" {
		t.Errorf("message id = %q, want msg-1", id)
	}
	if f.attempts() != 1 || len(sl.got()) != 0 {
		t.Fatalf("attempts %d, sleeps %v; want one attempt, no sleep", f.attempts(), sl.got())
	}
	req := f.requests[0]
	if req.FromEmailAddress != `"Dynastream" <no-reply@dynastream.dev>` {
		t.Errorf("FromEmailAddress = %q", req.FromEmailAddress)
	}
	if req.ConfigurationSetName != "notifier" {
		t.Errorf("ConfigurationSetName = %q", req.ConfigurationSetName)
	}
	// Display names are quoted, and RFC 2047-encoded when not ASCII.
	wantTo := []string{"bob@example.com", `"Carol" <carol@example.com>`, "=?utf-8?q?Zo=C3=AB?= <zoe@example.com>"}
	if diff := cmp.Diff(wantTo, req.Destination.ToAddresses); diff != "" {
		t.Errorf("ToAddresses (-want +got):\n%s", diff)
	}
	s := req.Content.Simple
	if diff := cmp.Diff(wireContent{Data: "Alice invited you", Charset: "UTF-8"}, s.Subject); diff != "" {
		t.Errorf("Subject (-want +got):\n%s", diff)
	}
	if s.Body.Text == nil || *s.Body.Text != (wireContent{Data: "Hello Bob\nplain part", Charset: "UTF-8"}) {
		t.Errorf("Body.Text = %+v", s.Body.Text)
	}
	if s.Body.Html == nil || *s.Body.Html != (wireContent{Data: "<p>Hello Bob</p>", Charset: "UTF-8"}) {
		t.Errorf("Body.Html = %+v", s.Body.Html)
	}
	if diff := cmp.Diff([]wireTag{{"X-Idempotency-Key", "INVITE#inv-1#bob@example.com"}}, s.Headers); diff != "" {
		t.Errorf("Headers (-want +got):\n%s", diff)
	}
	wantTags := []wireTag{
		{"bad_key_", "v_l_ue"},
		{"idempotency_key", "INVITE_inv-1_bob_example_com"},
		{"type", "invite"},
	}
	if diff := cmp.Diff(wantTags, req.EmailTags); diff != "" {
		t.Errorf("EmailTags (-want +got):\n%s", diff)
	}
}

func TestSESOmitsOptionalFields(t *testing.T) {
	f := newFakeSES(t, never)
	s := newSES(f, &sleeps{})
	s.ConfigurationSet = ""
	m := mail.Message{To: []string{"bob@example.com"}, Subject: "Hi\r\nBcc: eve@example.com", Text: "text only"}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	req := f.requests[0]
	if req.ConfigurationSetName != "" || req.EmailTags != nil || req.Content.Simple.Headers != nil || req.Content.Simple.Body.Html != nil {
		t.Errorf("optional fields sent: %+v", req)
	}
	if got := req.Content.Simple.Subject.Data; got != "Hi Bcc: eve@example.com" {
		t.Errorf("subject = %q, want CR/LF flattened", got)
	}
}

func TestSESRetriesThrottling(t *testing.T) {
	f := newFakeSES(t, func(n int) *failure {
		if n <= 3 {
			return &failure{status: 429, errorType: "TooManyRequestsException", body: `{"message":"Maximum sending rate exceeded."}`}
		}
		return nil
	})
	sl := &sleeps{}
	id, err := newSES(f, sl).Send(context.Background(), testMessage())
	if err != nil {
		t.Fatal(err)
	}
	if id != "msg-4" {
		t.Errorf("id = %q, want msg-4", id)
	}
	if f.attempts() != 4 {
		t.Errorf("attempts = %d, want 4", f.attempts())
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if diff := cmp.Diff(want, sl.got()); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	// Every attempt sent the same message.
	for i, r := range f.requests {
		if diff := cmp.Diff(f.requests[0], r); diff != "" {
			t.Errorf("attempt %d differs:\n%s", i+1, diff)
		}
	}
}

func TestSESDefaultJitterStaysWithinBounds(t *testing.T) {
	f := newFakeSES(t, func(n int) *failure {
		if n <= 4 {
			return &failure{status: 429, errorType: "TooManyRequestsException"}
		}
		return nil
	})
	sl := &sleeps{}
	s := newSES(f, sl)
	s.Jitter = nil
	if _, err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	got := sl.got()
	if len(got) != 4 {
		t.Fatalf("sleeps = %v, want 4", got)
	}
	bound := 100 * time.Millisecond
	for i, d := range got {
		if d < 0 || d > bound {
			t.Errorf("sleep %d = %v, want within [0, %v]", i, d, bound)
		}
		bound *= 2
	}
}

func TestSESRetriesServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail failure
	}{
		{"InternalServiceErrorException", failure{status: 500, errorType: "InternalServiceErrorException"}},
		{"503 without an error type", failure{status: 503, body: "<html>Service Unavailable</html>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSES(t, func(n int) *failure {
				if n <= 2 {
					return &tc.fail
				}
				return nil
			})
			sl := &sleeps{}
			id, err := newSES(f, sl).Send(context.Background(), testMessage())
			if err != nil {
				t.Fatal(err)
			}
			if id != "msg-3" || f.attempts() != 3 || len(sl.got()) != 2 {
				t.Errorf("id %q, attempts %d, sleeps %v; want msg-3 after 3 attempts and 2 sleeps", id, f.attempts(), sl.got())
			}
		})
	}
}

func TestSESGivesUpAfterMaxAttempts(t *testing.T) {
	f := newFakeSES(t, func(int) *failure {
		return &failure{status: 500, errorType: "InternalServiceErrorException"}
	})
	sl := &sleeps{}
	s := newSES(f, sl)
	s.MaxAttempts = 3
	_, err := s.Send(context.Background(), testMessage())
	if err == nil {
		t.Fatal("no error")
	}
	if mail.IsPermanent(err) {
		t.Errorf("err = %v, want a retryable (non-permanent) error", err)
	}
	var ise *types.InternalServiceErrorException
	if !errors.As(err, &ise) {
		t.Errorf("err = %v, want it to wrap InternalServiceErrorException", err)
	}
	if !strings.Contains(err.Error(), "giving up after 3 attempts") {
		t.Errorf("err = %v", err)
	}
	// Exactly MaxAttempts requests: the SDK itself did not retry.
	if f.attempts() != 3 || len(sl.got()) != 2 {
		t.Errorf("attempts %d, sleeps %v; want 3 and 2", f.attempts(), sl.got())
	}
}

func TestSESDefaultMaxAttempts(t *testing.T) {
	f := newFakeSES(t, func(int) *failure { return &failure{status: 502} })
	sl := &sleeps{}
	s := newSES(f, sl)
	s.MaxAttempts = 0
	if _, err := s.Send(context.Background(), testMessage()); err == nil {
		t.Fatal("no error")
	}
	if f.attempts() != mail.DefaultMaxAttempts {
		t.Errorf("attempts = %d, want %d", f.attempts(), mail.DefaultMaxAttempts)
	}
}

func TestSESBackoffDoublesUpToCap(t *testing.T) {
	f := newFakeSES(t, func(int) *failure { return &failure{status: 429, errorType: "TooManyRequestsException"} })
	sl := &sleeps{}
	s := newSES(f, sl)
	s.MaxAttempts = 8
	s.Backoff = 0 // default 200ms
	if _, err := s.Send(context.Background(), testMessage()); err == nil {
		t.Fatal("no error")
	}
	ms := time.Millisecond
	want := []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 10 * time.Second}
	if diff := cmp.Diff(want, sl.got()); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
}

func TestSESPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
		header string
	}{
		// Real SES appends the Coral namespace after a colon.
		{"MessageRejected", 400, "MessageRejected:http://internal.amazon.com/coral/com.amazonaws.sesv2/"},
		{"BadRequestException", 400, "BadRequestException"},
		{"MailFromDomainNotVerifiedException", 400, "MailFromDomainNotVerifiedException"},
		{"AccountSuspendedException", 400, "AccountSuspendedException"},
		{"SendingPausedException", 400, "SendingPausedException"},
		{"NotFoundException", 404, "NotFoundException"},
		{"MessageRejected", 400, ""}, // code only in the body's __type
	} {
		t.Run(tc.code+"/"+tc.header, func(t *testing.T) {
			fail := &failure{status: tc.status, errorType: tc.header}
			if tc.header == "" {
				fail.body = `{"__type":"` + tc.code + `","message":"Email address is not verified."}`
			}
			f := newFakeSES(t, func(int) *failure { return fail })
			sl := &sleeps{}
			_, err := newSES(f, sl).Send(context.Background(), testMessage())
			var pe *mail.PermanentError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *mail.PermanentError", err)
			}
			if pe.Code != tc.code {
				t.Errorf("Code = %q, want %q", pe.Code, tc.code)
			}
			if f.attempts() != 1 || len(sl.got()) != 0 {
				t.Errorf("attempts %d, sleeps %v; want exactly one attempt", f.attempts(), sl.got())
			}
		})
	}
	t.Run("MessageRejected unwraps to the SDK type", func(t *testing.T) {
		f := newFakeSES(t, func(int) *failure {
			return &failure{status: 400, errorType: "MessageRejected", body: `{"message":"Email address is not verified."}`}
		})
		_, err := newSES(f, &sleeps{}).Send(context.Background(), testMessage())
		var mr *types.MessageRejected
		if !errors.As(err, &mr) || mr.ErrorMessage() != "Email address is not verified." {
			t.Errorf("err = %v, want *types.MessageRejected with its message", err)
		}
	})
}

func TestSESNotRetriedButNotPermanent(t *testing.T) {
	for _, tc := range []failure{
		{status: 400, errorType: "LimitExceededException"},
		{status: 403, errorType: "AccessDeniedException"},
	} {
		t.Run(tc.errorType, func(t *testing.T) {
			f := newFakeSES(t, func(int) *failure { return &tc })
			sl := &sleeps{}
			_, err := newSES(f, sl).Send(context.Background(), testMessage())
			if err == nil || mail.IsPermanent(err) {
				t.Fatalf("err = %v, want a non-permanent error", err)
			}
			if f.attempts() != 1 || len(sl.got()) != 0 {
				t.Errorf("attempts %d, sleeps %v; want one attempt", f.attempts(), sl.got())
			}
		})
	}
}

func TestSESRetriesTransportErrors(t *testing.T) {
	f := newFakeSES(t, never)
	f.srv.Close() // connection refused from now on
	sl := &sleeps{}
	s := newSES(f, sl)
	s.MaxAttempts = 3
	_, err := s.Send(context.Background(), testMessage())
	if err == nil || mail.IsPermanent(err) {
		t.Fatalf("err = %v, want a non-permanent error", err)
	}
	if len(sl.got()) != 2 {
		t.Errorf("sleeps = %v, want 2 (3 attempts); err %v (%#v)", sl.got(), err, err)
	}
}

func TestSESContextCancelledDuringBackoff(t *testing.T) {
	f := newFakeSES(t, func(int) *failure { return &failure{status: 500, errorType: "InternalServiceErrorException"} })
	s := newSES(f, nil)
	s.Sleep = nil // the real, context-aware sleep
	s.Backoff = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	// The backoff (capped at MaxBackoff, 10 s) is ended by the
	// cancellation, not waited out: the error is the wait's, not the
	// second attempt's (which a wait that ignored the cancellation would
	// reach, its context cancelled meanwhile). No wall-clock bound.
	_, err := s.Send(ctx, testMessage())
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "backoff after attempt 1") {
		t.Errorf("err = %v, want context.Canceled ending the backoff after attempt 1", err)
	}
	if mail.IsPermanent(err) {
		t.Error("cancellation reported as permanent")
	}
	if f.attempts() != 1 {
		t.Errorf("attempts = %d, want 1", f.attempts())
	}
}

func TestSESContextAlreadyCancelled(t *testing.T) {
	f := newFakeSES(t, never)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newSES(f, &sleeps{}).Send(ctx, testMessage())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if f.attempts() != 0 {
		t.Errorf("attempts = %d, want 0", f.attempts())
	}
}

func TestSESInvalidMessageIsPermanent(t *testing.T) {
	f := newFakeSES(t, never)
	for name, m := range map[string]mail.Message{
		"no recipient":   {Subject: "s", Text: "t"},
		"no subject":     {To: []string{"bob@example.com"}, Text: "t"},
		"no body":        {To: []string{"bob@example.com"}, Subject: "s"},
		"CRLF recipient": {To: []string{"bob@example.com\r\nBcc: eve@example.com"}, Subject: "s", Text: "t"},
		"bad address":    {To: []string{"bob at example"}, Subject: "s", Text: "t"},
	} {
		if _, err := newSES(f, &sleeps{}).Send(context.Background(), m); !mail.IsPermanent(err) {
			t.Errorf("%s: err = %v, want permanent", name, err)
		}
	}
	s := newSES(f, &sleeps{})
	s.From = ""
	if _, err := s.Send(context.Background(), testMessage()); !mail.IsPermanent(err) {
		t.Errorf("no From: err = %v, want permanent", err)
	}
	if f.attempts() != 0 {
		t.Errorf("attempts = %d, want none", f.attempts())
	}
}

// A config asking for SDK retries must not bring them back.
func TestNewSESClientIgnoresConfiguredSDKRetries(t *testing.T) {
	f := newFakeSES(t, func(int) *failure { return &failure{status: 500, errorType: "InternalServiceErrorException"} })
	cfg := f.config()
	cfg.RetryMaxAttempts = 7
	s := newSES(f, &sleeps{})
	s.Client = mail.NewSESClient(cfg, f.srv.URL)
	s.MaxAttempts = 1
	if _, err := s.Send(context.Background(), testMessage()); err == nil {
		t.Fatal("no error")
	}
	if f.attempts() != 1 {
		t.Errorf("requests = %d, want 1 (no SDK retries)", f.attempts())
	}
}
