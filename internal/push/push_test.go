package push_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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
