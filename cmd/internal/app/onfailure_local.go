//go:build !lambda.norpc

package app

import (
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dynastream/dynastream/consumer/onfailure"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/stream"
)

// The on-failure queue and its redrive run outside Lambda only: a
// function's event source mapping has its own destination, and the
// bootstraps do not link the SQS client (onfailure_lambda.go).

// SQS returns an SQS client: for a local endpoint with fixed credentials
// (a local SQS accepts any), otherwise the AWS configuration's.
func (r Runner) SQS(aw aws.Config) *sqs.Client {
	if r.SQSEndpoint == "" {
		return sqs.NewFromConfig(aw)
	}
	aw = aw.Copy()
	aw.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
	return sqs.NewFromConfig(aw, func(o *sqs.Options) { o.BaseEndpoint = aws.String(r.SQSEndpoint) })
}

// onFailureQueue is the runner's on-failure destination: rc's queue, with
// dl for the records that cannot be converted.
func onFailureQueue(rc Runner, clients *ddb.Clients, name string, dl stream.DeadLetters) stream.DeadLetters {
	return &onfailure.SQS{Client: rc.SQS(clients.AWS), QueueURL: rc.OnFailureQueue, FunctionARN: name, Undecodable: dl}
}

// redrive serves `<consumer> redrive [QUEUE_URL]`: it reads the on-failure
// queue (QUEUE_URL, or STREAM_ON_FAILURE_QUEUE_URL) — the event source
// mapping's in AWS, the runner's locally — reads each message's records
// back from the table's stream, hands them to the handler, and deletes the
// messages whose records all succeeded. It exits non-zero if any message is
// left: records that failed again, records the stream no longer has (lost,
// named in the log), or a message that is no failure record.
func redrive(log *slog.Logger, c Common, clients *ddb.Clients, name string, h stream.Handler) {
	rc, err := LoadRunner(c.Table)
	if err != nil {
		Fatal(log, "bad configuration", err)
	}
	queue := rc.OnFailureQueue
	if len(os.Args) == 3 {
		queue = os.Args[2]
	}
	if queue == "" || len(os.Args) > 3 {
		Fatal(log, "usage", errors.New("redrive [QUEUE_URL]: the on-failure queue's URL, or set STREAM_ON_FAILURE_QUEUE_URL"))
	}
	if clients.Streams == nil {
		Fatal(log, "redrive", errors.New("it reads the stream: run it outside Lambda"))
	}
	ctx, stop := SignalContext()
	defer stop()
	// the queue may be shared (the template's is): only this consumer's
	// messages, by the function named in each
	rep, err := onfailure.Redrive(ctx, onfailure.Options{Queue: rc.SQS(clients.AWS), QueueURL: queue, Streams: clients.Streams,
		Handler: h, Function: onfailure.FunctionNamed(name), Items: clients.DB, Logger: log})
	if err != nil {
		Fatal(log, "redrive", err)
	}
	left := len(rep.Failed) + len(rep.Lost) + len(rep.Unreadable) + len(rep.Windows) + len(rep.Reconcile)
	log.Info("redrive done", "redriven", rep.Redriven, "records", rep.Records, "failedAgain", len(rep.Failed), "lost", len(rep.Lost),
		"unreadable", len(rep.Unreadable), "windows", len(rep.Windows), "toReconcile", len(rep.Reconcile), "itemsGone", rep.Gone,
		"itemsChanged", rep.Changed, "otherConsumers", rep.Others)
	if left > 0 {
		os.Exit(1)
	}
}
