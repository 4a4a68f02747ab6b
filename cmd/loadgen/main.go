package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/cmd/internal/stack"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/destination"
	"github.com/dynastream/dynastream/internal/store"
)

// config is loadgen's configuration, from its flags.
type config struct {
	rates      []float64
	duration   time.Duration
	step       bool
	stepBy     float64
	maxRate    float64
	kneeLag    time.Duration
	seed       uint64
	rooms      int
	resources  int
	locations  int
	cooks      int
	workers    int
	drain      time.Duration
	out        string
	bin        string
	localDir   string
	env        []string
	writer     string // a running stack's writer (with dynamodb, table, outbox, admin)
	dynamodb   string
	table      string
	outbox     string
	admin      map[string]string
	rawSeconds time.Duration
	warmup     time.Duration
	target     float64         // user writes per second the keys are projected to
	skip       map[string]bool // write kinds left out of the mix
	// criteriaShare, when above 0, makes criteria versions that share of
	// the writes (-mix criteria-heavy: 0.6), the other kinds keeping their
	// proportions.
	criteriaShare float64
	chatConns     int // > 0: the chat workload instead of the write mix
	chatRate      float64
	// -catchup: each consumer paused for catchup (or until the stream
	// gained catchupBacklog records), at each of catchupPF.
	catchup        time.Duration
	catchupBacklog int64
	catchupPF      []int
	catchupOf      []string // the consumers, in turn
	prices         Prices   // the bill's (bill.go)
	soak           time.Duration
	// limits, when set, puts DynamoDB's limits between the programs and
	// DynamoDB Local (-aws-limits: its Scale; the run's seed when it has
	// none).
	limits *ddblocal.Limits
	// kinesis, when set, has the consumers read a Kinesis data stream the
	// table's changes are carried into (-source kinesis).
	kinesis *stack.Kinesis
	// programEnv is added to one program's environment (tests).
	programEnv map[string][]string
	// after, when set, runs once the last phase drained, while the local
	// stack still runs (tests check the final state with it).
	after func(ctx context.Context, clients *ddb.Clients, streamARN string) error
	// during, when set, runs while each measured phase sends its writes,
	// with the local stack (tests kill and restart programs with it).
	during func(ctx context.Context, s *stack.Stack)
	// world, when set, runs before after, with what the workload did.
	world func(ctx context.Context, clients *ddb.Clients, w *world) error
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var c config
	rates := fs.String("rates", "25,100", "steady phases: writes per second, comma-separated, each for -duration")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long each phase sends writes")
	fs.BoolVar(&c.step, "step", false, "after -rates, raise the rate by -step-by until lag p99 passes -knee-lag (the knee)")
	fs.Float64Var(&c.stepBy, "step-by", 50, "rate increment of -step")
	fs.Float64Var(&c.maxRate, "max-rate", 1000, "highest rate -step tries")
	fs.DurationVar(&c.kneeLag, "knee-lag", time.Second, "the lag p99 that ends -step")
	seed := fs.Uint64("seed", 1, "workload seed: the same seed writes the same sequence")
	fs.IntVar(&c.rooms, "rooms", 50, "search rooms in the workload")
	fs.IntVar(&c.resources, "resources", 20, "collaboration resources in the workload")
	fs.IntVar(&c.locations, "locations", 10, "locations in the workload")
	fs.IntVar(&c.cooks, "cooks", cookUsers, "users who cook the workload's recipes (each recipe has an author of its own besides)")
	fs.IntVar(&c.workers, "workers", 64, "concurrent HTTP clients")
	fs.DurationVar(&c.drain, "drain", 30*time.Second, "how long to wait after a phase for what it derives")
	fs.StringVar(&c.out, "out", "", "JSON report path (default .local/load/report-<time>.json); the HTML report goes beside it (.html)")
	fs.StringVar(&c.bin, "bin", "bin", "folder of the built programs (local stack)")
	fs.StringVar(&c.localDir, "local-dir", "", "the local stack's outbox and logs (default .local/load/run-<time>)")
	var env listFlag
	fs.Var(&env, "env", "KEY=VALUE for the stack's programs, or PROGRAM:KEY=VALUE for one of them (writer, projector, notifier), repeatable (e.g. STREAM_POLL_INTERVAL=50ms, notifier:STREAM_PARALLELIZATION_FACTOR=4)")
	fs.StringVar(&c.writer, "writer", "", "use a running local stack: its writer's URL (needs -dynamodb, -table, -outbox; -admin for consumer metrics)")
	fs.StringVar(&c.dynamodb, "dynamodb", "", "the running stack's DynamoDB endpoint")
	fs.StringVar(&c.table, "table", "search-room", "the running stack's table")
	fs.StringVar(&c.outbox, "outbox", "", "the running stack's events.jsonl (empty: domain events are not timed)")
	admin := fs.String("admin", "", "the running stack's consumer admin endpoints: projector=URL,notifier=URL")
	fs.DurationVar(&c.rawSeconds, "raw", 4*time.Second, "how long to measure DynamoDB Local's raw write rate, after a 2 s warm-up: the median of half-second windows (0: skip)")
	fs.Float64Var(&c.target, "target", 10000, "user writes per second to project each partition key's load to (scale.go; 0: none)")
	fs.DurationVar(&c.warmup, "warmup", 15*time.Second, "an unreported phase at the first rate before measuring, so the JVM under DynamoDB Local has compiled its hot paths (0: none)")
	skip := fs.String("skip", "", "write kinds to leave out of the mix, comma-separated (cook,rate: the mix without cooking)")
	mixName := fs.String("mix", "full", "the write mix: full; criteria-heavy (60% criteria versions, each deriving combined criteria, a compatibility snapshot and an activity entry); or rooms-comments (criteria versions, listings and their status, members joining and leaving, comments and reactions: no cooking, chat, locations or invites)")
	fs.IntVar(&c.chatConns, "chat", 0, "run the chat workload instead of the write mix: this many WebSocket connections in one room")
	fs.Float64Var(&c.chatRate, "chat-rate", 5, "messages per second of the chat workload, for -duration")
	fs.DurationVar(&c.catchup, "catchup", 0, "after -rates: pause each consumer (projector, notifier) in turn this long while writes go on at the first rate (half the knee), resume it and time how fast it reads its backlog (0: no catch-up)")
	fs.Int64Var(&c.catchupBacklog, "catchup-backlog", 0, "like -catchup, but pause each consumer until the stream holds this many records it has not read (e.g. 100000)")
	catchupPF := fs.String("catchup-pf", "1,2,10", "the ParallelizationFactors -catchup restarts the consumers with, in turn")
	fs.DurationVar(&c.soak, "soak", 0, "instead of the phases: one phase at the first rate for this long (e.g. 30m), sampling every program's memory; prints \"soak: <program> <start> MB → <end> MB over <minutes> min (<growth> MB/h)\" per program")
	pricesFile := fs.String("prices", "", "a prices file for the bill per million writes, in the shape of cmd/loadgen/prices.json (default: that file's, us-east-1)")
	catchupOf := fs.String("catchup-consumers", "projector,notifier", "the consumers -catchup pauses, in turn")
	source := fs.String("source", "dynamodb", "what the consumers read: dynamodb (the table's stream) or kinesis (a Kinesis data stream on moto_server the table's changes are carried into, 5% of them repeated and 5% put after a later change of their item, drawn from -seed; the report adds the line \"kinesis: …\")")
	awsLimits := fs.String("aws-limits", "", "put DynamoDB as AWS runs it between the programs and DynamoDB Local, at this scale of AWS's per-partition limits (0.01 or 1/100: a key takes 10 write and 30 read units a second, so 100 writes/s meet what 10,000 meet on AWS): throttles, unprocessed batch keys, transaction conflicts, two readers a shard and 5 GetRecords calls a second a reader; the report says what the programs met")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.prices, err = loadPrices(*pricesFile); err != nil {
		return c, err
	}
	if *awsLimits != "" {
		scale, err := ddblocal.ParseScale(*awsLimits)
		if err != nil {
			return c, fmt.Errorf("-aws-limits: %w", err)
		}
		c.limits = &ddblocal.Limits{Scale: scale}
	}
	for _, s := range strings.Split(*catchupOf, ",") {
		switch s = strings.TrimSpace(s); s {
		case "":
		case "projector", "notifier":
			c.catchupOf = append(c.catchupOf, s)
		default:
			return c, fmt.Errorf("-catchup-consumers: %q is not one of the stack's consumers (projector, notifier)", s)
		}
	}
	for _, s := range strings.Split(*catchupPF, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		pf, err := strconv.Atoi(s)
		if err != nil || pf < 1 || pf > 10 {
			return c, fmt.Errorf("-catchup-pf: %q is not a ParallelizationFactor (1 to 10)", s)
		}
		c.catchupPF = append(c.catchupPF, pf)
	}
	c.seed = *seed
	for _, kv := range env {
		prog, rest, ok := strings.Cut(kv, ":")
		if !ok || strings.Contains(prog, "=") {
			c.env = append(c.env, kv)
			continue
		}
		switch prog {
		case "writer", "projector", "notifier":
		default:
			return c, fmt.Errorf("-env %s: %q is not one of the stack's programs (writer, projector, notifier)", kv, prog)
		}
		if !strings.Contains(rest, "=") {
			return c, fmt.Errorf("-env %s: want PROGRAM:KEY=VALUE", kv)
		}
		if c.programEnv == nil {
			c.programEnv = map[string][]string{}
		}
		c.programEnv[prog] = append(c.programEnv[prog], rest)
	}
	for _, s := range strings.Split(*rates, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r <= 0 {
			return c, fmt.Errorf("-rates: %q is not a positive number", s)
		}
		c.rates = append(c.rates, r)
	}
	c.skip = map[string]bool{}
	switch *mixName {
	case "full":
	case "criteria-heavy":
		c.criteriaShare = 0.6
	case "rooms-comments":
		// what an outside client of the rooms and comments sends (issue
		// 50): the search rooms' writes and the collaboration's comments
		// and reactions, in the full mix's proportions
		for _, k := range roomsCommentsLeftOut {
			c.skip[k] = true
		}
	default:
		return c, fmt.Errorf("-mix: %q: want full, criteria-heavy or rooms-comments", *mixName)
	}
	for _, k := range strings.Split(*skip, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !slices.ContainsFunc(mix, func(m share) bool { return m.name == k }) {
			return c, fmt.Errorf("-skip: %q is not a write kind of the mix", k)
		}
		c.skip[k] = true
	}
	c.admin = map[string]string{}
	for _, kv := range strings.Split(*admin, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			c.admin[k] = strings.TrimRight(v, "/")
		}
	}
	switch {
	case c.chatConns < 0 || c.chatRate <= 0:
		return c, errors.New("-chat must be at least 0 and -chat-rate positive")
	case len(c.rates) == 0 && !c.step && c.chatConns == 0:
		return c, errors.New("nothing to do: give -rates or -step")
	case c.duration <= 0 || c.drain <= 0:
		return c, errors.New("-duration and -drain must be positive")
	case c.rooms < 1 || c.resources < 1 || c.locations < 1 || c.cooks < 1 || c.workers < 1:
		return c, errors.New("-rooms, -resources, -locations, -cooks and -workers must be at least 1")
	case (c.catchup != 0 || c.catchupBacklog != 0) && (c.catchup < 0 || c.catchupBacklog < 0 || len(c.catchupPF) == 0 || len(c.catchupOf) == 0 || c.step || c.writer != "" || len(c.rates) == 0):
		return c, errors.New("-catchup and -catchup-backlog need a positive value, -rates (the first is the catch-up's rate), -catchup-pf, -catchup-consumers and the local stack loadgen starts (not -step, not -writer)")
	case c.soak < 0 || (c.soak > 0 && (c.step || c.catchup != 0 || c.catchupBacklog != 0 || len(c.rates) == 0)):
		return c, errors.New("-soak needs -rates (its first is the soak's rate) and takes neither -step nor -catchup")
	case c.writer != "" && c.dynamodb == "":
		return c, errors.New("-writer needs -dynamodb (the observer reads the table's stream)")
	case c.writer != "" && c.limits != nil:
		return c, errors.New("-aws-limits needs the local stack loadgen starts (not -writer)")
	case *source != "dynamodb" && *source != "kinesis":
		return c, fmt.Errorf("-source %q: want dynamodb or kinesis", *source)
	case *source == "kinesis" && c.writer != "":
		return c, errors.New("-source kinesis needs the local stack loadgen starts (not -writer)")
	case *source == "kinesis" && (c.catchup != 0 || c.catchupBacklog != 0):
		// its backlog is counted on the table's stream, the consumers read another
		return c, errors.New("-source kinesis takes no -catchup or -catchup-backlog yet")
	}
	if *source == "kinesis" {
		c.kinesis = &stack.Kinesis{Faults: destination.Faults{Repeat: 0.05, Reorder: 0.05}, Seed: *seed}
	}
	if c.soak > 0 {
		c.rates, c.duration = c.rates[:1], c.soak
	}
	stamp := time.Now().Format("20060102-150405")
	if c.localDir == "" {
		c.localDir = filepath.Join(".local", "load", "run-"+stamp)
	}
	if c.out == "" {
		c.out = filepath.Join(".local", "load", "report-"+stamp+".json")
	}
	return c, nil
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	ctx, stop := app.SignalContext()
	defer stop()
	rep, err := run(ctx, c, log, os.Stderr)
	if rep != nil {
		rep.print(os.Stdout)
		if werr := writeJSON(c.out, rep); werr != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", werr)
		} else if herr := writeHTML(htmlPath(c.out), rep); herr != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", herr)
		} else {
			fmt.Printf("\nreport: %s (charts: %s)\n", c.out, htmlPath(c.out))
		}
		if rep.Kinesis != nil {
			fmt.Println(rep.Kinesis.line())
		}
		if rep.Scale != nil {
			fmt.Println(rep.Scale.line()) // the last line, for scripts
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// run starts (or finds) the stack, sets the workload up and runs the phases.
func run(ctx context.Context, c config, log *slog.Logger, progress io.Writer) (*Report, error) {
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	rep := &Report{StartedAt: time.Now().UTC(), Config: map[string]any{
		"rates": c.rates, "duration": c.duration.String(), "warmup": c.warmup.String(), "step": c.step, "stepBy": c.stepBy, "seed": c.seed,
		"catchup": c.catchup.String(), "catchupBacklog": c.catchupBacklog, "catchupPF": c.catchupPF, "catchupConsumers": c.catchupOf, "soak": c.soak.String(),
		"rooms": c.rooms, "resources": c.resources, "locations": c.locations, "cooks": c.cooks, "workers": c.workers, "env": c.env, "programEnv": c.programEnv, "mix": mix, "skip": c.skip, "criteriaShare": c.criteriaShare,
	}}
	if c.limits != nil {
		rep.Config["awsLimits"] = c.limits.String()
	}
	rep.Machine.CPUs, rep.Machine.OS, rep.Machine.Go = runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, runtime.Version()
	// Last (deferred first), once the EMF lines are read: the bill.
	defer func() { rep.Cost = billOf(rep, c.prices) }()

	var clients *ddb.Clients
	var streamARN, writer, outbox string
	var exited <-chan string
	var ddbCPU func() (float64, error)
	var st *stack.Stack
	// limitsSteady are the Limiter's key counts at the first measured
	// phase's start and after the last one's drain; pins the keys the
	// workload pins (-aws-limits).
	var limitsSteady [2][]ddblocal.KeyCount
	var limitsAt [2]time.Time // when limitsSteady were read
	var pins map[string]string
	admin := c.admin
	if c.writer == "" {
		if err := os.MkdirAll(c.localDir, 0o755); err != nil {
			return nil, err
		}
		logPath := filepath.Join(c.localDir, "stack.log")
		lf, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		defer lf.Close()
		// After the stack has stopped (deferred below, so run first): what
		// its metric lines said.
		defer func() {
			if e, err := readEMFFile(logPath); err == nil {
				rep.EMF = e
			} else {
				log.Warn("reading the EMF lines", "err", err)
			}
		}()
		port, err := ddblocal.FreePort()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "starting the local stack (logs: %s)\n", logPath)
		// The workload invites far more than the writer's spam limits allow
		// a person: it measures throughput, not the limits.
		penv := map[string][]string{}
		for k, v := range c.programEnv {
			penv[k] = v
		}
		penv["writer"] = append([]string{"INVITES_PER_USER=1000000", "INVITES_PER_RESOURCE=1000000"}, penv["writer"]...)
		var limits *ddblocal.Limits
		if c.limits != nil {
			// The set-up (a burst that makes the world) runs at AWS's own
			// limits; the phases from the warm-up on at -aws-limits'.
			l := *c.limits
			l.Scale = 1
			if l.Seed == 0 {
				l.Seed = c.seed
			}
			limits = &l
		}
		s, err := stack.Start(ctx, stack.Options{
			BinDir: c.bin, LocalDir: c.localDir, Table: "load", WriterAddr: fmt.Sprintf("127.0.0.1:%d", port), Limits: limits, Kinesis: c.kinesis,
			// DYNAMODB_CAPACITY: each program's /metrics sums the capacity units its calls consumed
			AdminPorts: true, Env: append([]string{"DYNAMODB_CAPACITY=true"}, c.env...), ProgramEnv: penv, Output: lf, Logger: slog.New(slog.NewTextHandler(lf, nil)),
		})
		if err != nil {
			return nil, err
		}
		defer s.Stop()
		if c.kinesis != nil {
			// after the last phase drained and verify ran, before Stop
			defer func() {
				n := s.KinesisCounts()
				rep.Kinesis = &KinesisReport{Changes: n.Changes, Repeated: n.Repeated, Reordered: n.Reordered, Repeat: c.kinesis.Faults.Repeat, Reorder: c.kinesis.Faults.Reorder}
			}()
		}
		if s.Limiter != nil {
			// after verify (deferred later, so run earlier), before Stop
			defer func() {
				rep.AWSLimits = awsLimitsOf(s.Limiter, limitsSteady, limitsAt[1].Sub(limitsAt[0]).Seconds(), pins)
			}()
		}
		clients, streamARN, writer, outbox, admin = s.Clients, s.StreamARN, s.WriterURL, s.Outbox, s.Admin
		exited = s.Exited()
		ddbCPU = s.DynamoDBCPUSeconds
		st = s
	} else {
		var err error
		if clients, err = ddb.New(ctx, ddb.Config{Endpoint: c.dynamodb}); err != nil {
			return nil, err
		}
		if streamARN, err = store.StreamARN(ctx, clients.DB, c.table); err != nil {
			return nil, err
		}
		writer, outbox = strings.TrimRight(c.writer, "/"), c.outbox
	}

	// The raw rate is measured with DynamoDB Local's JVM warm: after the
	// warm-up phase (before the chat workload, which has none). Measured
	// first, on a cold JVM, it read 1334 and 1848 writes/s in two runs
	// back to back on one machine.
	measureRaw := func() error {
		if c.rawSeconds <= 0 {
			return nil
		}
		fmt.Fprintf(progress, "measuring DynamoDB Local's raw write rate for %s after a %s warm-up\n", c.rawSeconds, rawWarmup)
		r, err := rawWriteRate(ctx, clients.DB, c.rawSeconds)
		if err != nil {
			return fmt.Errorf("raw write rate: %w", err)
		}
		rep.DynamoDBLocalWritesPerSec = r
		return nil
	}

	if c.chatConns > 0 {
		if err := measureRaw(); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "chat: %d connections, %.0f messages/s for %s\n", c.chatConns, c.chatRate, c.duration)
		metrics := (&engine{admin: admin, log: log}).consumerMetrics
		cr, err := runChat(ctx, writer, c.chatConns, c.chatRate, c.duration, c.drain, func() map[string]app.Metrics { return metrics(ctx) }, progress)
		rep.Chat = cr
		return rep, err
	}

	obs := newObserver(log)
	octx, cancelObs := context.WithCancel(ctx)
	defer cancelObs()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancelObs()
	bg.Go(func() {
		if err := obs.watch(octx, clients, streamARN); err != nil {
			log.Error("observer", "err", err)
		}
	})
	if outbox != "" {
		bg.Go(func() { obs.tailOutbox(octx, outbox) })
		bg.Go(func() { obs.tailMail(octx, filepath.Join(filepath.Dir(outbox), "mail")) })
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.workers, MaxIdleConns: c.workers}, Timeout: 30 * time.Second}
	w := &world{c: &client{base: writer, http: hc}, tokens: map[string]string{}, noChat: c.skip["message"]}
	table := c.table
	if st != nil {
		table = "load"
	}
	defer func() {
		if c.target > 0 {
			rep.Scale = scaleOf(rep.Phases, c.target, whereIn(table), w.pinned(), w.hotRecipeKey())
		}
	}()
	e := &engine{w: w, obs: obs, events: outbox != "", admin: admin, workers: c.workers, skip: c.skip, criteriaShare: c.criteriaShare, drain: c.drain, seed: c.seed, log: log, progress: progress, tty: isTerminal(progress), ddbCPU: ddbCPU}
	var phases sync.Map // index → *phaseStats
	statsOf := func(i int) *phaseStats {
		v, _ := phases.LoadOrStore(i, newPhaseStats())
		return v.(*phaseStats)
	}
	bg.Go(func() { e.match(octx, statsOf) })
	if exited != nil {
		bg.Go(func() {
			select {
			case name := <-exited:
				abort(fmt.Errorf("%s exited; see its log in %s", name, filepath.Join(c.localDir, "stack.log")))
			case <-octx.Done():
			}
		})
	}

	fmt.Fprintf(progress, "setting up %d rooms, %d resources, %d locations, %d cooks\n", c.rooms, c.resources, c.locations, c.cooks)
	w.cooks = c.cooks
	if err := w.setup(ctx, c.rooms, c.resources, c.locations, c.seed); err != nil {
		return nil, fmt.Errorf("set-up: %w", err)
	}
	// Let the set-up's own derivations settle before measuring.
	settle(ctx, e, admin, 30*time.Second)
	if st != nil && st.Limiter != nil {
		if err := st.Limiter.SetScale(c.limits.Scale); err != nil {
			return nil, err
		}
		pins = w.pinned()
		fmt.Fprintf(progress, "the programs meet %s from here on\n", st.Limiter.Limits())
	}
	if c.warmup > 0 && ctx.Err() == nil {
		rate := 50.0
		if len(c.rates) > 0 {
			rate = c.rates[0]
		}
		fmt.Fprintf(progress, "warm-up: %.0f writes/s for %s (not reported)\n", rate, c.warmup)
		e.runPhase(ctx, -1, rate, c.warmup, statsOf(-1))
		settle(ctx, e, admin, c.drain)
	}
	if err := measureRaw(); err != nil {
		return nil, err
	}
	if st != nil && st.Limiter != nil {
		limitsSteady[0], limitsAt[0] = st.Limiter.KeyCounts(), time.Now()
	}

	if st != nil {
		// Last, with everything drained: the strongest end-to-end check of
		// the projector there is.
		defer func() {
			if ctx.Err() != nil {
				return
			}
			settle(ctx, e, admin, c.drain)
			if st.Limiter != nil {
				limitsSteady[1], limitsAt[1] = st.Limiter.KeyCounts(), time.Now()
			}
			fmt.Fprintf(progress, "projector verify: checking the derived items against the core items\n")
			rep.Verify = runVerify(ctx, c.bin, st.Endpoint, "load", append(slices.Clone(c.env), c.programEnv["projector"]...))
		}()
	}
	rates := append([]float64(nil), c.rates...)
	for i := 0; ctx.Err() == nil; i++ {
		var rate float64
		switch {
		case i < len(rates):
			rate = rates[i]
		case c.step:
			prev := 0.0
			if i > 0 {
				prev = rates[i-1]
			}
			rate = prev + c.stepBy
			if rate > c.maxRate {
				rep.KneeNote = fmt.Sprintf("-max-rate %.0f reached", c.maxRate)
				return rep, nil
			}
			rates = append(rates, rate)
		default:
			if c.catchup > 0 || c.catchupBacklog > 0 {
				rep.CatchUps = catchUps(ctx, c, e, st, rates[0], statsOf, catchUpPhases)
			}
			if c.world != nil {
				if err := c.world(ctx, clients, e.w); err != nil {
					return rep, err
				}
			}
			if c.after != nil {
				return rep, c.after(ctx, clients, streamARN)
			}
			return rep, nil
		}
		fmt.Fprintf(progress, "phase %d: %.0f writes/s for %s\n", i+1, rate, c.duration)
		var during sync.WaitGroup
		dctx, dcancel := context.WithTimeout(ctx, c.duration)
		if c.during != nil && st != nil {
			during.Go(func() { c.during(dctx, st) })
		}
		var soak *soakSampler
		if c.soak > 0 {
			soak = &soakSampler{}
			var rss func() (uint64, error)
			if st != nil {
				rss = st.DynamoDBRSSBytes
			}
			during.Go(func() { soak.run(dctx, e, rss, time.Now(), soakEvery(c.soak)) })
		}
		p := e.runPhase(ctx, i, rate, c.duration, statsOf(i))
		dcancel()
		during.Wait()
		if soak != nil {
			rep.Soak = soak.report(soakEvery(c.soak))
		}
		rep.Phases = append(rep.Phases, p)
		kept := p.keptUp()
		if kept {
			rep.WriterMax = max(rep.WriterMax, p.AchievedRate)
		}
		ok := kept && p.Errors == 0 && sum(p.Missing) == 0 && p.LagP99Ms <= msf(c.kneeLag)
		if !ok && rep.LimitedBy == "" {
			rep.LimitedBy = p.limit()
		}
		if ok && rate > rep.Knee {
			rep.Knee = rate
			if rep.DynamoDBLocalWritesPerSec > 0 {
				rep.KneeFractionOfRaw = rate / rep.DynamoDBLocalWritesPerSec
			}
		}
		if c.step && i >= len(c.rates)-1 && !ok {
			switch {
			case !kept:
				rep.KneeNote = fmt.Sprintf("at %.0f/s the writer achieved %.1f/s", rate, p.AchievedRate)
			case sum(p.Missing) > 0:
				rep.KneeNote = fmt.Sprintf("at %.0f/s %d derived items were still missing %s after the load", rate, sum(p.Missing), c.drain)
			case p.Errors > 0:
				rep.KneeNote = fmt.Sprintf("at %.0f/s %d writes failed", rate, p.Errors)
			default:
				rep.KneeNote = fmt.Sprintf("at %.0f/s lag p99 was %s", rate, fms(p.LagP99Ms))
			}
			return rep, nil
		}
		if sum(p.Missing) > 0 {
			// Start the next phase from a drained pipeline anyway.
			settle(ctx, e, admin, c.drain)
		}
	}
	return rep, context.Cause(ctx)
}

