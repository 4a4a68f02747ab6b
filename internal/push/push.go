package push

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi/types"
	"github.com/aws/smithy-go/encoding/httpbinding"
)

// ErrGone is a push to a connection that is gone (410 GoneException).
var ErrGone = errors.New("push: the connection is gone")

// Client pushes frames to connections.
type Client struct {
	// API closes connections (DeleteConnection).
	API *apigatewaymanagementapi.Client

	// Pushes are PostToConnection requests made here: the request the
	// SDK makes (the same path escaping, headers and SigV4 signature by
	// the SDK's signer), without the SDK's per-call middleware, which
	// costs more than the rest of a push together (BenchmarkPush).
	base        *url.URL
	http        aws.HTTPClient
	creds       aws.CredentialsProvider
	region      string
	signer      *v4.Signer
	maxAttempts int
	backoff     func(attempt int, err error) (time.Duration, error)
	now         func() time.Time
	// skew is the server's clock less ours (nanoseconds), from the last
	// response's Date header: pushes are signed as of the server's time,
	// as the SDK's clock skew correction does, so that a machine whose
	// clock is off by more than SigV4's five minutes still pushes.
	skew atomic.Int64
}

// Clock skew correction as the SDK's (its Clock Skew Correction SEP): a
// response's Date is trusted unless the round trip took longer than
// maxTrusted or it came from a cache (Age); a signature refused with one
// of skewCodes is tried again when the signing time was off from the
// server's by more than skewThreshold.
const (
	maxTrusted    = 15 * time.Minute
	skewThreshold = 4 * time.Minute
)

var skewCodes = map[string]bool{
	"InvalidSignatureException": true, "SignatureDoesNotMatch": true, "AuthFailure": true,
	"RequestTimeTooSkewed": true, "AccessDeniedException": true,
}

// Defaults of a Client.
const (
	// DefaultMaxAttempts is how often a push is tried (the SDK's default).
	DefaultMaxAttempts = 3
	// idleConns is the kept-alive connections to the endpoint: as many
	// as the notifier's pushes run at once (notify.DefaultFanout), so
	// that a broadcast opens no connection after its first.
	idleConns = 64
)

// New returns a Client for the management endpoint: in AWS
// https://<api id>.execute-api.<region>.amazonaws.com/<stage>, locally
// the writer's URL. It signs with cfg's credentials and region; sends
// through cfg's HTTPClient when set, else the SDK's default client keeping
// 64 connections alive; and retries as cfg's Retryer says (its attempts
// and delays; without one, 3 attempts with the SDK's jittered backoff),
// as the SDK's client made from cfg would.
func New(cfg aws.Config, endpoint string) *Client {
	c := newClient(cfg, endpoint)
	c.API = apigatewaymanagementapi.NewFromConfig(cfg, func(o *apigatewaymanagementapi.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
	return c
}

// newClient is New without the SDK's client (API): what Push and Probe
// use, so that a program that only probes (the writer's Lambda, whose
// bootstrap has a size budget) links none of it.
func newClient(cfg aws.Config, endpoint string) *Client {
	base, err := url.Parse(strings.TrimRight(endpoint, "/"))
	if err != nil {
		base = &url.URL{Path: endpoint} // every push then fails, naming it
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns, t.MaxIdleConnsPerHost = idleConns, idleConns
		})
	}
	creds := cfg.Credentials
	switch {
	case creds == nil || aws.IsCredentialsProvider(creds, aws.AnonymousCredentials{}):
		creds = nil // unsigned, as the SDK sends with anonymous credentials
	case !aws.IsCredentialsProvider(creds, (*aws.CredentialsCache)(nil)):
		creds = aws.NewCredentialsCache(creds)
	}
	attempts, backoff := DefaultMaxAttempts, retry.NewExponentialJitterBackoff(20*time.Second).BackoffDelay
	if cfg.Retryer != nil {
		r := cfg.Retryer()
		attempts, backoff = r.MaxAttempts(), r.RetryDelay
	}
	return &Client{
		base: base, http: hc, creds: creds, region: cfg.Region, signer: v4.NewSigner(),
		maxAttempts: attempts, backoff: backoff, now: time.Now,
	}
}

// Push sends one frame to one connection (PostToConnection), trying again
// after a throttle, a 5xx or a failed connection, as the SDK's standard
// retryer does. A connection that is gone answers ErrGone.
func (c *Client) Push(ctx context.Context, connectionID string, frame []byte) error {
	return c.call(ctx, http.MethodPost, connectionID, frame)
}

// call makes one management request (a push, or a GetConnection) with
// the SDK's retries.
func (c *Client) call(ctx context.Context, method, connectionID string, frame []byte) error {
	sum := sha256.Sum256(frame)
	payload := hex.EncodeToString(sum[:])
	var err error
	for attempt := 1; ; attempt++ {
		var retryable bool
		retryable, err = c.do(ctx, method, connectionID, frame, payload)
		if err == nil || !retryable || attempt >= c.maxAttempts {
			break
		}
		d, derr := c.backoff(attempt, err)
		if derr != nil {
			break
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s %s: %w (after %v)", map[bool]string{true: "push to", false: "get connection"}[method == http.MethodPost], connectionID, ctx.Err(), err)
		case <-t.C:
		}
	}
	return err
}

