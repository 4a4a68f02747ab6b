package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/errs"
)

var (
	now    = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	secret = []byte("0123456789abcdef0123456789abcdef")
	dev    = auth.DevTokens{Secret: secret, Issuer: "dynastream-test", Now: func() time.Time { return now }}
)

func bearer(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/rooms", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// sign signs arbitrary claims with a method and key, bypassing Mint's checks.
func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validClaims() jwt.MapClaims {
	return jwt.MapClaims{"sub": "alice", "iss": "dynastream-test", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func TestDevTokensRoundTrip(t *testing.T) {
	tok, err := dev.Mint("alice", []string{"admins", "beta"}, now, 12*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id, err := dev.Authenticate(bearer(tok))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(auth.Identity{UserID: "alice", Groups: []string{"admins", "beta"}}, id); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}

	// The claims are the documented ones.
	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil {
		t.Fatal(err)
	}
	if c["sub"] != "alice" || c["iss"] != "dynastream-test" || c["exp"] != float64(now.Add(12*time.Hour).Unix()) || c["iat"] != float64(now.Unix()) {
		t.Errorf("claims = %v", c)
	}

	// The scheme is case-insensitive; the token is what follows it.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "bearer "+tok)
	if id, err := dev.Authenticate(r); err != nil || id.UserID != "alice" {
		t.Errorf("lower-case scheme: %+v, %v", id, err)
	}

	// Still valid one second before expiry, invalid at it.
	late := dev
	late.Now = func() time.Time { return now.Add(12*time.Hour - time.Second) }
	if _, err := late.Authenticate(bearer(tok)); err != nil {
		t.Errorf("just before expiry: %v", err)
	}
	late.Now = func() time.Time { return now.Add(12 * time.Hour) }
	if _, err := late.Authenticate(bearer(tok)); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("at expiry: err = %v, want unauthorized", err)
	}
}

func TestMintRejects(t *testing.T) {
	for _, u := range []string{"", "a#b", "-alice", strings.Repeat("a", 129), "al ice", "ålice"} {
		_, err := dev.Mint(u, nil, now, time.Hour)
		var e *errs.Error
		if !errs.Is(err, errs.Invalid) || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "userId" {
			t.Errorf("Mint(%q): err = %v, want invalid userId", u, err)
		}
	}
	for _, u := range []string{"a", "alice@example.com", "us-east-1:3f2a", "A.b_c+d:e-f", strings.Repeat("a", 128)} {
		if !auth.ValidUserID(u) {
			t.Errorf("ValidUserID(%q) = false", u)
		}
	}
	noSecret := auth.DevTokens{Issuer: "dynastream-test"}
	if _, err := noSecret.Mint("alice", nil, now, time.Hour); err == nil {
		t.Error("Mint with an empty secret succeeded")
	}
}

func TestDevTokensRejects(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other := auth.DevTokens{Secret: []byte("another secret, another stack!!"), Issuer: "dynastream-test"}
	otherTok, err := other.Mint("alice", nil, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherIss := auth.DevTokens{Secret: secret, Issuer: "someone-else"}
	otherIssTok, err := otherIss.Mint("alice", nil, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expiredTok, err := dev.Mint("alice", nil, now.Add(-13*time.Hour), 12*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	noExp := validClaims()
	delete(noExp, "exp")
	badSub := validClaims()
	badSub["sub"] = "a#b"
	noSub := validClaims()
	delete(noSub, "sub")
	good := sign(t, jwt.SigningMethodHS256, secret, validClaims())

	tests := map[string]*http.Request{
		"no header":      httptest.NewRequest(http.MethodGet, "/", nil),
		"empty bearer":   bearer(""),
		"basic scheme":   func() *http.Request { r := bearer(""); r.Header.Set("Authorization", "Basic YWxpY2U6eA=="); return r }(),
		"token alone":    func() *http.Request { r := bearer(""); r.Header.Set("Authorization", good); return r }(),
		"garbage":        bearer("not.a.jwt"),
		"wrong secret":   bearer(otherTok),
		"wrong issuer":   bearer(otherIssTok),
		"expired":        bearer(expiredTok),
		"no exp":         bearer(sign(t, jwt.SigningMethodHS256, secret, noExp)),
		"alg none":       bearer(sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, validClaims())),
		"RS256":          bearer(sign(t, jwt.SigningMethodRS256, rsaKey, validClaims())),
		"HS512 same key": bearer(sign(t, jwt.SigningMethodHS512, secret, validClaims())),
		"invalid sub":    bearer(sign(t, jwt.SigningMethodHS256, secret, badSub)),
		"no sub":         bearer(sign(t, jwt.SigningMethodHS256, secret, noSub)),
		"tampered":       bearer(good[:len(good)-2] + "xx"),
	}
	for name, r := range tests {
		t.Run(name, func(t *testing.T) {
			id, err := dev.Authenticate(r)
			if !errs.Is(err, errs.Unauthorized) {
				t.Errorf("Authenticate = %+v, %v; want unauthorized", id, err)
			}
		})
	}
	if id, err := dev.Authenticate(bearer(good)); err != nil || id.UserID != "alice" {
		t.Errorf("control token: %+v, %v", id, err)
	}
	// A token of an earlier run of the stack says how to get a new one.
	if _, err := dev.Authenticate(bearer(otherTok)); err == nil || !strings.Contains(err.Error(), "get a new token from POST /dev/tokens") {
		t.Errorf("a token of another secret: %v", err)
	}

	// An empty secret accepts nothing, not even a token signed with the empty key.
	empty := auth.DevTokens{Issuer: "dynastream-test", Now: dev.Now}
	forged := sign(t, jwt.SigningMethodHS256, []byte{}, validClaims())
	if _, err := empty.Authenticate(bearer(forged)); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("empty secret accepted a token signed with the empty key: %v", err)
	}
}

// apiGatewayEvent is an HTTP API (payload 2.0) request as API Gateway sends
// it after its JWT authorizer accepted the token (arrays in claims arrive
// flattened to "[a b]").
const apiGatewayEvent = `{
  "version": "2.0",
  "routeKey": "GET /me/rooms",
  "rawPath": "/me/rooms",
  "rawQueryString": "limit=5",
  "headers": {"authorization": "Bearer eyJ...", "host": "abc.execute-api.eu-central-2.amazonaws.com"},
  "requestContext": {
    "accountId": "123456789012",
    "apiId": "abc",
    "authorizer": {"jwt": {
      "claims": {"sub": "alice", "cognito:groups": "[admins beta]", "iss": "https://cognito-idp.eu-central-2.amazonaws.com/pool", "token_use": "access"},
      "scopes": null
    }},
    "domainName": "abc.execute-api.eu-central-2.amazonaws.com",
    "http": {"method": "GET", "path": "/me/rooms", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": "curl"},
    "requestId": "r-1",
    "routeKey": "GET /me/rooms",
    "stage": "$default",
    "time": "01/Jun/2025:12:00:00 +0000",
    "timeEpoch": 1748779200000
  },
  "isBase64Encoded": false
}`

func gatewayEvent(t *testing.T, claims map[string]string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal([]byte(apiGatewayEvent), &ev); err != nil {
		t.Fatal(err)
	}
	if claims != nil {
		ev.RequestContext.Authorizer.JWT.Claims = claims
	}
	return ev
}

func TestAPIGatewayFromLibraryRequest(t *testing.T) {
	tests := []struct {
		name    string
		claims  map[string]string // nil: the event's own
		noAuth  bool
		want    auth.Identity
		wantErr bool
	}{
		{name: "claims", want: auth.Identity{UserID: "alice", Groups: []string{"admins", "beta"}}},
		{name: "no groups", claims: map[string]string{"sub": "bob"}, want: auth.Identity{UserID: "bob"}},
		{name: "one group", claims: map[string]string{"sub": "bob", "cognito:groups": "[admins]"}, want: auth.Identity{UserID: "bob", Groups: []string{"admins"}}},
		{name: "comma groups", claims: map[string]string{"sub": "bob", "cognito:groups": "[a,b, c]"}, want: auth.Identity{UserID: "bob", Groups: []string{"a", "b", "c"}}},
		{name: "invalid sub", claims: map[string]string{"sub": "a#b"}, wantErr: true},
		{name: "no sub", claims: map[string]string{"email": "a@b.c"}, wantErr: true},
		{name: "no authorizer", noAuth: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := gatewayEvent(t, tt.claims)
			if tt.noAuth {
				ev.RequestContext.Authorizer = nil
			}
			acc := core.RequestAccessorV2{}
			r, err := acc.EventToRequestWithContext(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			id, err := auth.APIGateway{}.Authenticate(r)
			if tt.wantErr {
				if !errs.Is(err, errs.Unauthorized) {
					t.Errorf("Authenticate = %+v, %v; want unauthorized", id, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, id); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAPIGatewayThroughAdapter runs the request through httpadapter.NewV2,
// the adapter cmd/writer uses in Lambda.
func TestAPIGatewayThroughAdapter(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := auth.APIGateway{}.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	})
	resp, err := httpadapter.NewV2(h).ProxyWithContext(context.Background(), gatewayEvent(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	var id auth.Identity
	if err := json.Unmarshal([]byte(resp.Body), &id); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(auth.Identity{UserID: "alice", Groups: []string{"admins", "beta"}}, id); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
}

// TestAPIGatewayIgnoresHeaders: outside Lambda nothing vouches for a request,
// so claims smuggled in the proxy library's context header are not trusted.
func TestAPIGatewayIgnoresHeaders(t *testing.T) {
	ev := gatewayEvent(t, nil)
	acc := core.RequestAccessorV2{}
	r, err := acc.ProxyEventToHTTPRequest(ev) // puts the context in a header, not in the context
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Get(core.APIGwContextHeader) == "" {
		t.Fatal("the library no longer sets the context header; test is moot")
	}
	if id, err := (auth.APIGateway{}).Authenticate(r); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("Authenticate trusted a header: %+v, %v", id, err)
	}
	plain := httptest.NewRequest(http.MethodGet, "/me/rooms", nil)
	plain.Header.Set("Authorization", "Bearer x")
	if _, err := (auth.APIGateway{}).Authenticate(plain); !errs.Is(err, errs.Unauthorized) {
		t.Errorf("plain request: err = %v, want unauthorized", err)
	}
}
