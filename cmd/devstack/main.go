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

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("program", "devstack")
	port, err := strconv.Atoi(app.Getenv("DYNAMODB_LOCAL_PORT", "8000"))
	if err != nil {
		app.Fatal(log, "bad configuration", fmt.Errorf("DYNAMODB_LOCAL_PORT: %w", err))
	}
	o := stack.Options{
		BinDir:       app.Getenv("BIN_DIR", "bin"),
		LocalDir:     app.Getenv("LOCAL_DIR", ".local"),
		Table:        app.Getenv("DYNAMODB_TABLE_NAME", "search-room"),
		DynamoDBPort: port,
		WriterAddr:   app.Getenv("WRITER_ADDR", "127.0.0.1:8080"),
		Logger:       log,
	}

	ctx, stop := app.SignalContext()
	defer stop()
	s, err := stack.Start(ctx, o)
	if err != nil {
		app.Fatal(log, "the local stack did not start (what had started is stopped)", err)
	}
	defer s.Stop()
	log.Info("local stack up: press Ctrl-C to stop", "writer", s.WriterURL, "outbox", filepath.Join(o.LocalDir, "outbox", "events.jsonl"))
	select {
	case <-ctx.Done():
		log.Info("stopping")
	case name := <-s.Exited():
		log.Error("a program exited; stopping the stack", "program", name)
	}
}
