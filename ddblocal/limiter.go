package ddblocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// A Limiter is DynamoDB as AWS runs it, in front of a DynamoDB Local: an
// HTTP endpoint that passes DynamoDB's and DynamoDB Streams' requests on
// and answers, where DynamoDB would,
//   - a request over its partition key's units a second (Limits.Scale of
//     AWS's 1,000 write and 3,000 read units, for the table and each global
//     secondary index; an index's throttling throttles the table's write)
//     with ThrottlingException (ProvisionedThroughputExceededException for
//     Limits.Provisioned);
//   - a BatchGetItem's keys and a BatchWriteItem's items over their
//     partition's units (and Limits.Unprocessed of the rest) as
//     UnprocessedKeys and UnprocessedItems, the call failing only when it
//     could process none for throughput;
//   - a transaction that meets another under way on one of its items with
//     TransactionCanceledException (TransactionConflict on that item, None
//     on the others), and a single write of an item in a transaction under
//     way with TransactionConflictException;
//   - a third reader of a stream's shard, and more than Limits.StreamReads
//     GetRecords calls a second by one reader, with LimitExceededException.
//
// Counts says what it did, per partition key and operation. Point any
// client at Endpoint (Clients(l.Endpoint)); a request goes on to DynamoDB
// Local unchanged, or is answered here and never reaches it, or (a batch
// with some keys or items left unprocessed) goes on with only the others,
// and its answer carries the left ones in UnprocessedKeys or
// UnprocessedItems.
//
// What it meters is read from the requests and responses: an item's size
// and index keys for a put, a query's partition from its key condition,
// the items a read returned. An update is metered from what it names (its
// key and values; its index keys where its SET assigns them a value), as
// DynamoDB's own metering of the item before and after would need a read;
// a Scan is not metered (it spans partitions). A key's reads and writes
// share its units (a write unit is three read units). Each partition key is
// metered alone: DynamoDB's partitions hold many keys, so this is the
// strictest reading of its limits short of knowing how a table is split.
type Limiter struct {
	// Endpoint is the Limiter's URL (http://127.0.0.1:port).
	Endpoint string

	limits  Limits
	backend string
	client  *http.Client
	srv     *http.Server
	schemas schemas
	flight  inflight
	tally   tally
	reads   shardReads

	mu  sync.Mutex // cap and rnd
	cap capacity
	rnd *rand.Rand
}

// NewLimiter starts a Limiter on a free port of 127.0.0.1 in front of the
// DynamoDB Local at backend (an endpoint such as Server.Endpoint). Close it
// when done.
func NewLimiter(backend string, l Limits) (*Limiter, error) {
	l, err := l.withDefaults()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	client := &http.Client{Transport: tr}
	db, _ := Clients(backend)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.HTTPClient = client })
	lim := &Limiter{
		limits: l, backend: strings.TrimRight(backend, "/"), client: client,
		schemas: schemas{db: db, m: map[string]*schema{}},
		flight:  inflight{tx: map[string]int{}, single: map[string]int{}},
		tally:   tally{keys: map[keyOp]*keyEntry{}},
		reads:   shardReads{iters: map[string]shardIter{}, shards: map[string]map[uint64][]time.Time{}},
		cap: capacity{write: PartitionWriteUnits * l.Scale, read: PartitionReadUnits * l.Scale,
			buckets: map[part]*bucket{}},
		rnd: rand.New(rand.NewPCG(l.Seed, l.Seed^0x9e3779b97f4a7c15)),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("ddblocal: limiter: listen: %w", err)
	}
	lim.Endpoint = "http://" + ln.Addr().String()
	lim.srv = &http.Server{Handler: lim, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = lim.srv.Serve(ln) }()
	return lim, nil
}

// Limit starts a Limiter in front of the DynamoDB Local of Setup (Main) for
// the test t, closed when the test ends: point the test's clients at its
// Endpoint (Clients(l.Endpoint)), tables made with NewTable included.
func Limit(t testing.TB, l Limits) *Limiter {
	t.Helper()
	ep := Endpoint()
	if ep == "" {
		t.Fatal("ddblocal: no DynamoDB Local: call ddblocal.Main from TestMain (or Setup)")
	}
	lim, err := NewLimiter(ep, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lim.Close() })
	return lim
}

// Backend is the DynamoDB Local it is in front of.
func (l *Limiter) Backend() string { return l.backend }

// Limits are the limits it holds to, defaults filled in.
func (l *Limiter) Limits() Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limits
}

