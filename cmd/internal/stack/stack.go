package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/ddb"
	child "github.com/dynastream/dynastream/internal/proc"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Programs are the binaries the stack runs, in start order.
var Programs = []string{"writer", "projector", "notifier"}

// Options configure Start.
type Options struct {
	// BinDir holds the built programs (default "bin").
	BinDir string
	// LocalDir holds the outbox and dead letters (default ".local").
	LocalDir string
	// Table is the table's name (default "search-room").
	Table string
	// DynamoDBPort is DynamoDB Local's port; 0 picks a free one.
	DynamoDBPort int
	// WriterAddr is where the writer listens (default "127.0.0.1:8080").
	WriterAddr string
	// AdminPorts gives each program an admin endpoint (/metrics, /healthz)
	// on a free loopback port.
	AdminPorts bool
	// AdminPortBase, when set, gives the programs fixed admin ports
	// instead: the writer AdminPortBase, the projector +1, the notifier +2
	// (in the order of Programs), on loopback.
	AdminPortBase int
	// Limits, when set, puts a ddblocal.Limiter between the programs and
	// DynamoDB Local: they meet DynamoDB's limits as it sets them
	// (throttles, unprocessed batch keys, transaction conflicts, GetRecords
	// a second), and Stack.Limiter counts what they met.
	Limits *ddblocal.Limits
	// Kinesis, when set, has the consumers read a Kinesis data stream that
	// the table's changes are carried into (kinesis.go), not the table's
	// DynamoDB stream.
	Kinesis *Kinesis
	// Env is added to every program's environment (e.g. STREAM_* settings).
	Env []string
	// ProgramEnv is added to one program's environment, after Env.
	ProgramEnv map[string][]string
	// Output receives the programs' logs (default os.Stdout).
	Output io.Writer
	Logger *slog.Logger
}

// Stack is a running local stack.
type Stack struct {
	// Endpoint is DynamoDB Local's; Clients are clients for it (straight
	// to it, with Limits too: the stack's own set-up and a test's checks
	// are not the programs' load).
	Endpoint string
	// Limiter is what the programs call with Options.Limits (nil without).
	Limiter   *ddblocal.Limiter
	Clients   *ddb.Clients
	Table     string
	StreamARN string
	// KinesisARN is the Kinesis stream the consumers read (with
	// Options.Kinesis).
	KinesisARN string
	// WriterURL is the writer's base URL.
	WriterURL string
	// Admin maps each program to its admin endpoint's base URL (with
	// AdminPorts).
	Admin map[string]string
	// Outbox is the notifier's domain-event file.
	Outbox string

	ddb    *ddblocal.Server
	exited chan string
	log    *slog.Logger
	bin    string
	output io.Writer
	envs   map[string][]string

	kinesis *kinesisSide

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	killed atomic.Bool // by Kill: not reported on Exited
}

