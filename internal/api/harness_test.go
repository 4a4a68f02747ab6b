package api_test

// The harness of the external tests: the writer API on a fresh DynamoDB
// Local table, served over HTTP, with a fixed clock and deterministic ids;
// dev tokens; requests, and the checks of their JSON and problem+json
// answers; raw reads of the table underneath; and the projector, fed with
// the table's captured stream. The clock, the sending of requests and the
// check of invalid fields' reasons are harness_internal_test.go's, which
// exports them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/auth"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/gateway"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// ids hands out the ids the test queued, then those of its generator.
type ids struct {
	mu     sync.Mutex
	queued []string
	gen    func() string // called under mu
}

func (g *ids) next() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queued) > 0 {
		id := g.queued[0]
		g.queued = g.queued[1:]
		return id
	}
	return g.gen()
}

func (g *ids) queue(next ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queued = append(g.queued, next...)
}

// sequence generates the ids fmt.Sprintf(format, n) for n = 1, 2, …
func sequence(format string) func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf(format, n)
	}
}

// env is the writer API on a fresh table, served over HTTP, with the raw
// clients to look underneath.
type env struct {
	t          *testing.T
	url        string
	db         *dynamodb.Client
	streams    *dynamodbstreams.Client
	table      string
	arn        string // the table's stream
	st         *store.Store
	clock      *api.FixedClock
	ids        *ids
	strictJSON bool // JSON answers may hold no member their Go type lacks
	// gw is the chat's local WebSocket API, served at /ws and
	// /@connections/ beside the routes.
	gw  *gateway.Local
	srv *api.Server
	// requests counts the writer's DynamoDB calls (by route, too).
	requests *ddb.Counter
}

// newEnv starts the writer on a fresh table; its ids come from newID once
// the queued ones are used up.
func newEnv(t *testing.T, newID func() string) *env {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	// The writer's clients recognise their own writes (ddb.Config.OwnWrites).
	c = ddbtest.ClientsWith(t, ddb.Config{OwnWrites: true})
	clk := api.NewFixedClock()
	gen := &ids{gen: newID}
	dev := &auth.DevTokens{Secret: []byte("test secret, 32 bytes long......"), Issuer: "dynastream-test", Now: clk.Peek}
	st := store.New(c.DB, table)
	st.Bookkeeping = ddbtest.Bookkeeping(t, c, table) // as the writer has it
	srv := &api.Server{Store: st, Auth: dev, DevTokens: dev, Tokens: dev, Now: clk.Now, NewID: gen.next, Logger: slog.New(slog.DiscardHandler)}
	var conns atomic.Int64
	gw := &gateway.Local{Routes: srv.Chat(), Refuse: srv.Refusal, Logger: srv.Logger, Now: clk.Peek,
		NewID: func() string { return fmt.Sprintf("conn-%d", conns.Add(1)) }}
	mux := http.NewServeMux()
	mux.Handle("/ws", gw)
	mux.Handle("/@connections/", gw.Management())
	mux.Handle("/", srv.Handler())
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { gw.Close(); ts.Close() })
	return &env{t: t, url: ts.URL, db: c.DB, streams: c.Streams, table: table, arn: arn, st: st, clock: clk, ids: gen, gw: gw, srv: srv, requests: c.Requests}
}

