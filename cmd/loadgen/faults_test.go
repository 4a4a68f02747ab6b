package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/drift"
	devents "github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// buildPrograms builds the three programs once per test binary.
var buildPrograms = sync.OnceValues(func() (string, error) {
	bin, err := os.MkdirTemp("", "dynastream-bin-")
	if err != nil {
		return "", err
	}
	build := exec.Command("go", "build", "-o", bin+"/", "../writer", "../projector", "../notifier")
	build.Stderr = os.Stderr
	return bin, build.Run()
})

// newSuite prepares a suite's run: its seed (printed), one measured phase
// at 25 writes/s of duration, and SES and EventBridge fakes failing a
// share rate of the calls, wired to the notifier.
func newSuite(t *testing.T, rate float64, duration, drain time.Duration) (uint64, config, *flakySES, *flakyBus) {
	t.Helper()
	seed := suiteSeed(t)
	t.Logf("seed %d (re-run with FAULT_SEED=%d)", seed, seed)
	bin, err := buildPrograms()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	dir := t.TempDir()
	ses := newFlakySES(t, rate, seed, filepath.Join(dir, "outbox", "mail"))
	bus := newFlakyBus(t, rate, seed+1, filepath.Join(dir, "outbox", "events.jsonl"))
	c, err := parseFlags([]string{"-rates", "25", "-duration", duration.String(), "-drain", drain.String(), "-rooms", "8", "-resources", "6", "-locations", "3",
		"-bin", bin, "-local-dir", dir, "-out", filepath.Join(t.TempDir(), "report.json"), "-raw", "0", "-warmup", "0",
		"-seed", strconv.FormatUint(seed, 10)})
	if err != nil {
		t.Fatal(err)
	}
	c.programEnv = map[string][]string{"notifier": {"MAIL_SES=true", "MAIL_FROM=noreply@example.com", "SES_ENDPOINT=" + ses.srv.URL,
		"EVENT_BUS_NAME=dynastream", "EVENTBRIDGE_ENDPOINT=" + bus.srv.URL}}
	// The programs meet DynamoDB as AWS runs it (throttles, unprocessed
	// batch keys, transaction conflicts), as the replay suites do.
	limits := ddbtest.Limits
	limits.Seed = seed
	c.limits = &limits
	return seed, c, ses, bus
}

// zeroRatings reads every recipe's rating aggregate and sets it to none,
// as before any cooking was derived.
func zeroRatings(ctx context.Context, clients *ddb.Clients, st *store.Store) (map[string]drift.Recipe, error) {
	f, err := st.Upkeep.ScanFacts(ctx, 2, nil)
	if err != nil {
		return nil, err
	}
	for id, r := range f.Recipes {
		_, err := clients.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(st.Table), Key: store.RecipeKey(id).AV(),
			UpdateExpression: aws.String("SET ratingCount = :z, ratingSum = :z, avgRating = :z, GSI2SK = :sk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"},
				":sk": &types.AttributeValueMemberS{Value: cooking.RatingSortKey(0, r.CreatedAt, id)}}})
		if err != nil {
			return nil, err
		}
	}
	return f.Recipes, nil
}

// suiteSeed is FAULT_SEED when set (to re-run a failure), else new.
func suiteSeed(t *testing.T) uint64 {
	if v := os.Getenv("FAULT_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FAULT_SEED=%q: %v", v, err)
		}
		return s
	}
	return uint64(time.Now().UnixNano() % 1e9)
}