// do makes one attempt, and says whether a failure may be tried again.
func (c *Client) do(ctx context.Context, method, connectionID string, frame []byte, payload string) (bool, error) {
	what := "push to"
	if method == http.MethodGet {
		what = "get connection"
	}
	u := *c.base
	u.Path = c.base.Path + "/@connections/" + connectionID
	u.RawPath = c.base.EscapedPath() + "/@connections/" + httpbinding.EscapePath(connectionID, true)
	var in io.Reader = http.NoBody
	if method == http.MethodPost {
		in = bytes.NewReader(frame)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), in)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", what, connectionID, err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	skew := time.Duration(c.skew.Load())
	if c.creds != nil {
		creds, err := c.creds.Retrieve(ctx)
		if err != nil {
			return false, fmt.Errorf("%s %s: credentials: %w", what, connectionID, err)
		}
		if err := c.signer.SignHTTP(ctx, creds, req, payload, "execute-api", c.region, c.now().Add(skew).UTC()); err != nil {
			return false, fmt.Errorf("%s %s: sign: %w", what, connectionID, err)
		}
	}
	sent := c.now()
	res, err := c.http.Do(req)
	if err != nil {
		// what the SDK retries: a connection reset or cut, a timeout
		again := ctx.Err() == nil && retry.RetryableConnectionError{}.IsErrorRetryable(err) == aws.TrueTernary
		return again, fmt.Errorf("%s %s: %w", what, connectionID, err)
	}
	defer res.Body.Close()
	server, seen := c.serverSkew(res, sent)
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20)) // so the connection is kept
	switch s := res.StatusCode; {
	case s/100 == 2:
		return false, nil
	case s == http.StatusGone:
		return false, fmt.Errorf("%w: %s", ErrGone, connectionID)
	default:
		kind := res.Header.Get("X-Amzn-ErrorType")
		if i := strings.IndexByte(kind, ':'); i >= 0 {
			kind = kind[:i]
		}
		retryable := s == http.StatusTooManyRequests || s == http.StatusInternalServerError || s == http.StatusBadGateway ||
			s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout ||
			(skewCodes[kind] && seen && (skew-server).Abs() > skewThreshold) // signed as of a clock that was off
		return retryable, fmt.Errorf("%s %s: HTTP %d %s: %s", what, connectionID, s, kind, strings.TrimSpace(string(body)))
	}
}

// serverSkew reads the server's clock less ours from a response's Date
// header, and keeps it for the next pushes' signatures; seen is false when
// the header is missing or not to be trusted.
func (c *Client) serverSkew(res *http.Response, sent time.Time) (time.Duration, bool) {
	d := res.Header.Get("Date")
	if d == "" || res.Header.Get("Age") != "" {
		return 0, false
	}
	at := c.now()
	server, err := http.ParseTime(d)
	if err != nil || at.Sub(sent) > maxTrusted {
		return 0, false
	}
	skew := server.Sub(at)
	c.skew.Store(int64(skew))
	return skew, true
}

// Close closes one connection (DeleteConnection); API Gateway then runs
// the API's $disconnect route. A connection that is gone answers ErrGone.
func (c *Client) Close(ctx context.Context, connectionID string) error {
	_, err := c.API.DeleteConnection(ctx, &apigatewaymanagementapi.DeleteConnectionInput{ConnectionId: aws.String(connectionID)})
	return outcome("close", connectionID, err)
}

// Probe asks API Gateway whether connections are open. It is a Client's
// GetConnection made as its pushes are (signed, retried as the SDK
// retries), without the SDK's client.
type Probe struct{ c *Client }

// NewProbe returns a Probe of the management endpoint (as New).
func NewProbe(cfg aws.Config, endpoint string) Probe { return Probe{newClient(cfg, endpoint)} }

// Alive reports whether API Gateway knows the connection
// (GetConnection): false for one that is gone (410 GoneException), or
// that it never opened (a $connect it refused).
func (p Probe) Alive(ctx context.Context, connectionID string) (bool, error) {
	err := p.c.call(ctx, http.MethodGet, connectionID, nil)
	if errors.Is(err, ErrGone) {
		return false, nil
	}
	return err == nil, err
}

// outcome is a management call's error: ErrGone for a connection that is
// gone (410 GoneException), else the error wrapped with what was done.
func outcome(what, connectionID string, err error) error {
	var gone *types.GoneException
	switch {
	case errors.As(err, &gone):
		return fmt.Errorf("%w: %s", ErrGone, connectionID)
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, connectionID, err)
	}
	return nil
}