// SetScale changes Limits.Scale from now on (a load's set-up at AWS's own
// limits, say, then its measured phases at a fraction of them). Each key's
// units a second change at once; what a key holds is kept, up to its new
// second's worth.
func (l *Limiter) SetScale(scale float64) error {
	if !(scale > 0) || math.IsInf(scale, 1) {
		return fmt.Errorf("ddblocal: scale %v is not above 0", scale)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits.Scale = scale
	l.cap.write, l.cap.read = PartitionWriteUnits*scale, PartitionReadUnits*scale
	for _, b := range l.cap.buckets {
		b.tokens = min(b.tokens, l.cap.read)
	}
	return nil
}

// Counts returns what it did so far.
func (l *Limiter) Counts() Counts { return l.tally.counts() }

// KeyCounts returns every partition key's counts per operation, those that
// met no limit too (a key idle for a minute is forgotten), in no order:
// what a caller takes apart from Counts.Keys to see a phase's shares.
func (l *Limiter) KeyCounts() []KeyCount { return l.tally.all() }

// Close stops it; requests under way are ended, and its connections to
// DynamoDB Local closed.
func (l *Limiter) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	defer l.client.CloseIdleConnections()
	if err := l.srv.Shutdown(ctx); err != nil {
		return l.srv.Close()
	}
	return nil
}

// reply is an answer to send: DynamoDB Local's, or the Limiter's own.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (rp *reply) send(w http.ResponseWriter) {
	for k, vs := range rp.header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection":
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(rp.body)))
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}

// refusal is the Limiter's own error answer, as DynamoDB gives it: 400
// with its JSON error body.
func refusal(code, message string, fields map[string]any) *reply {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", "ddblocal-limiter")
	return &reply{status: http.StatusBadRequest, header: h, body: errorBody(code, message, fields)}
}

// rewrite is DynamoDB Local's reply with another body (its checksum
// header dropped: the body is not the one it summed).
func (rp *reply) rewrite(body []byte) *reply {
	h := rp.header.Clone()
	h.Del("X-Amz-Crc32")
	return &reply{status: rp.status, header: h, body: body}
}

// call passes a request on to DynamoDB Local with body.
func (l *Limiter) call(r *http.Request, body []byte) *reply {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, l.backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return l.failed(err)
	}
	for k, vs := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Accept-Encoding", "Connection":
			continue
		}
		req.Header[k] = vs
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return l.failed(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return l.failed(err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// failed is the answer when DynamoDB Local could not be reached: a 500,
// which every SDK retries.
func (l *Limiter) failed(err error) *reply {
	rp := refusal("InternalServerError", "ddblocal limiter: DynamoDB Local did not answer: "+err.Error(), nil)
	rp.status = http.StatusInternalServerError
	return rp
}

// ServeHTTP implements http.Handler.
func (l *Limiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		refusal("SerializationException", "ddblocal limiter: reading the request: "+err.Error(), nil).send(w)
		return
	}
	service, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	l.tally.add(l.limits.Now(), func(c *Counts, _ func(part, callOp) *KeyCount) { c.Requests++ })
	var rp *reply
	switch {
	case strings.HasPrefix(service, "DynamoDBStreams_"):
		rp = l.stream(r, op, body)
	case !strings.HasPrefix(service, "DynamoDB_"):
		rp = l.call(r, body)
	default:
		rp, err = l.dynamodb(r, op, body)
	}
	if err != nil {
		// A request the Limiter cannot read is DynamoDB Local's to refuse.
		rp = l.call(r, body)
	}
	rp.send(w)
}

// dynamodb answers one DynamoDB request.
func (l *Limiter) dynamodb(r *http.Request, op string, body []byte) (*reply, error) {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		return l.write(r, op, body)
	case "GetItem":
		return l.getItem(r, body)
	case "Query":
		return l.query(r, body)
	case "BatchGetItem":
		return l.batchGet(r, body)
	case "BatchWriteItem":
		return l.batchWrite(r, body)
	case "TransactWriteItems":
		return l.transactWrite(r, body)
	case "TransactGetItems":
		return l.transactGet(r, body)
	case "CreateTable", "DeleteTable", "UpdateTable":
		var in struct{ TableName string }
		if json.Unmarshal(body, &in) == nil {
			l.schemas.forget(in.TableName)
			defer l.schemas.forget(in.TableName)
		}
	}
	return l.call(r, body), nil
}

// errUnread is a request the Limiter could not read.
var errUnread = errors.New("ddblocal: limiter: request not read")
