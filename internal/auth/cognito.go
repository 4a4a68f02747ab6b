package auth

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/dynastream/dynastream/internal/errs"
)

// Cognito verifies Cognito user pool tokens (ID or access tokens, RS256)
// against the pool's published keys, as API Gateway's JWT authorizer does:
// the issuer must match, the token must not be expired, and its audience
// (aud, or client_id when there is no aud) must be the app client.
type Cognito struct {
	// Issuer is the pool's issuer URL,
	// https://cognito-idp.<region>.amazonaws.com/<user pool id>.
	Issuer string
	// ClientID is the app client the tokens must be issued for.
	ClientID string
	// Keys finds a token's verification key (NewCognito: the pool's JWKS,
	// fetched once and cached, refreshed hourly and on an unknown key id).
	Keys jwt.Keyfunc
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// NewCognito returns a Cognito verifier whose keys come from
// <issuer>/.well-known/jwks.json. The keys are fetched in the background
// until ctx ends; a token that arrives before they are is refused, not
// waited on forever (the first fetch is usually done within a cold start).
func NewCognito(ctx context.Context, issuer, clientID string) (*Cognito, error) {
	if !strings.HasPrefix(issuer, "https://") && !strings.HasPrefix(issuer, "http://") {
		return nil, fmt.Errorf("auth: issuer %q: want a URL (https://cognito-idp.<region>.amazonaws.com/<pool id>)", issuer)
	}
	if clientID == "" {
		return nil, fmt.Errorf("auth: the app client id is required")
	}
	k, err := keyfunc.NewDefaultCtx(ctx, []string{strings.TrimSuffix(issuer, "/") + "/.well-known/jwks.json"})
	if err != nil {
		return nil, fmt.Errorf("auth: JWKS: %w", err)
	}
	return &Cognito{Issuer: issuer, ClientID: clientID, Keys: k.Keyfunc}, nil
}

type cognitoClaims struct {
	jwt.RegisteredClaims
	Groups          []string `json:"cognito:groups,omitempty"`
	Email           string   `json:"email,omitempty"`
	EmailVerified   any      `json:"email_verified,omitempty"` // a bool in ID tokens
	Name            string   `json:"name,omitempty"`
	PreferredName   string   `json:"preferred_username,omitempty"`
	CognitoUsername string   `json:"cognito:username,omitempty"`
	Username        string   `json:"username,omitempty"`
	ClientID        string   `json:"client_id,omitempty"`
	TokenUse        string   `json:"token_use,omitempty"`
}

// Verify implements Verifier.
func (c *Cognito) Verify(_ context.Context, tok string) (Identity, error) {
	if tok == "" {
		return Identity{}, errs.New(errs.Unauthorized, "missing token")
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	var cl cognitoClaims
	_, err := jwt.ParseWithClaims(tok, &cl, c.Keys, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(c.Issuer),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(now))
	if err != nil {
		return Identity{}, &errs.Error{Code: errs.Unauthorized, Message: "invalid token", Err: err}
	}
	if cl.TokenUse != "" && cl.TokenUse != "id" && cl.TokenUse != "access" {
		return Identity{}, errs.New(errs.Unauthorized, "invalid token: token_use %q", cl.TokenUse)
	}
	aud := slices.Contains(cl.Audience, c.ClientID) || (len(cl.Audience) == 0 && cl.ClientID == c.ClientID)
	if !aud {
		return Identity{}, errs.New(errs.Unauthorized, "invalid token: not issued for this app client")
	}
	email := ""
	if v := cl.EmailVerified; v == true || v == "true" {
		email = cl.Email
	}
	return identity(cl.Subject, cl.Groups, email, cmp.Or(cl.Name, cl.PreferredName, cl.CognitoUsername, cl.Username))
}