// withT is the environment reporting to t (a subtest's).
func (e *env) withT(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; body is a string or []byte (sent as is), nil (no
// body) or a value (sent as JSON).
func (e *env) do(method, path, token string, body any) response {
	e.t.Helper()
	res, b := api.RoundTrip(e.t, method, e.url+path, token, api.RequestBody(e.t, body))
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// ok sends a request that must answer status: with no body if that is 204,
// else with JSON, decoded into a fresh *out unless out is nil.
func (e *env) ok(status int, method, path, token string, body, out any) response {
	e.t.Helper()
	r := e.do(method, path, token, body)
	if r.status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if status == http.StatusNoContent {
		if len(r.body) != 0 {
			e.t.Errorf("%s %s: 204 with a body: %s", method, path, r.body)
		}
		return r
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero()
		if err := decodeJSON(r.body, out, e.strictJSON); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, r.body, err)
		}
	}
	return r
}

// decodeJSON decodes exactly one JSON value; strict refuses members that
// out's type lacks.
func decodeJSON(b []byte, out any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// token mints a dev token for the user.
func (e *env) token(userID string) string {
	e.t.Helper()
	return e.mint(map[string]any{"userId": userID})
}

// emailToken mints a dev token with a verified e-mail address.
func (e *env) emailToken(userID, email string) string {
	e.t.Helper()
	return e.mint(map[string]any{"userId": userID, "email": email})
}

// groupToken mints a dev token of the groups (null for none).
func (e *env) groupToken(userID string, groups ...string) string {
	e.t.Helper()
	return e.mint(map[string]any{"userId": userID, "groups": groups})
}

// mint posts a dev token request and returns the token.
func (e *env) mint(body map[string]any) string {
	e.t.Helper()
	var tr struct {
		Token     string `json:"token"`
		UserID    string `json:"userId"`
		ExpiresAt string `json:"expiresAt"`
	}
	e.ok(http.StatusCreated, "POST", "/dev/tokens", "", body, &tr)
	if tr.Token == "" || tr.UserID != body["userId"] {
		e.t.Fatalf("token response %+v", tr)
	}
	return tr.Token
}

// problem is a decoded problem+json document.
type problem struct {
	Type   string            `json:"type"`
	Title  string            `json:"title"`
	Status int               `json:"status"`
	Detail string            `json:"detail"`
	Errors []errs.FieldError `json:"errors"`
	// The extension members: a duplicate listing's 409 names the listing
	// that is there, a taken location code's the location that has it.
	ExistingListingID  string `json:"existingListingId"`
	ExistingLocationID string `json:"existingLocationId"`
}

// problem checks a problem+json answer with status (see problemDoc) and
// exactly the named invalid fields, in any order.
func (e *env) problem(r response, status int, fields ...string) problem {
	e.t.Helper()
	p := e.problemDoc(r, status)
	got := []string{}
	for _, f := range p.Errors {
		got = append(got, f.Field)
	}
	sort.Strings(got)
	want := append([]string{}, fields...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("problem fields (-want +got):\n%s\nbody: %s", diff, r.body)
	}
	return p
}

// problemReasons checks a problem+json answer with status (see problemDoc)
// and exactly these invalid fields with these reasons ("" for any).
func (e *env) problemReasons(r response, status int, reasons map[string]string) problem {
	e.t.Helper()
	p := e.problemDoc(r, status)
	api.CheckReasons(e.t, p.Errors, reasons, r.body)
	return p
}

// problemDoc decodes a problem+json answer that must have status, and
// checks its members: type about:blank, the status's title, a detail, a
// reason for each invalid field, and no other member.
func (e *env) problemDoc(r response, status int) problem {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	if err := decodeJSON(r.body, &p, true); err != nil {
		e.t.Fatalf("problem %s: %v", r.body, err)
	}
	if p.Status != status || p.Title != http.StatusText(status) || p.Type != "about:blank" || p.Detail == "" {
		e.t.Errorf("problem %s: want status %d, title %q, type about:blank and a detail", r.body, status, http.StatusText(status))
	}
	for _, f := range p.Errors {
		if f.Reason == "" {
			e.t.Errorf("field %s has no reason", f.Field)
		}
	}
	return p
}

// likeMissingRoom sends a request to /rooms/<roomID><suffix> as caller, who
// may not see the room, and the same request to the missing room missingID
// as member (body "" is none): both answers must be 404 problems, the same
// but for the room id. It returns both problems.
func (e *env) likeMissingRoom(method, suffix, body, roomID, caller, missingID, member string) (got, missing problem) {
	e.t.Helper()
	var b any
	if body != "" {
		b = body
	}
	r := e.do(method, "/rooms/"+roomID+suffix, caller, b)
	m := e.do(method, "/rooms/"+missingID+suffix, member, b)
	got, missing = e.problem(r, http.StatusNotFound), e.problem(m, http.StatusNotFound)
	if x, y := strings.ReplaceAll(string(r.body), roomID, "{id}"), strings.ReplaceAll(string(m.body), missingID, "{id}"); x != y {
		e.t.Errorf("a room the caller may not see and a missing room differ:\n%s\n%s", x, y)
	}
	return got, missing
}

type list[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// listAll reads a list page by page with the given limit and returns every
// item and the number of pages.
func listAll[T any](e *env, path, token string, limit int) ([]T, int) {
	e.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []T
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 50 {
			e.t.Fatalf("%s: pagination does not end", path)
		}
		var pg list[T]
		e.ok(http.StatusOK, "GET", path+sep+"limit="+strconv.Itoa(limit)+"&cursor="+url.QueryEscape(cursor), token, nil, &pg)
		if pg.Items == nil {
			e.t.Errorf("%s: items is null, want a list", path)
		}
		if len(pg.Items) > limit {
			e.t.Fatalf("%s: page of %d items with limit=%d", path, len(pg.Items), limit)
		}
		out = append(out, pg.Items...)
		if pg.NextCursor == "" {
			return out, pages
		}
		cursor = pg.NextCursor
	}
}

// item is a raw item of the table.
type item = map[string]types.AttributeValue

// str is an item's string attribute ("" if it has none).
func str(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// num is an item's integer attribute (-1 if it has none).
func num(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return -1
}

// keyAttrs names the key attributes of the table (index "") or of a GSI.
func keyAttrs(index string) (pk, sk string) {
	for _, ix := range store.Indexes {
		if ix.Name == index {
			return ix.PK, ix.SK
		}
	}
	return "PK", "SK"
}

// getItem reads one item, strongly consistent (nil when there is none).
func (e *env) getItem(k store.Key) item {
	e.t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: k.AV(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

// queryItems reads every item of a partition of the table (index "") or of
// a GSI, optionally under a sort-key prefix, in key order.
func (e *env) queryItems(index, pk, skPrefix string) []item {
	e.t.Helper()
	pkAttr, skAttr := keyAttrs(index)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
	}
	if skPrefix != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :sk)")
		in.ExpressionAttributeNames["#sk"] = skAttr
		in.ExpressionAttributeValues[":sk"] = &types.AttributeValueMemberS{Value: skPrefix}
	}
	if index != "" {
		in.IndexName = aws.String(index)
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	return allPages(e.t, dynamodb.NewQueryPaginator(e.db, in), func(out *dynamodb.QueryOutput) []item { return out.Items })
}

// partitionSKs lists the sort keys of a partition of the table.
func (e *env) partitionSKs(pk string) []string {
	e.t.Helper()
	return sks(e.queryItems("", pk, ""))
}

// scanItems reads every item of the table (index "") or of a GSI.
func (e *env) scanItems(index string) []item {
	e.t.Helper()
	in := &dynamodb.ScanInput{TableName: aws.String(e.table)}
	if index != "" {
		in.IndexName = aws.String(index)
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	return allPages(e.t, dynamodb.NewScanPaginator(e.db, in), func(out *dynamodb.ScanOutput) []item { return out.Items })
}

// allPages reads the items of every page of a Query or Scan paginator.
func allPages[Out any](t *testing.T, p interface {
	HasMorePages() bool
	NextPage(context.Context, ...func(*dynamodb.Options)) (Out, error)
}, items func(Out) []item) []item {
	t.Helper()
	var all []item
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, items(out)...)
	}
	return all
}

// tableKeys lists every item of the table by "PK SK", sorted.
func (e *env) tableKeys() []string {
	e.t.Helper()
	return keys(e.scanItems(""), "")
}

// sks lists the items' sort keys.
func sks(items []item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, str(it, "SK"))
	}
	return out
}

