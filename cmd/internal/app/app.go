package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/devguard"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// InLambda reports whether the program runs inside Lambda.
func InLambda() bool { return os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// StartLambda serves fn under Lambda's runtime API; it never returns. A
// Lambda build started outside Lambda says so and exits.
func StartLambda[T any](log *slog.Logger, fn func(context.Context, json.RawMessage) (T, error)) {
	requireLambda(log)
	lambda.Start(consumer.Raw(fn))
}

// requireLambda exits when a Lambda build is started outside Lambda.
func requireLambda(log *slog.Logger) {
	if !InLambda() {
		Fatal(log, "not under Lambda", errors.New("this is a Lambda build (make package: -tags lambda.norpc) and AWS_LAMBDA_RUNTIME_API is not set; build without the tag to run locally"))
	}
}

// Common is the configuration every program has.
type Common struct {
	Table    string
	DB       ddb.Config
	LogLevel slog.Level
	// LocalDir holds the local stack's outbox and dead letters.
	LocalDir string
	// Bookkeeping is the consumers' table without a stream: idempotency
	// records and (in Lambda) the handlers' dead letters.
	Bookkeeping string
	// Effects is the table of the e-mails' once records (store.Store's
	// Effects), EffectsPrevious where they were kept before ("": nowhere).
	Effects, EffectsPrevious string
	// Sharding is the store's write shards of its hot index keys
	// (STORE_SHARDS_RECENT, _TRENDING, _METHOD, 1 each by default:
	// store.DefaultSharding; STORE_SHARDS_BACKFILLED): checked against the
	// table's record by AgreeSharding.
	Sharding store.Sharding
}

// NewStore is the programs' Store on the table, with the configured
// sharding and bookkeeping table.
func NewStore(c Common, clients *ddb.Clients) *store.Store {
	st := store.New(clients.DB, c.Table)
	st.Bookkeeping = c.Bookkeeping
	st.Effects, st.EffectsPrevious = c.Effects, c.EffectsPrevious
	st.Sharding = c.Sharding
	return st
}

// AgreeSharding checks the Store's write shards against the table's record
// of them (store.Store.AgreeSharding) before a program reads or writes the
// sharded keys: a count lower than the table's, or STORE_SHARDS_BACKFILLED
// before a backfill, is refused with what to do; a higher count raises the
// record, and is logged with the next step. backfill is `projector
// backfill`'s: it may move items a table without a record has in shards.
func AgreeSharding(ctx context.Context, st *store.Store, log *slog.Logger, backfill, countsCooking bool) error {
	raised, err := st.AgreeSharding(ddb.AtStart(ctx), store.ShardCheck{Now: time.Now(), Backfill: backfill, CountsCooking: countsCooking})
	if err != nil {
		return err
	}
	if len(raised) > 0 {
		log.Warn("raised the table's write shards; run `projector backfill` once every program runs with them, to move the items of the unsharded keys",
			"kinds", raised, "recent", st.Sharding.Recent, "trending", st.Sharding.Trending, "method", st.Sharding.Method)
	}
	return nil
}

// Runner is the local stream runner's configuration.
type Runner struct {
	// Stream is the runner's settings, checked by stream.Config.Settings
	// (StreamARN and Consumer are the program's).
	Stream          stream.Config
	CheckpointTable string
	// AdminAddr, when set, is where the consumer serves /metrics,
	// /healthz, /status, POST /pause and POST /resume (local mode only).
	AdminAddr string
	// OnFailureQueue, when set, is an SQS queue the runner sends what it
	// gives up on to, as the event source mapping's on-failure destination
	// does (stream.FailureRecord; records that cannot be converted still go
	// to the dead-letter file), and `redrive`'s default queue; SQSEndpoint
	// is a local SQS's (moto_server's) endpoint.
	OnFailureQueue, SQSEndpoint string
}

type env struct{ errs []string }

func (e *env) str(name, def string) string { return Getenv(name, def) }

func (e *env) int(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q: not an integer", name, v))
	}
	return n
}

func (e *env) dur(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q: not a duration (e.g. 500ms, 2s)", name, v))
	}
	return d
}

