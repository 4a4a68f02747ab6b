//go:build lambda.norpc

package app

import (
	"errors"
	"log/slog"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/stream"
)

// A bootstrap has no on-failure queue of its own (its event source mapping
// has) and no redrive command: onfailure_local.go's, without the SQS client.

func onFailureQueue(_ Runner, _ *ddb.Clients, _ string, dl stream.DeadLetters) stream.DeadLetters {
	return dl
}

func redrive(log *slog.Logger, _ Common, _ *ddb.Clients, _ string, _ stream.Handler) {
	Fatal(log, "redrive", errors.New("it reads the stream and a queue: run it outside Lambda"))
}