// keys lists the items by their keys in the table (index "") or in a GSI,
// as "PK SK", sorted.
func keys(items []item, index string) []string {
	pk, sk := keyAttrs(index)
	out := []string{}
	for _, it := range items {
		out = append(out, str(it, pk)+" "+str(it, sk))
	}
	sort.Strings(out)
	return out
}

// byKey indexes items by "PK SK".
func byKey(items []item) map[string]item {
	out := map[string]item{}
	for _, it := range items {
		out[str(it, "PK")+" "+str(it, "SK")] = it
	}
	return out
}

// plain turns items into plain Go values (to compare them with cmp).
func (e *env) plain(items []item) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	if err := attributevalue.UnmarshalListOfMaps(items, &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// snapshot is every item of the table as plain values, sorted by key.
func (e *env) snapshot() []map[string]any {
	e.t.Helper()
	items := e.scanItems("")
	sort.Slice(items, func(i, j int) bool {
		return str(items[i], "PK")+" "+str(items[i], "SK") < str(items[j], "PK")+" "+str(items[j], "SK")
	})
	return e.plain(items)
}

// unchanged checks that the table holds exactly what the snapshot before
// holds; what names the writes that must have changed nothing.
func (e *env) unchanged(before []map[string]any, what string) {
	e.t.Helper()
	if diff := cmp.Diff(before, e.snapshot()); diff != "" {
		e.t.Errorf("%s changed the table (-before +after):\n%s", what, diff)
	}
}

// capture reads the table's stream as it is now.
func (e *env) capture() events.DynamoDBEvent {
	e.t.Helper()
	ev, err := replay.Capture(context.Background(), e.streams, e.arn)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// deliver plays a captured stream into the projector, and then the
// records of its own writes that it drains (the recipes' pending counts).
func (e *env) deliver(ev events.DynamoDBEvent, s replay.Schedule) {
	e.t.Helper()
	p := &projections.Projector{Store: e.st, Logger: slog.New(slog.DiscardHandler)}
	follow := ddbtest.FollowPending(e.t, e.streams, e.arn)
	if _, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: p.Handle, Follow: follow}, s); err != nil {
		e.t.Fatalf("deliver (%s): %v", s.Name, err)
	}
}

// project runs the projector over the whole stream so far, as captured.
func (e *env) project() {
	e.t.Helper()
	e.deliver(e.capture(), replay.AsCaptured)
}

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }
