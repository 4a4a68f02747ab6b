package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/cmd/internal/stack"
)

const usage = `devstack runs the whole pipeline on the local stack (make run): DynamoDB Local, the table
created from the code's schema, and the writer, projector and notifier from ./bin, wired to it. Ctrl-C stops
everything.

Usage:
  devstack

Environment: DYNAMODB_TABLE_NAME (default search-room), DYNAMODB_LOCAL_PORT (default 8000), WRITER_ADDR
(default 127.0.0.1:8080), ADMIN_PORT_BASE (default 9100; 0: no admin endpoints), BIN_DIR (default bin),
LOCAL_DIR (default .local), and what the programs read (STREAM_*, LOG_LEVEL), passed through.

STREAM_SOURCE=kinesis: the consumers read a Kinesis data stream on moto_server (which must be on PATH) that
the table's changes are carried into in AWS's record format, as with a table's Kinesis Data Streams
destination on AWS; KINESIS_REPEAT and KINESIS_REORDER (default 0.05 each) are the chances that a change
is put twice, or held back to go after its item's next change in the same batch, as AWS allows on that
source, drawn from KINESIS_SEED (default 1); KINESIS_SHARDS (default 2).
`

func main() {
	app.Help(usage)
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "devstack: unexpected argument %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("program", "devstack")
	port, err := strconv.Atoi(app.Getenv("DYNAMODB_LOCAL_PORT", strconv.Itoa(app.LocalDynamoDB)))
	if err != nil {
		app.Fatal(log, "bad configuration", fmt.Errorf("DYNAMODB_LOCAL_PORT: %w", err))
	}
	// The programs' admin endpoints: the writer on ADMIN_PORT_BASE, the
	// projector on +1, the notifier on +2; 0 turns them off.
	adminBase, err := strconv.Atoi(app.Getenv("ADMIN_PORT_BASE", "9100"))
	if err != nil || adminBase < 0 || adminBase > 65533 {
		app.Fatal(log, "bad configuration", fmt.Errorf("ADMIN_PORT_BASE=%q: want a port number (0: off)", os.Getenv("ADMIN_PORT_BASE")))
	}
	o := stack.Options{
		BinDir:        app.Getenv("BIN_DIR", "bin"),
		LocalDir:      app.Getenv("LOCAL_DIR", ".local"),
		Table:         app.Getenv("DYNAMODB_TABLE_NAME", app.LocalTable),
		DynamoDBPort:  port,
		WriterAddr:    app.Getenv("WRITER_ADDR", "127.0.0.1:8080"),
		AdminPortBase: adminBase,
		Logger:        log,
	}
	if k, err := kinesisOptions(); err != nil {
		app.Fatal(log, "bad configuration", err)
	} else {
		o.Kinesis = k
	}
	// A third consumer of the stream without a third reader: the audit
	// trail shares the projector's (stream.Fanout).
	trail := filepath.Join(o.LocalDir, "audit.jsonl")
	o.ProgramEnv = map[string][]string{"projector": {"AUDIT_LOG=" + trail}}

	ctx, stop := app.SignalContext()
	defer stop()
	s, err := stack.Start(ctx, o)
	if err != nil {
		app.Fatal(log, "the local stack did not start (what had started is stopped)", err)
	}
	defer s.Stop()
	log.Info("local stack up: press Ctrl-C to stop", "writer", s.WriterURL, "outbox", filepath.Join(o.LocalDir, "outbox", "events.jsonl"), "audit", trail, "admin", s.Admin)
	log.Info("the table is in memory and starts empty on each run; the outbox and dead letters of earlier runs stay in " + o.LocalDir + "; dev tokens of earlier runs are refused (get new ones from POST /dev/tokens)")
	select {
	case <-ctx.Done():
		log.Info("stopping")
	case name := <-s.Exited():
		log.Error("a program exited; stopping the stack", "program", name)
	}
}

// kinesisOptions reads STREAM_SOURCE and the KINESIS_* settings (nil: the
// DynamoDB stream).
func kinesisOptions() (*stack.Kinesis, error) {
	switch src := app.Getenv("STREAM_SOURCE", app.SourceDynamoDB); src {
	case app.SourceDynamoDB:
		return nil, nil
	case app.SourceKinesis:
	default:
		return nil, fmt.Errorf("STREAM_SOURCE=%q: want %s or %s", src, app.SourceDynamoDB, app.SourceKinesis)
	}
	k := &stack.Kinesis{}
	for _, f := range []struct {
		name string
		to   *float64
	}{{"KINESIS_REPEAT", &k.Faults.Repeat}, {"KINESIS_REORDER", &k.Faults.Reorder}} {
		v, err := strconv.ParseFloat(app.Getenv(f.name, "0.05"), 64)
		if err != nil || v < 0 || v > 1 {
			return nil, fmt.Errorf("%s=%q: want a chance from 0 to 1", f.name, os.Getenv(f.name))
		}
		*f.to = v
	}
	seed, err := strconv.ParseUint(app.Getenv("KINESIS_SEED", "1"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("KINESIS_SEED=%q: want a whole number", os.Getenv("KINESIS_SEED"))
	}
	shards, err := strconv.Atoi(app.Getenv("KINESIS_SHARDS", "2"))
	if err != nil || shards < 1 || shards > 50 {
		return nil, fmt.Errorf("KINESIS_SHARDS=%q: want 1 to 50", os.Getenv("KINESIS_SHARDS"))
	}
	k.Seed, k.Shards = seed, int32(shards)
	return k, nil
}