// Duration reads a positive duration from the environment variable name,
// def when it is empty.
func Duration(name string, def time.Duration) (time.Duration, error) {
	var e env
	d := e.dur(name, def)
	if len(e.errs) > 0 {
		return def, errors.New(e.errs[0])
	}
	if d <= 0 {
		return def, fmt.Errorf("%s=%q: want a positive duration (e.g. 30s)", name, os.Getenv(name))
	}
	return d, nil
}

func (e *env) bool(name string, def bool) bool {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q: not a boolean", name, v))
	}
	return b
}

func (e *env) err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return errors.New("configuration: " + strings.Join(e.errs, "; "))
}

// DefaultWriterAddr is where the local writer listens (WRITER_ADDR):
// loopback only, as its dev tokens authenticate anyone who asks.
const DefaultWriterAddr = "127.0.0.1:8080"

// LocalPushKeyID is the access key id of the local stack's push
// credentials: the notifier signs its management calls with it and
// CHAT_PUSH_SECRET, and the local writer's management endpoint verifies
// them (SigV4, as API Gateway does).
const LocalPushKeyID = "DYNASTREAMLOCALPUSH"

// AllowedHosts reads WRITER_ALLOWED_HOSTS: host names or addresses, comma
// separated, that requests to the local writer may name in Host besides
// this machine's loopback (for a writer reached from elsewhere on purpose).
func AllowedHosts() []string {
	var out []string
	for _, h := range strings.Split(os.Getenv("WRITER_ALLOWED_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// LocalURL is the base URL of a local program listening at addr; an
// address on every interface (":8080") is reached on loopback.
func LocalURL(addr string) string {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr
}

// Exposed reports whether a listen address reaches beyond this machine:
// every interface (":8080", "0.0.0.0:8080", "[::]:8080") or a host that is
// not a loopback address or "localhost".
func Exposed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err != nil || !devguard.Loopback(host) // the one reading of "loopback"
}

// Getenv returns the environment variable, or def when it is empty.
func Getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// LoadCommon reads DYNAMODB_TABLE_NAME, BOOKKEEPING_TABLE_NAME (default
// <table>-bookkeeping), EFFECTS_TABLE_NAME (default <table>-effects),
// EFFECTS_PREVIOUS_TABLE_NAME (default none, as "none": read nowhere
// else; an upgrade from before the effects table sets the bookkeeping
// table, where the e-mails' records were kept before),
// DYNAMODB_ENDPOINT, AWS_REGION, LOG_LEVEL,
// LOCAL_DIR and, for tests of the failure behaviour on the local stack
// only, DYNAMODB_FAULTS (ddb.ParseFaults: "0.1,seed=7,after").
func LoadCommon() (Common, error) {
	var e env
	c := Common{
		Table:    e.str("DYNAMODB_TABLE_NAME", ""),
		DB:       ddb.Config{Endpoint: e.str("DYNAMODB_ENDPOINT", ""), Region: e.str("AWS_REGION", "")},
		LocalDir: e.str("LOCAL_DIR", ".local"),
	}
	c.Bookkeeping = e.str("BOOKKEEPING_TABLE_NAME", store.BookkeepingTableName(c.Table))
	c.Effects = e.str("EFFECTS_TABLE_NAME", store.EffectsTableName(c.Table))
	if c.EffectsPrevious = e.str("EFFECTS_PREVIOUS_TABLE_NAME", ""); c.EffectsPrevious == "none" {
		c.EffectsPrevious = ""
	}
	c.Sharding = store.Sharding{Recent: e.int("STORE_SHARDS_RECENT", store.DefaultSharding.Recent),
		Trending: e.int("STORE_SHARDS_TRENDING", store.DefaultSharding.Trending), Method: e.int("STORE_SHARDS_METHOD", store.DefaultSharding.Method)}
	c.Sharding.Backfilled = e.bool("STORE_SHARDS_BACKFILLED", false)
	if err := c.Sharding.Validate(); err != nil {
		e.errs = append(e.errs, "STORE_SHARDS_*: "+err.Error())
	}
	c.DB.Capacity = e.bool("DYNAMODB_CAPACITY", false)
	c.DB.Indexes = store.Indexes
	if v := os.Getenv("DYNAMODB_FAULTS"); v != "" {
		f, err := ddb.ParseFaults(v)
		switch {
		case err != nil:
			e.errs = append(e.errs, "DYNAMODB_FAULTS: "+err.Error())
		case !c.DB.Local(): // DynamoDB Local is never production, Lambda or not
			e.errs = append(e.errs, "DYNAMODB_FAULTS injects failures for tests: only with a local DYNAMODB_ENDPOINT")
		default:
			c.DB.Faults = f
		}
	}
	if c.Table == "" {
		e.errs = append(e.errs, fmt.Sprintf("DYNAMODB_TABLE_NAME is required (make run's stack: DYNAMODB_TABLE_NAME=%s DYNAMODB_ENDPOINT=%s)", LocalTable, LocalEndpoint))
	}
	if err := c.LogLevel.UnmarshalText([]byte(e.str("LOG_LEVEL", "info"))); err != nil {
		e.errs = append(e.errs, "LOG_LEVEL: want debug, info, warn or error")
	}
	return c, e.err()
}

// settingEnv names the environment variable of each stream setting, to
// say which one stream.Config.Settings refused.
var settingEnv = strings.NewReplacer(
	"BatchSize", "STREAM_BATCH_SIZE", "BatchWindow", "STREAM_BATCH_WINDOW",
	"ParallelizationFactor", "STREAM_PARALLELIZATION_FACTOR", "MaxRetries", "STREAM_MAX_RETRIES",
	"PollInterval", "STREAM_POLL_INTERVAL", "ReadsPerSecond", "STREAM_READS_PER_SECOND", "StuckAfter", "STREAM_STUCK_AFTER",
	"CheckpointInterval", "STREAM_CHECKPOINT_INTERVAL", "MaxRecordAge", "STREAM_MAX_RECORD_AGE")

// DefaultParallelizationFactor is the programs' ParallelizationFactor
// (STREAM_PARALLELIZATION_FACTOR, and the template's parameter): 2, where
// the library keeps Lambda's 1. Both consumers wait on DynamoDB round
// trips, not on the CPU, so two batches of a shard in flight overlap them;
// order per key is kept either way. Measured with make load (docs/
// performance.md): at 150 writes/s the notifier's lag p99 went from 8.8 s
// to 2.1 s and the projector's from 0.73 s to 0.28 s. (Tumbling windows
// need 1; the programs use none.)
const DefaultParallelizationFactor = 2

// LoadRunner reads the STREAM_* settings, each spelled and defaulted as the
// event source mapping's setting of that name (and the template's
// parameter): STREAM_MAX_RETRIES -1 (forever), 0 (none) or n, default 3;
// STREAM_PARALLELIZATION_FACTOR default DefaultParallelizationFactor;
// STREAM_BISECT default true. The ranges are the library's
// (stream.Config.Settings), checked once.
func LoadRunner(table string) (Runner, error) {
	var e env
	retries := e.int("STREAM_MAX_RETRIES", stream.DefaultMaxRetries)
	r := Runner{
		Stream: stream.Config{
			BatchSize:             e.int("STREAM_BATCH_SIZE", stream.DefaultBatchSize),
			BatchWindow:           e.dur("STREAM_BATCH_WINDOW", stream.DefaultBatchWindow*time.Second),
			ParallelizationFactor: e.int("STREAM_PARALLELIZATION_FACTOR", DefaultParallelizationFactor),
			MaxRetries:            stream.Retries(retries),
			NoBisect:              !e.bool("STREAM_BISECT", true),
			PollInterval:          e.dur("STREAM_POLL_INTERVAL", stream.DefaultPollInterval),
			ReadsPerSecond:        e.int("STREAM_READS_PER_SECOND", stream.DefaultReadsPerSecond),
			StuckAfter:            e.dur("STREAM_STUCK_AFTER", stream.DefaultStuckAfter),
			CheckpointInterval:    e.dur("STREAM_CHECKPOINT_INTERVAL", stream.DefaultCheckpointInterval),
			MaxRecordAge:          e.dur("STREAM_MAX_RECORD_AGE", 0),
		},
		OnFailureQueue:  e.str("STREAM_ON_FAILURE_QUEUE_URL", ""),
		SQSEndpoint:     e.str("SQS_ENDPOINT", ""),
		CheckpointTable: e.str("STREAM_CHECKPOINT_TABLE", table+"-checkpoints"),
		AdminAddr:       e.str("ADMIN_ADDR", ""),
	}
	// 0 is "not set" to the library; in the environment it is a value,
	// and out of range
	for _, z := range []struct {
		name string
		zero bool
	}{
		{"STREAM_BATCH_SIZE", r.Stream.BatchSize == 0}, {"STREAM_PARALLELIZATION_FACTOR", r.Stream.ParallelizationFactor == 0},
		{"STREAM_POLL_INTERVAL", r.Stream.PollInterval == 0}, {"STREAM_READS_PER_SECOND", r.Stream.ReadsPerSecond == 0},
		{"STREAM_STUCK_AFTER", r.Stream.StuckAfter == 0},
		{"STREAM_CHECKPOINT_INTERVAL", r.Stream.CheckpointInterval == 0},
	} { // in this order, so the error reads the same every time
		if z.zero {
			e.errs = append(e.errs, z.name+": 0 is out of range")
		}
	}
	if err := e.err(); err != nil {
		return r, err
	}
	settings, err := r.Stream.Settings()
	if err != nil {
		return r, fmt.Errorf("configuration: %s", settingEnv.Replace(strings.TrimPrefix(err.Error(), "stream: ")))
	}
	r.Stream = settings
	return r, nil
}

// Logger returns the JSON logger every program uses. The standard
// library's logger writes through it too (as warnings), so what libraries
// print with package log (aws-lambda-go's invocation errors among them)
// comes out as JSON lines like the rest, not plain text between them.
func Logger(c Common, program string) *slog.Logger {
	l := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel})).With("program", program)
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(l.Handler(), slog.LevelWarn).Writer())
	return l
}

