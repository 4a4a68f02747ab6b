//go:build lambda.norpc

package app

import (
	"context"
	"errors"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/stream"
)

// streamSource: a Lambda function reads no stream, its event source
// mapping does (for a Kinesis source too: stream.LambdaHandler decodes
// its events), and so the bootstrap links no Kinesis client
// (source_local.go has the reading).
func streamSource(context.Context, *ddb.Clients, string) (stream.API, string, error) {
	return nil, "", errors.New("a Lambda function reads no stream: its event source mapping does")
}
