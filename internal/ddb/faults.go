//go:build !lambda.norpc

package ddb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Faults injects failures between a client and DynamoDB, for tests of what
// the programs do when DynamoDB misbehaves: an http.RoundTripper that fails
// a share of requests the way DynamoDB does — 500 InternalServerError, 400
// ThrottlingException and ProvisionedThroughputExceededException with
// DynamoDB's JSON error bodies, connection resets before the request is
// sent, and slow responses — and, with AfterExecution, connection resets
// after DynamoDB executed the request (the response is lost: the caller
// cannot tell whether its write happened). Draws come from Seed, so a run
// can be repeated (up to the order in which concurrent requests draw).
type Faults struct {
	// Rate is the share of requests that fail (0..1).
	Rate float64
	Seed uint64
	// AfterExecution adds lost responses to the mix.
	AfterExecution bool
	// Kinds, when set, are the only faults drawn (Fault* constants).
	Kinds []int
	// Slow is how long a slow response is delayed (default 300 ms).
	Slow time.Duration
	// Next carries the requests that are sent (default a clone of
	// http.DefaultTransport).
	Next http.RoundTripper

	once     sync.Once
	mu       sync.Mutex
	rnd      *rand.Rand
	requests atomic.Int64
	injected [faultKinds]atomic.Int64
}

// The kinds of injected faults.
const (
	FaultInternal = iota
	FaultThrottling
	FaultThroughput
	FaultResetBefore
	FaultSlow
	FaultResetAfter
	// FaultPanic panics in the caller's goroutine, as a bug would: only
	// when Kinds asks for it (tests of what a handler's panic does).
	FaultPanic
	// FaultConflict cancels a TransactWriteItems as a concurrent
	// transaction on one of its items would (TransactionConflict, the
	// others None), and lets other requests through: only when Kinds
	// asks for it (DynamoDB Local serializes transactions and never does).
	FaultConflict
	faultKinds
)

var faultNames = [faultKinds]string{"InternalServerError", "ThrottlingException", "ProvisionedThroughputExceededException",
	"connection reset before sending", "slow response", "connection reset after execution", "panic", "TransactionConflict"}

// Counts returns the counts so far.
func (f *Faults) Counts() FaultCounts {
	c := FaultCounts{Requests: f.requests.Load(), Injected: map[string]int64{}}
	for k := range faultKinds {
		if n := f.injected[k].Load(); n > 0 {
			c.Injected[faultNames[k]] = n
		}
	}
	return c
}

// ParseFaults reads "RATE[,seed=N][,after|,panic]" (e.g. "0.1,seed=7,after";
// "0.5,panic" panics in half the requests and injects nothing else).
func ParseFaults(s string) (*Faults, error) {
	spec, err := parseFaults(s)
	if err != nil {
		return nil, err
	}
	f := &Faults{Rate: spec.rate, Seed: spec.seed, AfterExecution: spec.after}
	if spec.panics {
		f.Kinds = []int{FaultPanic}
	}
	return f, nil
}

func (f *Faults) init() {
	f.once.Do(func() {
		f.rnd = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
		if f.Next == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = 100
			f.Next = t
		}
		if f.Slow == 0 {
			f.Slow = 300 * time.Millisecond
		}
	})
}

// draw returns the fault for a request, or -1 for none.
func (f *Faults) draw() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rnd.Float64() >= f.Rate {
		return -1
	}
	if len(f.Kinds) > 0 {
		return f.Kinds[f.rnd.IntN(len(f.Kinds))]
	}
	n := FaultResetAfter
	if f.AfterExecution {
		n = FaultResetAfter + 1
	}
	return f.rnd.IntN(n)
}

var errReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

// RoundTrip implements http.RoundTripper.
func (f *Faults) RoundTrip(req *http.Request) (*http.Response, error) {
	f.init()
	if req.Context().Value(atStart{}) != nil {
		return f.Next.RoundTrip(req)
	}
	f.requests.Add(1)
	k := f.draw()
	if k == FaultConflict && !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		k = -1 // only a transaction is cancelled by another
	}
	if k < 0 {
		return f.Next.RoundTrip(req)
	}
	f.injected[k].Add(1)
	switch k {
	case FaultInternal:
		return dynamoError(req, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"), nil
	case FaultThrottling:
		return dynamoError(req, http.StatusBadRequest, "com.amazon.coral.availability#ThrottlingException", "Rate of requests exceeds the allowed throughput."), nil
	case FaultThroughput:
		return dynamoError(req, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."), nil
	case FaultResetBefore:
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errReset
	case FaultConflict:
		return conflict(req), nil
	case FaultPanic:
		panic(fmt.Sprintf("ddb: injected panic (DYNAMODB_FAULTS) in %s %s", req.Method, req.Header.Get("X-Amz-Target")))
	case FaultSlow:
		select {
		case <-time.After(f.Slow):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return f.Next.RoundTrip(req)
	default: // FaultResetAfter
		resp, err := f.Next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errReset
	}
}

// conflict is DynamoDB's answer to a transaction cancelled by a
// concurrent one on its first item.
func conflict(req *http.Request) *http.Response {
	var in struct{ TransactItems []json.RawMessage }
	if req.Body != nil {
		_ = json.NewDecoder(req.Body).Decode(&in)
	}
	type reason struct{ Code, Message string }
	reasons := make([]reason, max(len(in.TransactItems), 1))
	codes := make([]string, len(reasons))
	for i := range reasons {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
	}
	reasons[0], codes[0] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}, "TransactionConflict"
	extra, _ := json.Marshal(map[string]any{"CancellationReasons": reasons})
	return dynamoErrorWith(req, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"Transaction cancelled, please refer cancellation reasons for specific reasons ["+strings.Join(codes, ", ")+"]", extra)
}

func dynamoError(req *http.Request, status int, typ, msg string) *http.Response {
	return dynamoErrorWith(req, status, typ, msg, nil)
}

// dynamoErrorWith is dynamoError with more fields (a JSON object's) in the
// body.
func dynamoErrorWith(req *http.Request, status int, typ, msg string, extra []byte) *http.Response {
	if req.Body != nil {
		req.Body.Close()
	}
	body := fmt.Sprintf(`{"__type":%q,"message":%q}`, typ, msg)
	if len(extra) > 2 {
		body = body[:len(body)-1] + "," + string(extra[1:])
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", fmt.Sprintf("FAULT%016X", rand.Uint64()))
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Request: req,
	}
}
