package replay

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrCrashed is what every request a handler makes through Transport or
// APIOption returns once the kit has crashed the handler call (see
// Schedule.CrashBetweenRequests): the request the crash came after was
// sent and carried out, its response was lost, and no later request of
// that call leaves the process.
var ErrCrashed = errors.New("replay: the handler call crashed here (an injected crash between two requests)")

// crashPoint is one handler call's request count and the request it
// crashes after (0: never).
type crashPoint struct {
	mu      sync.Mutex
	after   int
	sent    int
	crashed bool
}

type crashKey struct{}

// request is called before each request of the call; send is false when
// the call has crashed already, lost true when this request is the one it
// crashes after (it is sent, its answer lost).
func (c *crashPoint) request() (send, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return false, false
	}
	c.sent++
	if c.after > 0 && c.sent == c.after {
		c.crashed = true
		return true, true
	}
	return true, false
}

func (c *crashPoint) result() (sent int, crashed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.crashed
}

func crashAt(ctx context.Context) *crashPoint {
	c, _ := ctx.Value(crashKey{}).(*crashPoint)
	return c
}

// Transport returns an http.RoundTripper (base, or
// http.DefaultTransport when base is nil) that lets the kit crash a
// handler call between two of its HTTP requests — a webhook, an
// e-mail API, anything the handler calls over HTTP with the context it
// was given. Give the handler's HTTP client this transport:
//
//	client := &http.Client{Transport: replay.Transport(nil)}
//
// Outside a replay (a context Deliver did not make) it only passes the
// request to base, so the same client can serve in production.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return crashTransport{base}
}

type crashTransport struct{ base http.RoundTripper }

func (t crashTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := crashAt(req.Context())
	if c == nil {
		return t.base.RoundTrip(req)
	}
	send, lost := c.request()
	if !send {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrCrashed
	}
	resp, err := t.base.RoundTrip(req)
	if lost {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, ErrCrashed
	}
	return resp, err
}

// APIOption is an AWS SDK for Go v2 client option (for aws.Config's or a
// client's APIOptions) that lets the kit crash a handler call between two
// of its requests to AWS, as Transport does for plain HTTP: the request the
// crash comes after is sent and carried out (a put is written, a message
// sent), its answer is lost, and the call's later requests fail with
// ErrCrashed without being sent. The SDK's own retries of a request count
// as requests. For example:
//
//	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.APIOptions = append(o.APIOptions, replay.APIOption)
//	})
//
// Outside a replay it does nothing.
func APIOption(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("replay.crash",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			c := crashAt(ctx)
			if c == nil {
				return next.HandleDeserialize(ctx, in)
			}
			send, lost := c.request()
			if !send {
				return middleware.DeserializeOutput{}, middleware.Metadata{}, ErrCrashed
			}
			out, md, err := next.HandleDeserialize(ctx, in)
			if lost {
				if r, ok := out.RawResponse.(*smithyhttp.Response); ok && r.Body != nil {
					_ = r.Body.Close()
				}
				return middleware.DeserializeOutput{}, md, ErrCrashed
			}
			return out, md, err
		}), middleware.After)
}

// noDeadline is a context without its parent's deadline, with its
// cancellation and values.
type noDeadline struct{ context.Context }

func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// runClock is a delivery lane's time as idempotency Guards see it
// (idempotency.Clock, given to every handler call): real time plus all
// that Guards have waited in it. A crashed call leaves its claims held, as
// a Lambda that died mid-invocation does; the next delivery's Guard waits
// out the hold, as it would in Lambda, but the wait moves this clock
// instead of taking real time, so crash schedules stay fast.
type runClock struct {
	mu     sync.Mutex
	waited time.Duration
}

func (c *runClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.waited)
}

func (c *runClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.mu.Lock()
		c.waited += d
		c.mu.Unlock()
	}
	return ctx.Err()
}
