package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/golang-jwt/jwt/v5"

	"github.com/dynastream/dynastream/internal/errs"
)

// Identity is the authenticated caller.
type Identity struct {
	UserID string
	Groups []string
	// Email is the caller's verified e-mail address, when the token has one
	// (Cognito's email claim with email_verified true; dev tokens say so).
	Email string
	// Name is the caller's display name, when the token has one (the name
	// claim; Cognito's preferred_username or username otherwise).
	Name string
}

// Verifier checks a raw token: the WebSocket API's $connect has no
// authorizer, so the token comes in the query string and the writer
// verifies it itself.
type Verifier interface {
	Verify(ctx context.Context, token string) (Identity, error)
}

// Authenticator finds the caller of a request.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, error)
}

// userIDPattern keeps user ids safe inside keys (no '#').
var userIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$`)

// ValidUserID reports whether s can be a user id.
func ValidUserID(s string) bool { return userIDPattern.MatchString(s) }

// UserIDRule describes ValidUserID for error messages.
const UserIDRule = "1-128 characters: letters, digits and . _ @ : + - (not starting with a symbol)"

func identity(sub string, groups []string, email, name string) (Identity, error) {
	if !ValidUserID(sub) {
		return Identity{}, errs.New(errs.Unauthorized, "token subject is not a valid user id")
	}
	if !ValidName(name) {
		name = "" // a display name is a courtesy: a strange one is dropped, not fatal
	}
	return Identity{UserID: sub, Groups: groups, Email: strings.ToLower(email), Name: strings.TrimSpace(name)}, nil
}

// MaxName is the longest display name, in characters.
const MaxName = 100

// ValidName reports whether s can be a display name: valid UTF-8, at most
// MaxName characters, no control characters (empty is valid: no name).
func ValidName(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxName {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidEmail reports whether s is a plain e-mail address (no display name).
func ValidEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && len(s) <= 254
}

// DevTokens verifies and mints HS256 tokens for the local stack.
type DevTokens struct {
	Secret []byte
	Issuer string
	// Now is the clock tokens are verified against (nil: time.Now); Mint
	// takes its time as an argument, so a test with a fixed clock passes
	// the same clock here.
	Now func() time.Time
}

type claims struct {
	jwt.RegisteredClaims
	Groups []string `json:"cognito:groups,omitempty"`
	Email  string   `json:"email,omitempty"`
	Name   string   `json:"name,omitempty"`
}

// Mint returns a token for userID valid for ttl from now.
func (d DevTokens) Mint(userID string, groups []string, now time.Time, ttl time.Duration) (string, error) {
	return d.MintIdentity(Identity{UserID: userID, Groups: groups}, now, ttl)
}

// MintIdentity returns a token for the identity (its e-mail address, if
// any, counts as verified) valid for ttl from now.
func (d DevTokens) MintIdentity(id Identity, now time.Time, ttl time.Duration) (string, error) {
	userID, groups := id.UserID, id.Groups
	if !ValidUserID(userID) {
		return "", errs.Field("userId", UserIDRule)
	}
	if id.Email != "" && !ValidEmail(id.Email) {
		return "", errs.Field("email", "must be an e-mail address")
	}
	if !ValidName(id.Name) {
		return "", errs.Field("name", fmt.Sprintf("must be at most %d characters, without control characters", MaxName))
	}
	if len(d.Secret) == 0 {
		return "", errNoSecret
	}
	c := claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: userID, Issuer: d.Issuer,
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}, Groups: groups, Email: id.Email, Name: id.Name}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(d.Secret)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}

// Authenticate implements Authenticator for "Authorization: Bearer <token>".
func (d DevTokens) Authenticate(r *http.Request) (Identity, error) {
	// The scheme is case-insensitive (RFC 9110 §11.1).
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return Identity{}, errs.New(errs.Unauthorized, "missing bearer token (Authorization: Bearer <token>)")
	}
	return d.Verify(r.Context(), tok)
}

// Verify implements Verifier.
func (d DevTokens) Verify(_ context.Context, tok string) (Identity, error) {
	if tok == "" {
		return Identity{}, errs.New(errs.Unauthorized, "missing token")
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	key := func(*jwt.Token) (any, error) {
		if len(d.Secret) == 0 {
			return nil, errNoSecret // an empty HMAC key would accept forged tokens
		}
		return d.Secret, nil
	}
	var c claims
	_, err := jwt.ParseWithClaims(tok, &c, key, jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(d.Issuer),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(now))
	if err != nil {
		msg := "invalid token"
		if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			// the usual cause: a token from an earlier run of make run,
			// whose DEV_AUTH_SECRET is new at each start
			msg = "invalid token: not signed with this writer's DEV_AUTH_SECRET (make run makes a new one at each start): get a new token from POST /dev/tokens"
		}
		return Identity{}, &errs.Error{Code: errs.Unauthorized, Message: msg, Err: err}
	}
	return identity(c.Subject, c.Groups, c.Email, c.Name)
}

// APIGateway reads the claims API Gateway's JWT authorizer put on an HTTP
// API (payload 2.0) request; the token itself was verified by API Gateway.
type APIGateway struct{}

// Authenticate implements Authenticator.
func (APIGateway) Authenticate(r *http.Request) (Identity, error) {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.JWT == nil {
		return Identity{}, errs.New(errs.Unauthorized, "no JWT authorizer claims on the request")
	}
	cl := rc.Authorizer.JWT.Claims
	var groups []string
	if g := strings.Trim(cl["cognito:groups"], "[]"); g != "" {
		groups = strings.Fields(strings.ReplaceAll(g, ",", " "))
	}
	email := ""
	if cl["email_verified"] == "true" {
		email = cl["email"]
	}
	return identity(cl["sub"], groups, email, cmp.Or(cl["name"], cl["preferred_username"], cl["cognito:username"], cl["username"]))
}

var errNoSecret = errors.New("auth: the dev token secret is empty")