// settle waits until the consumers have read everything in the stream:
// their record counts stop changing and nothing is pending.
func settle(ctx context.Context, e *engine, admin map[string]string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	var last int64 = -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var n int64
		for _, m := range e.consumerMetrics(ctx) {
			if m.Stream != nil {
				n += m.Stream.RecordsRead
			}
		}
		e.mu.Lock()
		pending := len(e.pending)
		e.mu.Unlock()
		if n == last && pending == 0 {
			return
		}
		last = n
		sleep(ctx, 500*time.Millisecond)
	}
}

// rawWarmup is how long rawWriteRate writes before it counts: a cold JVM
// under DynamoDB Local takes seconds to compile its hot paths, and a count
// that starts at once reads 3x lower on some runs than on others.
const rawWarmup = 2 * time.Second

// rawWindow is the window whose rates rawWriteRate takes the median of.
const rawWindow = 500 * time.Millisecond

// rawWriteRate measures PutItem throughput from 16 clients into a scratch
// table (no stream), then deletes it: after rawWarmup, the median of the
// rates of d's half-second windows (a pause of the JVM or of the machine
// moves one window, not the figure).
func rawWriteRate(ctx context.Context, db *dynamodb.Client, d time.Duration) (float64, error) {
	name := fmt.Sprintf("loadgen-raw-%d", time.Now().UnixNano())
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		return 0, err
	}
	defer db.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now().Add(rawWarmup)
	end := start.Add(d)
	var failed atomic.Pointer[error]
	windows := make([]int64, max(1, int(d/rawWindow)))
	wg.Go(func() { // samples the count at each window's end
		sleep(ctx, time.Until(start))
		prev := n.Load()
		for i := range windows {
			sleep(ctx, time.Until(start.Add(time.Duration(i+1)*rawWindow)))
			cur := n.Load()
			windows[i], prev = cur-prev, cur
		}
	})
	for w := range 16 {
		wg.Go(func() {
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("w%d-%d", w, i)}, "v": &types.AttributeValueMemberS{Value: strings.Repeat("x", 200)},
				}})
				if err != nil {
					failed.Store(&err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return 0, *err
	}
	slices.Sort(windows)
	return float64(windows[len(windows)/2]) / rawWindow.Seconds(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