// TestFaultSuite runs a mixed workload through the real writer, projector
// and notifier while 10% of every program's DynamoDB requests fail (500,
// throttling, throughput exceeded with DynamoDB's error bodies, connection
// resets before sending, slow answers; for the consumers also resets after
// DynamoDB executed the request), 20% of SES sends fail and 20% of
// EventBridge calls fail whole or in part (FailedEntryCount). After the
// drain it checks that nothing is missing and that the final state equals
// an undisturbed run: the stream's core changes replayed into a fault-free
// projector and notifier give the same derived items, every e-mail went
// out exactly once per (change, recipient) and every domain event was
// published (duplicates counted: the catalogue says consumers tolerate
// them). The seed is printed; FAULT_SEED=<seed> re-runs it.
func TestFaultSuite(t *testing.T) {
	seed, c, ses, bus := newSuite(t, 0.2, 15*time.Second, 10*time.Second)
	consumerFaults := fmt.Sprintf("DYNAMODB_FAULTS=0.1,seed=%d,after", seed)
	// The writer loses responses too: a write DynamoDB executed whose answer
	// never came, sent again by the SDK, must recognise its own success.
	c.programEnv["writer"] = []string{fmt.Sprintf("DYNAMODB_FAULTS=0.1,seed=%d,after", seed)}
	c.programEnv["projector"] = []string{consumerFaults}
	// The notifier at ParallelizationFactor 10, the projector at 1 (the
	// crash suite the other way round).
	c.programEnv["notifier"] = append(c.programEnv["notifier"], consumerFaults, "STREAM_PARALLELIZATION_FACTOR=10")
	var verdict faultVerdict
	c.after = func(ctx context.Context, clients *ddb.Clients, arn string) error {
		return verdict.check(ctx, t, clients, arn, "load", ses, bus)
	}
	_, p := runOnePhase(t, c, 4*time.Minute)
	for name, cr := range p.Consumers {
		t.Logf("%s: %+v", name, cr)
	}
	for _, name := range []string{"writer", "projector", "notifier"} {
		fc := p.Faults[name]
		var n int64
		for _, c := range fc.Injected {
			n += c
		}
		if n == 0 {
			t.Errorf("no DynamoDB fault was injected into the %s: %+v", name, fc)
		}
	}
	for _, k := range kinds {
		t.Logf("lag of %s under faults: %+v", k, p.Lag[k])
	}
	t.Logf("largest lag p99 under faults: %s (target ≤ 2 s; measured and reported, not asserted)", fms(p.LagP99Ms))
	t.Logf("compared %d derived items, %d e-mails (%d duplicates), %d events (%d duplicates); SES failed %d of %d calls, EventBridge %d of %d calls and %d entries",
		verdict.derived, verdict.emails, verdict.emailDups, verdict.events, verdict.eventDups, ses.failed, ses.calls, bus.failedCalls, bus.calls, bus.failedEntries)
	if ses.failed == 0 || bus.failedCalls+bus.failedEntries == 0 {
		t.Error("the SES and EventBridge fakes failed nothing: the suite tested nothing there")
	}
}

// faultVerdict is what check found.
type faultVerdict struct {
	// emailDupsAllowed is how many e-mails may go out twice (the crash
	// window between a send and its completion record).
	emailDupsAllowed int

	derived, emails, emailDups, events, eventDups int
}

