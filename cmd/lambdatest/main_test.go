package lambdatest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/emf"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/runtimeapi"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// bin holds the bootstraps, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bootstraps")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := build(dir, nil); err != nil {
		fmt.Fprintln(os.Stderr, "lambdatest: build the bootstraps:", err)
		os.Exit(1)
	}
	bin = dir
	defer os.RemoveAll(dir)
	ddbtest.Main(m)
}

// build builds writer, projector and notifier with the tags, linker and
// compiler flags the Makefile's LAMBDA_TAGS, LAMBDA_LDFLAGS and
// LAMBDA_GCFLAGS give `make package`, for the host (env nil) or for the
// platform env names (GOOS, GOARCH).
func build(dir string, env []string) error {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		return err
	}
	get := func(name string) (string, error) {
		m := regexp.MustCompile(`(?m)^` + name + `\s*:=\s*(.*)$`).FindSubmatch(mk)
		if m == nil {
			return "", fmt.Errorf("no %s in the Makefile", name)
		}
		return strings.TrimSpace(string(m[1])), nil
	}
	tags, err := get("LAMBDA_TAGS")
	if err != nil {
		return err
	}
	ldflags, err := get("LAMBDA_LDFLAGS")
	if err != nil {
		return err
	}
	gcflags, err := get("LAMBDA_GCFLAGS")
	if err != nil {
		return err
	}
	for _, p := range []string{"writer", "projector", "notifier"} {
		cmd := exec.Command("go", "build", "-tags", tags, "-trimpath", "-ldflags", ldflags, "-gcflags", gcflags, "-o", filepath.Join(dir, p), "../"+p)
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", p, err, out)
		}
	}
	return nil
}

// env is what Lambda sets for every function, and the project's tables.
func env(table, bookkeeping string, extra ...string) []string {
	return append([]string{
		"AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "AWS_SESSION_TOKEN=token",
		"AWS_LAMBDA_FUNCTION_NAME=test", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/test", "AWS_LAMBDA_LOG_STREAM_NAME=2026/11/23/[$LATEST]abc", "_HANDLER=bootstrap",
		"DYNAMODB_TABLE_NAME=" + table, "BOOKKEEPING_TABLE_NAME=" + bookkeeping, "EFFECTS_TABLE_NAME=" + store.EffectsTableName(table),
		"DYNAMODB_ENDPOINT=" + ddbtest.Endpoint(),
	}, extra...)
}

// start runs a bootstrap and waits for its init.
func start(t *testing.T, program string, environ []string) (*runtimeapi.Function, time.Duration) {
	t.Helper()
	environ = recordDynamoDB(t, program, environ)
	f, err := runtimeapi.Start(filepath.Join(bin, program), environ)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	t.Cleanup(func() { // (before Stop) every metric line is valid EMF
		for _, l := range f.Logs() {
			if emf.IsEMF([]byte(l)) {
				if err := emf.Validate([]byte(l)); err != nil {
					t.Errorf("%s: %v: %s", program, err, l)
				}
			}
		}
	})
	d, err := f.Init(30 * time.Second)
	if err != nil {
		t.Fatalf("%s init: %v\n%s", program, err, strings.Join(f.Logs(), "\n"))
	}
	return f, d
}

// httpEvent is an API Gateway HTTP API (payload 2.0) event, with the claims
// a JWT authorizer passes (none when claims is nil).
func httpEvent(method, path, query string, claims map[string]string, body string, b64 bool) []byte {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: query,
		Headers: map[string]string{"content-type": "application/json", "user-agent": "lambdatest", "x-forwarded-for": "203.0.113.7"},
		Body:    body, IsBase64Encoded: b64,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: "api1", Stage: "$default", RequestID: "req-" + path, DomainName: "api1.execute-api.eu-west-1.amazonaws.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "lambdatest"},
		},
	}
	if query != "" {
		ev.QueryStringParameters = map[string]string{}
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			ev.QueryStringParameters[k] = v
		}
	}
	if claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: nil},
		}
	}
	b, _ := json.Marshal(ev)
	return b
}