// Fatal logs and exits. Under Lambda it first reports the error to the
// runtime API's /runtime/init/error (Fatal is for start-up: after
// StartLambda nothing calls it), so the function's init failure says why
// instead of a bare "Runtime.ExitError".
func Fatal(log *slog.Logger, msg string, err error) {
	log.Error(msg, "err", err)
	if InLambda() {
		if rerr := reportInitError(msg + ": " + err.Error()); rerr != nil {
			log.Error("could not report the error to the runtime API", "err", rerr)
		}
	}
	os.Exit(1)
}

// reportInitError posts an init error to the Lambda runtime API.
func reportInitError(message string) error {
	body, _ := json.Marshal(map[string]any{"errorMessage": message, "errorType": "InitError", "stackTrace": []string{}})
	req, err := http.NewRequest(http.MethodPost, "http://"+os.Getenv("AWS_LAMBDA_RUNTIME_API")+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "Unhandled")
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("runtime API answered %s", resp.Status)
	}
	return nil
}

// SignalContext is cancelled by SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Consumer is a stream consumer program's handler and what it reports.
type Consumer struct {
	Name    string
	Handler stream.Handler
	// DeadLetters is where the handler dead-letters records that can never
	// be handled (DeadLetters(c, clients, Name)); locally the runner's own
	// dead letters go there too.
	DeadLetters stream.DeadLetters
	// Quarantine is the handler's store's, for /metrics.
	Quarantine *store.Quarantine
	// Filter is the event source mapping's FilterCriteria, the value
	// infra/template.yaml's is checked against: the local Runner applies it
	// as the mapping does, and the Lambda function again, as a defence.
	Filter filter.Criteria
	// Skip is the loop guard, in both modes (nil: stream.SkipDerived, the
	// consumer's own derived writes; stream.SkipNone for a consumer that
	// acts on derived items too). In Lambda the event source mapping's
	// filter drops most of them before the invocation.
	Skip stream.SkipFunc
	// Branches, for a Handler that is a stream.Fanout, are its branches'
	// counts (Fanout.Stats), for /metrics.
	Branches func() []stream.BranchStats
}