// check compares the final state with an undisturbed run of the same
// changes: the derived items are deleted and rebuilt by a fault-free
// projector and notifier from the stream's core records, which also give
// the e-mails and events an undisturbed run sends.
func (v *faultVerdict) check(ctx context.Context, t *testing.T, clients *ddb.Clients, arn, table string, ses *flakySES, bus *flakyBus) error {
	ev, err := replay.Capture(ctx, clients.Streams, arn)
	if err != nil {
		return err
	}
	// The live consumers may still be on the last records captured (a
	// derived item the projector wrote just now, not yet read by the
	// notifier): wait until both have checkpointed past all of them.
	if err := waitCheckpoints(ctx, clients, arn, table, ev); err != nil {
		return err
	}
	// What went out, before the reference run: the live consumers go on
	// running, and the reference's writes reach them on the stream.
	gotMail, gotEv := ses.counts(), bus.counts()
	// A record written after the capture (by a live consumer still at
	// work) may have reached the live notifier before the counts were
	// read: the reference notifier maps a capture taken after them, and
	// an event must have gone out only if its record was in the first.
	// (One run in about twenty-five saw an event published that the
	// reference did not publish; an unexpected event now names its record.)
	later, err := replay.Capture(ctx, clients.Streams, arn)
	if err != nil {
		return err
	}
	captured := make(map[string]bool, len(ev.Records))
	for _, r := range ev.Records {
		captured[r.EventID] = true
	}
	var core []events.DynamoDBEventRecord
	for _, r := range ev.Records {
		ch, err := stream.Decode(r)
		if err != nil {
			return fmt.Errorf("a record on the stream cannot be decoded: %w", err)
		}
		if !ch.Derived() {
			core = append(core, r)
		}
	}
	ts := replay.TableState{DB: clients.DB, Table: table, Derived: replay.DerivedFlag}
	live, err := ts.State(ctx)
	if err != nil {
		return err
	}
	if err := ts.Reset(ctx); err != nil {
		return err
	}
	st := store.New(clients.DB, table)
	// Recipes are core items with derived fields (their rating aggregate):
	// Reset leaves them, so zero them for the reference run and compare
	// them after it.
	liveRecipes, err := zeroRatings(ctx, clients, st)
	if err != nil {
		return err
	}
	st.Bookkeeping = table + "-reference"
	if err := store.EnsureBookkeepingTable(ctx, clients.DB, st.Bookkeeping); err != nil {
		return err
	}
	box := &keyMailer{}
	pub := &idPublisher{}
	p := &projections.Projector{Store: st}
	n := &notify.Notifier{Publisher: pub, Effects: &notify.Effects{Store: st, Mailer: box, Now: time.Now}}
	// The projector derives from the core changes; the notifier maps every
	// change the live one saw, derived ones included (they have events).
	// The projector also drains the recipes' pending counts its own writes
	// ask for, as the live one did from the stream.
	follow := ddbtest.FollowPending(t, clients.Streams, arn)
	for name, in := range map[string]struct {
		h      stream.Handler
		recs   []events.DynamoDBEventRecord
		follow func(context.Context) ([]events.DynamoDBEventRecord, error)
	}{"projector": {p.Handle, core, follow}, "notifier": {n.Handle, later.Records, nil}} {
		st, err := replay.Deliver(ctx, events.DynamoDBEvent{Records: in.recs}, replay.Target{Handler: in.h, Follow: in.follow}, replay.AsCaptured)
		if err != nil || st.HandlerFailures > 0 {
			return fmt.Errorf("reference %s: %v (%d failed calls)", name, err, st.HandlerFailures)
		}
	}
	ref, err := ts.State(ctx)
	if err != nil {
		return err
	}
	v.derived = len(ref.([]map[string]any))
	// the recipes' ledgers are split as the records were batched: compare
	// what they name together
	refItems, refLedgers := ddbtest.FoldLedgers(ref.([]map[string]any))
	liveItems, liveLedgers := ddbtest.FoldLedgers(live.([]map[string]any))
	if diff := cmp.Diff(refItems, liveItems); diff != "" {
		t.Errorf("derived items differ from an undisturbed run (-undisturbed +under faults):\n%s", diff)
	}
	if diff := cmp.Diff(refLedgers, liveLedgers); diff != "" {
		t.Errorf("the recipes' ledgers name other items than an undisturbed run's (-undisturbed +under faults):\n%s", diff)
	}
	refFacts, err := st.Upkeep.ScanFacts(ctx, 2, nil)
	if err != nil {
		return err
	}
	if diff := cmp.Diff(refFacts.Recipes, liveRecipes); diff != "" {
		t.Errorf("recipe ratings differ from an undisturbed run (-undisturbed +under faults):\n%s", diff)
	}
	if v.derived == 0 {
		t.Error("no derived items at all")
	}

	want, got := box.counts(), gotMail
	v.emails = len(want)
	for k := range want {
		switch n := got[k]; {
		case n == 0:
			t.Errorf("e-mail %s never sent", k)
		case n > 1:
			v.emailDups += n - 1
		}
	}
	for k := range got {
		if want[k] == 0 {
			t.Errorf("e-mail %s sent, but an undisturbed run does not send it", k)
		}
	}
	if v.emailDups > v.emailDupsAllowed {
		t.Errorf("%d duplicate e-mails, more than the %d the crash window allows", v.emailDups, v.emailDupsAllowed)
	}
	wantEv := pub.counts()
	v.events = len(wantEv)
	byEventID := map[string]events.DynamoDBEventRecord{}
	for _, r := range later.Records {
		byEventID[r.EventID] = r
	}
	for id := range wantEv {
		if i := strings.LastIndexByte(id, '-'); i > 0 && !captured[id[:i]] {
			continue // its record came after the capture: it may not be out yet
		}
		if gotEv[id] == 0 {
			what := "?"
			if i := strings.LastIndexByte(id, '-'); i > 0 {
				if r, ok := byEventID[id[:i]]; ok {
					ch, _ := stream.Decode(r)
					what = fmt.Sprintf("%s of %s %s %s (derived %v, sequence number %s)", r.EventName, ch.ItemType(), ch.String("PK"), ch.String("SK"), ch.Derived(), r.Change.SequenceNumber)
				}
			}
			t.Errorf("event %s never published: the record's %s", id, what)
		}
	}
	for id, n := range gotEv {
		if wantEv[id] == 0 {
			what := "not on the stream"
			if i := strings.LastIndexByte(id, '-'); i > 0 {
				if r, ok := byEventID[id[:i]]; ok {
					what = fmt.Sprintf("%s of %s (sequence number %s)", r.EventName, r.Change.Keys, r.Change.SequenceNumber)
				}
			}
			t.Errorf("event %s published, but an undisturbed run does not publish it: its record %s", id, what)
		}
		v.eventDups += n - 1
	}
	if v.emails == 0 || v.events == 0 {
		t.Errorf("the workload sent %d e-mails and %d events: nothing to compare", v.emails, v.events)
	}
	return nil
}

