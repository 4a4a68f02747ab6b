package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddblocal"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("program", "devstack")
	table := app.Getenv("DYNAMODB_TABLE_NAME", "search-room")
	port, err := strconv.Atoi(app.Getenv("DYNAMODB_LOCAL_PORT", "8000"))
	if err != nil {
		app.Fatal(log, "bad configuration", fmt.Errorf("DYNAMODB_LOCAL_PORT: %w", err))
	}
	binDir := app.Getenv("BIN_DIR", "bin")
	localDir := app.Getenv("LOCAL_DIR", ".local")
	writerAddr := app.Getenv("WRITER_ADDR", ":8080")

	ctx, stop := app.SignalContext()
	defer stop()

	log.Info("starting DynamoDB Local", "port", port)
	srv, err := ddblocal.Start(ctx, ddblocal.Options{Port: port})
	if err != nil {
		app.Fatal(log, "DynamoDB Local", err)
	}
	defer func() {
		srv.Stop()
		log.Info("DynamoDB Local stopped")
	}()
	clients, err := ddb.New(ctx, ddb.Config{Endpoint: srv.Endpoint})
	if err != nil {
		log.Error("clients", "err", err)
		return
	}
	arn, err := store.EnsureTable(ctx, clients.DB, table)
	if err != nil {
		log.Error("create table", "err", err)
		return
	}
	cps := &stream.TableCheckpoints{DB: clients.DB, Table: table + "-checkpoints"}
	if err := cps.CreateTable(ctx); err != nil {
		log.Error("create checkpoint table", "err", err)
		return
	}
	log.Info("table ready", "table", table, "stream", arn)

	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	env := append(os.Environ(),
		"DYNAMODB_TABLE_NAME="+table,
		"DYNAMODB_ENDPOINT="+srv.Endpoint,
		"DEV_AUTH_SECRET="+hex.EncodeToString(secret),
		"WRITER_ADDR="+writerAddr,
		"LOCAL_DIR="+localDir,
		"AWS_LAMBDA_RUNTIME_API=", // never Lambda mode here
	)
	exited := make(chan string, 3)
	var procs []proc
	for _, name := range []string{"writer", "projector", "notifier"} {
		cmd := exec.Command(filepath.Join(binDir, name))
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			log.Error("start "+name+" (run `make build` first)", "err", err)
			stopAll(log, procs)
			return
		}
		p := proc{cmd: cmd, done: make(chan struct{})}
		procs = append(procs, p)
		go func() { _ = cmd.Wait(); close(p.done); exited <- name }()
	}
	if err := waitHealthy(ctx, writerAddr, exited); err != nil {
		log.Error("writer did not become healthy", "err", err)
		stopAll(log, procs)
		return
	}
	log.Info("local stack up: press Ctrl-C to stop", "writer", "http://localhost"+writerAddr, "outbox", filepath.Join(localDir, "outbox", "events.jsonl"))
	select {
	case <-ctx.Done():
		log.Info("stopping")
	case name := <-exited:
		log.Error("a program exited; stopping the stack", "program", name)
	}
	stopAll(log, procs)
}

// waitHealthy polls the writer's /healthz until it answers 200.
func waitHealthy(ctx context.Context, addr string, exited <-chan string) error {
	host := addr
	if strings.HasPrefix(host, ":") {
		host = "127.0.0.1" + host
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + host + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case name := <-exited:
			return fmt.Errorf("%s exited during start-up", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer from http://%s/healthz after 30 s", host)
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// stopAll sends SIGTERM to every program, waits up to 5 s, then kills
// whatever is left (with its process group).
func stopAll(log *slog.Logger, procs []proc) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-grace.Done():
			log.Warn("killing", "program", p.cmd.Path, "pid", p.cmd.Process.Pid)
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
}