// DeadLetters is where a consumer's dead letters go: locally the file
// LOCAL_DIR/deadletters/<consumer>.jsonl; in Lambda the bookkeeping table
// (a function has no disk, and the event source mapping's own on-failure
// destination gets no records).
//
// Each dead letter written flushes the DeadLettered metric.
func DeadLetters(c Common, clients *ddb.Clients, name string) stream.DeadLetters {
	var dl stream.DeadLetters
	if LambdaBuild || InLambda() { // the constant leaves the file sink out of a bootstrap (its size)
		dl = &stream.TableDeadLetters{DB: clients.DB, Table: c.Bookkeeping}
	} else {
		dl = &stream.FileDeadLetters{Path: filepath.Join(c.LocalDir, "deadletters", name+".jsonl")}
	}
	return ConsumerMetrics(name).CountDeadLetters(dl, name)
}

// EnsureBookkeeping creates the bookkeeping and effects tables when running
// locally (in AWS the template does).
func EnsureBookkeeping(c Common, clients *ddb.Clients, log *slog.Logger) {
	if LambdaBuild || InLambda() || !c.DB.Local() {
		return
	}
	if err := store.EnsureBookkeepingTable(context.Background(), clients.DB, c.Bookkeeping); err != nil {
		Fatal(log, "bookkeeping table", err)
	}
	if err := store.EnsureBookkeepingTable(context.Background(), clients.DB, c.Effects); err != nil {
		Fatal(log, "effects table", err)
	}
}