// keyMailer records the idempotency key of each e-mail.
type keyMailer struct {
	mu   sync.Mutex
	keys map[string]int
}

func (m *keyMailer) Send(_ context.Context, msg mail.Message) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[string]int{}
	}
	m.keys[msg.IdempotencyKey]++
	return "ref", nil
}

func (m *keyMailer) counts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return copyIDs(m.keys)
}

// idPublisher records the id of each event.
type idPublisher struct {
	mu  sync.Mutex
	ids map[string]int
}

func (p *idPublisher) Publish(_ context.Context, evs []devents.Event) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]int{}
	}
	for _, e := range evs {
		p.ids[e.ID]++
	}
	return make([]error, len(evs))
}

func (p *idPublisher) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return copyIDs(p.ids)
}

func copyIDs(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// flakySES speaks SESv2 SendEmail (POST /v2/email/outbound-emails, the
// REST-JSON body the real client sends) and fails a share of the calls
// with SES's error replies (429 TooManyRequestsException, 500, 503, or a
// dropped connection). An accepted e-mail is counted by its idempotency
// header and dropped into mailDir as a headers-only .eml file, as the
// local mailer would, so loadgen's observer times it.
type flakySES struct {
	t       *testing.T
	rate    float64
	mailDir string
	srv     *httptest.Server
	// delay is how long an accepted send takes to answer (0: at once).
	delay    time.Duration
	inFlight atomic.Int64 // sends received and not yet answered

	mu            sync.Mutex
	rnd           *rand.Rand
	keys          map[string]int
	calls, failed int
}

func newFlakySES(t *testing.T, rate float64, seed uint64, mailDir string) *flakySES {
	f := &flakySES{t: t, rate: rate, mailDir: mailDir, rnd: rand.New(rand.NewPCG(seed, 17)), keys: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flakySES) serve(w http.ResponseWriter, r *http.Request) {
	f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	if r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails" {
		f.t.Errorf("SES: %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req struct {
		Content struct {
			Simple struct {
				Headers []struct{ Name, Value string }
			}
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		// A sender killed mid-request: SES gets half a body and sends
		// nothing.
		http.Error(w, `{"message":"incomplete request"}`, http.StatusBadRequest)
		return
	}
	key := ""
	for _, h := range req.Content.Simple.Headers {
		if h.Name == mail.IdempotencyHeader {
			key = h.Value
		}
	}
	if key == "" {
		f.t.Error("SES: an e-mail without an idempotency key")
	}
	f.mu.Lock()
	f.calls++
	fail := f.rnd.Float64() < f.rate
	kind := f.rnd.IntN(4)
	if fail {
		f.failed++
	} else {
		f.keys[key]++
	}
	n := f.calls
	f.mu.Unlock()
	if fail {
		switch kind {
		case 0:
			w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"message":"Maximum sending rate exceeded."}`)
		case 1:
			w.Header().Set("X-Amzn-ErrorType", "InternalFailure")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"message":"Internal failure"}`)
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"message":"Service unavailable"}`)
		default:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}
		return
	}
	if err := os.MkdirAll(f.mailDir, 0o755); err == nil {
		name := fmt.Sprintf("%s-%06d.eml", time.Now().UTC().Format("20060102T150405.000000000Z"), n)
		tmp := filepath.Join(f.mailDir, "."+name)
		if os.WriteFile(tmp, []byte(mail.IdempotencyHeader+": "+key+"\r\n\r\n"), 0o644) == nil {
			_ = os.Rename(tmp, filepath.Join(f.mailDir, name))
		}
	}
	time.Sleep(f.delay)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"MessageId":"ses-%d"}`, n)
}

func (f *flakySES) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyIDs(f.keys)
}

