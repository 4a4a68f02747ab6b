package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigV4 authenticates the callers of the local management endpoint as API
// Gateway authenticates its own: each request is signed with Signature
// Version 4 for the execute-api service, with these credentials (the
// local stack makes a random secret and gives it to the notifier, which
// signs with the real apigatewaymanagementapi client). A request that is
// unsigned, signed with other credentials or for another service,
// altered after signing, or dated more than MaxSkew from now is refused.
type SigV4 struct {
	AccessKeyID, SecretAccessKey string
	Now                          func() time.Time // nil: time.Now
}

// MaxSkew is how far a signed request's date may be from now, as in AWS.
const MaxSkew = 5 * time.Minute

// Verify checks r's signature over its method, path, query, signed
// headers and body.
func (s SigV4) Verify(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return errors.New("missing authentication: sign the request with SigV4 (the stack's local push credentials)")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[4] != "aws4_request" || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return errors.New("malformed SigV4 Authorization header")
	}
	if scope[0] != s.AccessKeyID {
		return fmt.Errorf("unknown access key %q", scope[0])
	}
	if scope[3] != "execute-api" {
		return fmt.Errorf("signed for service %q, not execute-api", scope[3])
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("no valid X-Amz-Date")
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if d := now().Sub(at); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("signed at %s, more than %s from now", at.Format(time.RFC3339), MaxSkew)
	}
	// The same request with only the headers it signed, signed again with
	// the secret: the signatures agree only if nothing was changed.
	again, err := http.NewRequestWithContext(context.Background(), r.Method, r.URL.String(), nil)
	if err != nil {
		return fmt.Errorf("rebuild the signed request: %w", err)
	}
	again.URL = r.URL
	again.Host = r.Host
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			again.ContentLength = int64(len(body))
		default:
			for _, v := range r.Header.Values(h) {
				again.Header.Add(h, v)
			}
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), scope[3], scope[2], at); err != nil {
		return fmt.Errorf("sign again: %w", err)
	}
	want := ""
	for _, f := range strings.Split(strings.TrimPrefix(again.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "Signature="); ok {
			want = v
		}
	}
	if want == "" || !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return errors.New("the request signature does not match: signed with another secret, or changed after signing")
	}
	return nil
}