func (o *Options) defaults() {
	if o.BinDir == "" {
		o.BinDir = "bin"
	}
	if o.LocalDir == "" {
		o.LocalDir = ".local"
	}
	if o.Table == "" {
		o.Table = "search-room"
	}
	if o.WriterAddr == "" {
		o.WriterAddr = app.DefaultWriterAddr
	}
	if o.Output == nil {
		o.Output = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Start starts DynamoDB Local, creates the table and the checkpoint table
// (idempotently), starts the programs and waits until the writer answers
// /healthz. On error, whatever was started is stopped again.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	o.defaults()
	for _, name := range Programs {
		if _, err := os.Stat(filepath.Join(o.BinDir, name)); err != nil {
			return nil, fmt.Errorf("stack: %s not built in %s (run `make build`): %w", name, o.BinDir, err)
		}
	}
	s := &Stack{Table: o.Table, Admin: map[string]string{}, exited: make(chan string, len(Programs)), log: o.Logger,
		bin: o.BinDir, output: o.Output, envs: map[string][]string{},
		Outbox: filepath.Join(o.LocalDir, "outbox", "events.jsonl")}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	o.Logger.Info("starting DynamoDB Local", "port", o.DynamoDBPort)
	if s.ddb, err = ddblocal.Start(ctx, ddblocal.Options{Port: o.DynamoDBPort}); err != nil {
		return s, err
	}
	s.Endpoint = s.ddb.Endpoint
	if !s.ddb.Loopback {
		o.Logger.Warn("anyone on this network can read and write the local tables", "why", s.ddb.NotLoopback)
	}
	if s.Clients, err = ddb.New(ctx, ddb.Config{Endpoint: s.Endpoint}); err != nil {
		return s, err
	}
	if s.StreamARN, err = store.EnsureTable(ctx, s.Clients.DB, o.Table); err != nil {
		return s, fmt.Errorf("stack: create table: %w", err)
	}
	cps := &stream.TableCheckpoints{DB: s.Clients.DB, Table: o.Table + "-checkpoints"}
	if err := cps.CreateTable(ctx); err != nil {
		return s, fmt.Errorf("stack: create checkpoint table: %w", err)
	}
	for _, name := range []string{store.BookkeepingTableName(o.Table), store.EffectsTableName(o.Table)} {
		if err := store.EnsureBookkeepingTable(ctx, s.Clients.DB, name); err != nil {
			return s, fmt.Errorf("stack: create table %s: %w", name, err)
		}
	}
	o.Logger.Info("table ready", "table", o.Table, "stream", s.StreamARN)
	programs := s.Endpoint
	if o.Limits != nil {
		if s.Limiter, err = ddblocal.NewLimiter(s.Endpoint, *o.Limits); err != nil {
			return s, err
		}
		programs = s.Limiter.Endpoint
		o.Logger.Info("the programs meet DynamoDB's limits", "limits", s.Limiter.Limits().String(), "endpoint", programs)
	}

	secret, pushSecret := make([]byte, 16), make([]byte, 16)
	_, _ = rand.Read(secret)
	_, _ = rand.Read(pushSecret)
	env := append(os.Environ(),
		"DYNAMODB_TABLE_NAME="+o.Table,
		"DYNAMODB_ENDPOINT="+programs,
		"DEV_AUTH_SECRET="+hex.EncodeToString(secret),
		"CHAT_PUSH_SECRET="+hex.EncodeToString(pushSecret),
		"WRITER_ADDR="+o.WriterAddr,
		"LOCAL_DIR="+o.LocalDir,
		"APP_BASE_URL="+app.LocalURL(o.WriterAddr), // the e-mails' links: the writer's /app/ pages
		"AWS_LAMBDA_RUNTIME_API=",                  // never Lambda mode here
	)
	if o.Kinesis != nil {
		kenv, err := s.startKinesis(ctx, o)
		if err != nil {
			return s, err
		}
		env = append(env, kenv...)
	} else {
		env = append(env, "STREAM_SOURCE=dynamodb") // whatever the caller's environment says
	}
	env = append(env, o.Env...)
	for i, name := range Programs {
		penv := append(append([]string(nil), env...), o.ProgramEnv[name]...)
		if o.AdminPorts || o.AdminPortBase > 0 {
			port := o.AdminPortBase + i
			if o.AdminPortBase == 0 {
				if port, err = ddblocal.FreePort(); err != nil {
					return s, fmt.Errorf("stack: admin port: %w", err)
				}
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			penv = append(penv, "ADMIN_ADDR="+addr)
			s.Admin[name] = "http://" + addr
		}
		s.envs[name] = penv
		if err := s.launch(name); err != nil {
			return s, err
		}
	}
	s.WriterURL = app.LocalURL(o.WriterAddr)
	if err := s.waitHealthy(ctx, s.WriterURL); err != nil {
		return s, fmt.Errorf("stack: writer did not become healthy: %w", err)
	}
	for name, url := range s.Admin {
		if err := s.waitHealthy(ctx, url); err != nil {
			return s, fmt.Errorf("stack: %s's admin endpoint: %w", name, err)
		}
	}
	return s, nil
}

// launch starts a program with its environment.
func (s *Stack) launch(name string) error {
	cmd := exec.Command(filepath.Join(s.bin, name))
	cmd.Env = s.envs[name]
	cmd.Stdout, cmd.Stderr = s.output, s.output
	child.Group(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("stack: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	s.mu.Lock()
	s.procs = slices.DeleteFunc(s.procs, func(q *proc) bool { return q.name == name })
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(p.done)
		if !p.killed.Load() {
			select {
			case s.exited <- name:
			default:
			}
		}
	}()
	return nil
}

func (s *Stack) proc(name string) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// Kill ends a program at once with SIGKILL (as a crash or a Lambda
// timeout would: no clean-up runs) and waits until it is gone. Its exit
// is not reported on Exited.
func (s *Stack) Kill(name string) error {
	p := s.proc(name)
	if p == nil {
		return fmt.Errorf("stack: no program %q", name)
	}
	p.killed.Store(true)
	child.Kill(p.cmd.Process)
	<-p.done
	return nil
}

// Restart starts a program Kill ended, and waits until it answers
// /healthz (its admin endpoint, or the writer's).
func (s *Stack) Restart(ctx context.Context, name string) error {
	if err := s.launch(name); err != nil {
		return err
	}
	url := s.Admin[name]
	if name == "writer" {
		url = s.WriterURL
	}
	if url == "" {
		return nil
	}
	return s.waitHealthy(ctx, url)
}

// Reconfigure stops a program cleanly (SIGTERM, as Stop does: a killed
// one after 10 s), adds the KEY=VALUE settings to its environment (a
// later setting of a key wins) and starts it again, waiting until it
// answers /healthz. Its exit is not reported on Exited.
func (s *Stack) Reconfigure(ctx context.Context, name string, env ...string) error {
	p := s.proc(name)
	if p == nil {
		return fmt.Errorf("stack: no program %q", name)
	}
	p.killed.Store(true)
	child.Terminate(p.cmd.Process)
	grace, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.waitOrKill(grace.Done(), p)
	s.mu.Lock()
	s.envs[name] = append(slices.Clip(s.envs[name]), env...)
	s.mu.Unlock()
	return s.Restart(ctx, name)
}

// waitHealthy polls base/healthz until it answers 200.
func (s *Stack) waitHealthy(ctx context.Context, base string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case name := <-s.exited:
			s.exited <- name // Exited still reports it
			return fmt.Errorf("%s exited during start-up", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer from %s/healthz after 30 s", base)
}

// DynamoDBCPUSeconds is the CPU time DynamoDB Local has used so far.
func (s *Stack) DynamoDBCPUSeconds() (float64, error) { return s.ddb.CPUSeconds() }

// DynamoDBRSSBytes is DynamoDB Local's resident memory (its tables are in
// it).
func (s *Stack) DynamoDBRSSBytes() (uint64, error) { return s.ddb.RSSBytes() }

// Exited receives the name of a program that exited.
func (s *Stack) Exited() <-chan string { return s.exited }

// waitOrKill waits until a terminated program has exited, killing it
// (with its process group) once grace is closed.
func (s *Stack) waitOrKill(grace <-chan struct{}, p *proc) {
	select {
	case <-p.done:
	case <-grace:
		s.log.Warn("killing", "program", p.name, "pid", p.cmd.Process.Pid)
		child.Kill(p.cmd.Process)
		<-p.done
	}
}

// Stop sends SIGTERM to every program, waits up to 5 s, kills whatever is
// left (with its process group), then stops DynamoDB Local.
func (s *Stack) Stop() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for _, p := range procs {
		p.killed.Store(true)
		child.Terminate(p.cmd.Process)
	}
	grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range procs {
		s.waitOrKill(grace.Done(), p)
	}
	s.stopKinesis()
	if s.Limiter != nil {
		_ = s.Limiter.Close()
	}
	if s.ddb != nil {
		_ = s.ddb.Stop()
		s.ddb = nil
		s.log.Info("DynamoDB Local stopped")
	}
}
