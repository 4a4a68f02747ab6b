package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/errs"
)

// pool is a fake Cognito user pool: it publishes a JWKS at
// /.well-known/jwks.json and signs tokens with its key.
type pool struct {
	srv     *httptest.Server
	key     *rsa.PrivateKey
	fetches atomic.Int32
}

func newPool(t *testing.T) *pool {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &pool{key: key}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/jwks.json" {
			http.NotFound(w, r)
			return
		}
		p.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pool) sign(t *testing.T, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(p.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCognitoVerify(t *testing.T) {
	p := newPool(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := auth.NewCognito(ctx, p.srv.URL, "client-1")
	if err != nil {
		t.Fatal(err)
	}
	c.Now = func() time.Time { return now }
	exp := now.Add(time.Hour).Unix()
	idToken := jwt.MapClaims{"sub": "u-1", "iss": p.srv.URL, "aud": "client-1", "exp": exp, "token_use": "id",
		"cognito:groups": []string{"admins"}, "email": "Ann@Example.com", "email_verified": true, "name": "Ann"}
	got, err := c.Verify(ctx, p.sign(t, "k1", idToken))
	if err != nil {
		t.Fatal(err)
	}
	if want := (auth.Identity{UserID: "u-1", Groups: []string{"admins"}, Email: "ann@example.com", Name: "Ann"}); !cmp.Equal(got, want) {
		t.Fatalf("ID token: %s", cmp.Diff(want, got))
	}
	access := jwt.MapClaims{"sub": "u-2", "iss": p.srv.URL, "client_id": "client-1", "exp": exp, "token_use": "access", "username": "bob"}
	if got, err := c.Verify(ctx, p.sign(t, "k1", access)); err != nil || got.UserID != "u-2" || got.Name != "bob" || got.Email != "" {
		t.Fatalf("access token: %+v, %v", got, err)
	}

	with := func(base jwt.MapClaims, k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for a, b := range base {
			c[a] = b
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	refused := map[string]string{
		"other audience":      p.sign(t, "k1", with(idToken, "aud", "client-2")),
		"other client_id":     p.sign(t, "k1", with(access, "client_id", "client-2")),
		"other issuer":        p.sign(t, "k1", with(idToken, "iss", "https://cognito-idp.eu-west-1.amazonaws.com/other")),
		"expired":             p.sign(t, "k1", with(idToken, "exp", now.Add(-time.Minute).Unix())),
		"no expiry":           p.sign(t, "k1", with(idToken, "exp", nil)),
		"unknown key id":      p.sign(t, "k2", idToken),
		"refresh token_use":   p.sign(t, "k1", with(idToken, "token_use", "refresh")),
		"bad subject":         p.sign(t, "k1", with(idToken, "sub", "a#b")),
		"HS256 with the JWKS": sign(t, jwt.SigningMethodHS256, []byte("k1"), idToken),
		"garbage":             "not.a.token",
		"empty":               "",
	}
	for name, tok := range refused {
		if _, err := c.Verify(ctx, tok); !errs.Is(err, errs.Unauthorized) {
			t.Errorf("%s: want Unauthorized, got %v", name, err)
		}
	}
	if n := p.fetches.Load(); n < 1 || n > 3 {
		t.Errorf("JWKS fetched %d times: want it cached (one fetch, plus at most a refresh for the unknown key id)", n)
	}
}

func TestNewCognitoRejectsConfig(t *testing.T) {
	for _, c := range [][2]string{{"eu-west-1_abc", "client"}, {"https://cognito-idp.eu-west-1.amazonaws.com/x", ""}} {
		if _, err := auth.NewCognito(context.Background(), c[0], c[1]); err == nil {
			t.Errorf("NewCognito(%q, %q): want an error", c[0], c[1])
		}
	}
}

func TestDevTokensCarryName(t *testing.T) {
	tok, err := dev.MintIdentity(auth.Identity{UserID: "u-1", Name: "Ann Example"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := dev.Verify(context.Background(), tok); err != nil || id.Name != "Ann Example" {
		t.Fatalf("Verify: %+v, %v", id, err)
	}
	if _, err := dev.MintIdentity(auth.Identity{UserID: "u-1", Name: "a\x00b"}, now, time.Hour); !errs.Is(err, errs.Invalid) {
		t.Fatalf("a name with a control character: want Invalid, got %v", err)
	}
}