// call invokes the writer with an HTTP event and decodes its response.
func call(t *testing.T, f *runtimeapi.Function, method, path, query string, claims map[string]string, body string, want int) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	r := f.Invoke(httpEvent(method, path, query, claims, body, false), 10*time.Second)
	return decodeHTTP(t, r, method+" "+path, want)
}

func decodeHTTP(t *testing.T, r runtimeapi.Result, what string, want int) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	if r.Error != nil || r.TimedOut || r.Exited {
		t.Fatalf("%s: %+v (error %+v)", what, r, r.Error)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(r.Payload, &resp); err != nil {
		t.Fatalf("%s: %v: %s", what, err, r.Payload)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d: %s", what, resp.StatusCode, want, resp.Body)
	}
	body := resp.Body
	if resp.IsBase64Encoded {
		b, _ := base64.StdEncoding.DecodeString(body)
		body = string(b)
	}
	var doc map[string]any
	_ = json.Unmarshal([]byte(body), &doc)
	return resp, doc
}

func claims(user, email string) map[string]string {
	return map[string]string{"sub": user, "email": email, "email_verified": "true", "name": strings.ToUpper(user[:1]) + user[1:],
		"iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_test", "token_use": "id"}
}

// streamEvent reads every record of the table's stream so far (DynamoDB
// Local) and returns them as Lambda delivers them.
func streamEvent(t *testing.T, c *ddb.Clients, arn string) events.DynamoDBEvent {
	t.Helper()
	ev, err := replay.Capture(context.Background(), c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// batchResponse decodes a stream consumer's answer.
func batchResponse(t *testing.T, r runtimeapi.Result) events.DynamoDBEventResponse {
	t.Helper()
	if r.Error != nil || r.TimedOut || r.Exited {
		t.Fatalf("invocation: %+v (error %+v)", r, r.Error)
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(r.Payload, &resp); err != nil {
		t.Fatalf("%v: %s", err, r.Payload)
	}
	return resp
}

func payload(t *testing.T, ev any) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeAWS records the wire requests of one service and checks their
// signature's scope.
type fakeAWS struct {
	t       *testing.T
	service string // the SigV4 signing name
	answer  func(target string, body []byte) (int, string)

	mu       sync.Mutex
	requests []fakeRequest
	srv      *httptest.Server
}

type fakeRequest struct {
	Method, Path, Target string
	Body                 []byte
}

func newFake(t *testing.T, service string, answer func(target string, body []byte) (int, string)) *fakeAWS {
	f := &fakeAWS{t: t, service: service, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/"+service+"/aws4_request") ||
			r.Header.Get("X-Amz-Security-Token") != "token" {
			t.Errorf("%s: request not signed with the function's credentials for %s: %q", service, service, auth)
		}
		f.mu.Lock()
		f.requests = append(f.requests, fakeRequest{Method: r.Method, Path: r.URL.Path, Target: r.Header.Get("X-Amz-Target"), Body: body})
		f.mu.Unlock()
		status, out := f.answer(r.Header.Get("X-Amz-Target"), body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAWS) all() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// emfLines returns the function's EMF lines that contain every one of subs.
func emfLines(f *runtimeapi.Function, subs ...string) []string {
	var out []string
	for _, l := range f.LogsContaining(subs...) {
		if emf.IsEMF([]byte(l)) {
			out = append(out, l)
		}
	}
	return out
}

// maxBootstrap bounds a bootstrap (cold starts grow with it).
const maxBootstrap = 10 << 20

// Every bootstrap, built as `make package` builds it (linux/arm64, the
// Makefile's flags), is at most 10 MiB.
func TestBootstrapSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := build(dir, []string{"GOOS=linux", "GOARCH=arm64"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"writer", "projector", "notifier"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-9s %10d bytes (%.2f MiB)", p, fi.Size(), float64(fi.Size())/(1<<20))
		if fi.Size() > maxBootstrap {
			t.Errorf("%s's bootstrap is %d bytes (%.2f MiB), over %d (10 MiB)", p, fi.Size(), float64(fi.Size())/(1<<20), maxBootstrap)
		}
	}
}