// ServeStream runs the consumer: under Lambda via lambda.Start, locally
// with a stream runner on the table's stream (checkpoints in their own
// table, dead letters where cons.DeadLetters puts them). clients are the
// ones the handler uses: their request counters are part of the
// consumer's metrics.
//
// With the arguments `resubmit FILE`, it instead hands every dead letter in
// FILE (as written by the runner) to the handler once, appends the ones
// that fail again to FILE.failed.jsonl, and exits non-zero if there were
// any; `resubmit table` does the same with the dead letters the handler
// kept in the bookkeeping table (Lambda's), deleting those that succeed.
func ServeStream(c Common, clients *ddb.Clients, log *slog.Logger, cons Consumer) {
	name := cons.Name
	m := ConsumerMetrics(name)
	if LambdaBuild || InLambda() {
		// Each record decoded on its own: one that does not decode is
		// dead-lettered, not the whole invocation failed.
		requireLambda(log)
		consumer.Start(cons.Handler, consumer.Options{Name: name, DeadLetters: cons.DeadLetters, Filter: cons.Filter, Skip: cons.Skip, Observe: m.Observe, Logger: log})
		return
	}
	h := consumer.Instrument(cons.Handler, name, m.Observe)
	if len(os.Args) >= 2 && os.Args[1] == "redrive" {
		// as the mapping calls it: behind its filter and the loop guard
		redrive(log, c, clients, name, stream.Filter(cons.Filter, stream.Skip(cons.Skip, h)))
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "resubmit" {
		if os.Args[2] == "table" {
			resubmitTable(log, h, &stream.TableDeadLetters{DB: clients.DB, Table: c.Bookkeeping}, name)
			return
		}
		resubmit(log, h, os.Args[2])
		return
	}
	rc, err := LoadRunner(c.Table)
	if err != nil {
		Fatal(log, "bad configuration", err)
	}
	ctx, stop := SignalContext()
	defer stop()
	api, arn, err := streamSource(ctx, clients, c.Table)
	if err != nil {
		Fatal(log, "the stream to read", err)
	}
	cpRequests := &ddb.Counter{Capacity: c.DB.Capacity}
	cps := &stream.TableCheckpoints{DB: clients.NewDB(cpRequests), Table: rc.CheckpointTable}
	if err := cps.CreateTable(ctx); err != nil {
		Fatal(log, "checkpoint table", err)
	}
	dl := cons.DeadLetters
	if dl == nil {
		dl = DeadLetters(c, clients, name)
	}
	if rc.OnFailureQueue != "" {
		dl = m.CountDeadLetters(onFailureQueue(rc, clients, name, dl), name)
		log.Info("records given up on go to the on-failure queue", "queue", rc.OnFailureQueue)
	}
	r := &stream.Runner{
		Config: func() stream.Config {
			c := rc.Stream
			c.StreamARN, c.Consumer, c.Filter, c.Skip = arn, name, cons.Filter, cons.Skip
			return c
		}(),
		API: api, Checkpoints: cps, DeadLetters: dl, Logger: log,
	}
	var prog progress
	r.OnBatch = func(s stream.BatchStats) {
		log.Debug("batch", "shard", s.ShardID, "records", s.Records, "attempt", s.Attempt, "failed", s.Failed,
			"iteratorAgeMs", s.IteratorAge.Milliseconds(), "durationMs", s.Duration.Milliseconds())
		prog.add(s)
	}
	go prog.report(ctx, log, 30*time.Second)
	// the event source mapping's metrics, under its names, as Lambda
	// publishes them for a mapping with MetricsConfig EventCount
	mapping := &consumer.Mapping{EMF: m, Consumer: name, Runner: r}
	mappingDone := make(chan struct{})
	go func() { defer close(mappingDone); mapping.Run(ctx, 10*time.Second) }()
	defer func() { <-mappingDone }()
	pauseOnSignals(ctx, log, r)
	go watchHealth(ctx, log, r, 5*time.Second)
	if rc.AdminAddr != "" {
		m := &localMetrics{program: name, runner: r, data: clients.Requests, checkpoints: cpRequests, streams: clients.StreamRequests, quarantine: cons.Quarantine, faults: clients.Faults(), branches: cons.Branches}
		if err := serveAdmin(ctx, log, rc.AdminAddr, m); err != nil {
			Fatal(log, "admin endpoint", err)
		}
	}
	log.Info("consuming stream", "stream", arn, "batchSize", rc.Stream.BatchSize, "parallelizationFactor", rc.Stream.ParallelizationFactor,
		"maxRetries", *rc.Stream.MaxRetries, "bisect", !rc.Stream.NoBisect, "checkpoints", rc.CheckpointTable)
	if err := r.Run(ctx, h); err != nil {
		Fatal(log, "runner", err)
	}
	log.Info("stopped")
}

// resubmitTable resubmits the consumer's dead letters kept in the
// bookkeeping table, deleting each that succeeds.
func resubmitTable(log *slog.Logger, h stream.Handler, t *stream.TableDeadLetters, consumer string) {
	ctx, stop := SignalContext()
	defer stop()
	dls, err := t.List(ctx, consumer)
	if err != nil {
		Fatal(log, "read dead letters", err)
	}
	failed := 0
	for _, dl := range dls {
		if err := stream.Resubmit(ctx, h, dl); err != nil {
			failed++
			log.Error("resubmitted records failed again (kept)", "first", dl.FirstSequenceNumber, "err", err)
			continue
		}
		if err := t.Delete(ctx, dl); err != nil {
			Fatal(log, "delete a resubmitted dead letter", err)
		}
		log.Info("resubmitted", "records", len(dl.Event.Records), "first", dl.FirstSequenceNumber)
	}
	log.Info("resubmit done", "deadLetters", len(dls), "failedAgain", failed, "table", t.Table)
	if failed > 0 {
		os.Exit(1)
	}
}

func resubmit(log *slog.Logger, h stream.Handler, path string) {
	ctx, stop := SignalContext()
	defer stop()
	dls, err := stream.ReadDeadLetters(path) // a missing file: NothingToResubmit, before
	if err != nil {
		Fatal(log, "read dead letters", err)
	}
	again := &stream.FileDeadLetters{Path: path + ".failed.jsonl"}
	failed := 0
	for _, dl := range dls {
		if err := stream.Resubmit(ctx, h, dl); err != nil {
			failed++
			dl.Error, dl.Attempts, dl.FailedAt = err.Error(), dl.Attempts+1, time.Now().UTC()
			if perr := again.Put(ctx, dl); perr != nil {
				Fatal(log, "keep a failed dead letter", perr)
			}
			log.Error("resubmitted records failed again", "first", dl.FirstSequenceNumber, "err", err)
			continue
		}
		log.Info("resubmitted", "records", len(dl.Event.Records), "first", dl.FirstSequenceNumber)
	}
	log.Info("resubmit done", "deadLetters", len(dls), "failedAgain", failed, "kept", again.Path)
	if failed > 0 {
		os.Exit(1)
	}
}

// progress sums batches between reports, so a running consumer says how
// far behind it is (iterator age) without logging every batch.
type progress struct {
	mu                      sync.Mutex
	batches, records, fails int
	maxAge                  time.Duration
}

func (p *progress) add(s stream.BatchStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches++
	p.records += s.Records
	if s.Failed {
		p.fails++
	}
	p.maxAge = max(p.maxAge, s.IteratorAge)
}

func (p *progress) report(ctx context.Context, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		if p.batches > 0 {
			log.Info("stream progress", "batches", p.batches, "records", p.records, "failedCalls", p.fails,
				"maxIteratorAgeMs", p.maxAge.Milliseconds(), "window", every.String())
		}
		p.batches, p.records, p.fails, p.maxAge = 0, 0, 0, 0
		p.mu.Unlock()
	}
}