// flakyBus speaks EventBridge PutEvents (JSON 1.1, X-Amz-Target
// AWSEvents.PutEvents) and fails a share of the calls: whole (400
// ThrottlingException, 500 InternalException, a dropped connection) or in
// part (some entries with an ErrorCode, FailedEntryCount set). An accepted
// entry is counted by its event id and its Detail appended to eventsPath,
// as the local outbox would, so loadgen's observer times it.
type flakyBus struct {
	t          *testing.T
	rate       float64
	eventsPath string
	srv        *httptest.Server

	mu                                sync.Mutex
	rnd                               *rand.Rand
	ids                               map[string]int
	calls, failedCalls, failedEntries int
}

func newFlakyBus(t *testing.T, rate float64, seed uint64, eventsPath string) *flakyBus {
	f := &flakyBus{t: t, rate: rate, eventsPath: eventsPath, rnd: rand.New(rand.NewPCG(seed, 29)), ids: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flakyBus) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		f.t.Errorf("EventBridge: target %q", r.Header.Get("X-Amz-Target"))
	}
	var req struct{ Entries []struct{ Detail string } }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"__type":"SerializationException"}`, http.StatusBadRequest) // a sender killed mid-request
		return
	}
	reply := func(status int, body string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	f.mu.Lock()
	f.calls++
	partial := false
	if f.rnd.Float64() < f.rate {
		if kind := f.rnd.IntN(4); kind < 3 {
			f.failedCalls++
			f.mu.Unlock()
			switch kind {
			case 0:
				reply(http.StatusBadRequest, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
			case 1:
				reply(http.StatusInternalServerError, `{"__type":"InternalException","message":"Internal error"}`)
			default:
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		partial = true // some entries fail, below
	}
	type result struct {
		EventId      string `json:",omitempty"`
		ErrorCode    string `json:",omitempty"`
		ErrorMessage string `json:",omitempty"`
	}
	resp := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	var accepted []string
	for i, e := range req.Entries {
		if partial && f.rnd.IntN(2) == 0 {
			resp.FailedEntryCount++
			f.failedEntries++
			code := []string{"InternalFailure", "ThrottlingException"}[f.rnd.IntN(2)]
			resp.Entries = append(resp.Entries, result{ErrorCode: code, ErrorMessage: "injected " + code})
			continue
		}
		var env struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(e.Detail), &env); err != nil || env.ID == "" {
			f.t.Errorf("EventBridge: Detail without an id: %s", e.Detail)
		}
		f.ids[env.ID]++
		accepted = append(accepted, e.Detail)
		resp.Entries = append(resp.Entries, result{EventId: fmt.Sprintf("eb-%d-%d", f.calls, i)})
	}
	if len(accepted) > 0 {
		if err := os.MkdirAll(filepath.Dir(f.eventsPath), 0o755); err == nil {
			if fh, err := os.OpenFile(f.eventsPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
				var b bytes.Buffer
				for _, d := range accepted {
					b.WriteString(d)
					b.WriteByte('\n')
				}
				_, _ = fh.Write(b.Bytes())
				fh.Close()
			}
		}
	}
	f.mu.Unlock()
	out, _ := json.Marshal(resp)
	reply(http.StatusOK, string(out))
}

func (f *flakyBus) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyIDs(f.ids)
}

// waitCheckpoints waits until the projector's and the notifier's
// checkpoints reach the newest record of ev (a minute at most).
func waitCheckpoints(ctx context.Context, clients *ddb.Clients, arn, table string, ev events.DynamoDBEvent) error {
	newest := new(big.Int)
	for _, r := range ev.Records {
		if n, ok := new(big.Int).SetString(r.Change.SequenceNumber, 10); ok && n.Cmp(newest) > 0 {
			newest = n
		}
	}
	cps := &stream.TableCheckpoints{DB: clients.DB, Table: table + "-checkpoints"}
	deadline := time.Now().Add(time.Minute)
	for _, consumer := range []string{"projector", "notifier"} {
		for {
			shards, err := stream.Shards(ctx, clients.Streams, arn)
			if err != nil {
				return err
			}
			reached := false
			for _, sh := range shards {
				cp, err := cps.Get(ctx, consumer, aws.ToString(sh.ShardId))
				if err != nil {
					return err
				}
				if n, ok := new(big.Int).SetString(cp, 10); ok && n.Cmp(newest) >= 0 {
					reached = true
				}
			}
			if reached {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the %s's checkpoint did not reach the stream's newest record %s within a minute", consumer, newest)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
