package stack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/dynastream/dynastream/ddblocal/moto"
	"github.com/dynastream/dynastream/internal/destination"
	"github.com/dynastream/dynastream/stream"
)

// Kinesis makes the stack's consumers read a Kinesis data stream instead
// of the table's DynamoDB stream, as they would with a table that writes
// its changes to Kinesis Data Streams on AWS: DynamoDB Local has no such
// destination, so moto_server serves the Kinesis stream and a
// destination.Kinesis carries the table's changes into it, injecting
// Faults under Seed.
type Kinesis struct {
	// Shards of the Kinesis stream (default 2).
	Shards int32
	Faults destination.Faults
	Seed   uint64
}

// kinesisSide is the running Kinesis part of a stack.
type kinesisSide struct {
	moto   *moto.Server
	dest   *destination.Kinesis
	cancel context.CancelFunc
	done   chan struct{}
}

// startKinesis starts moto_server, creates the Kinesis stream and starts
// carrying the table's changes into it; it returns the environment the
// consumers read it by.
func (s *Stack) startKinesis(ctx context.Context, o Options) ([]string, error) {
	m, err := moto.Start(ctx)
	if errors.Is(err, moto.ErrNotInstalled) {
		return nil, fmt.Errorf("stack: STREAM_SOURCE=kinesis needs moto_server, which serves the Kinesis stream: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	s.kinesis = &kinesisSide{moto: m}
	endpoint := m.Endpoint
	kc := sdk.NewFromConfig(s.Clients.AWS, func(so *sdk.Options) { so.BaseEndpoint = aws.String(endpoint) })
	name := o.Table + "-changes"
	shards := o.Kinesis.Shards
	if shards <= 0 {
		shards = 2
	}
	if _, err := kc.CreateStream(ctx, &sdk.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(shards)}); err != nil {
		return nil, fmt.Errorf("stack: create the Kinesis stream: %w", err)
	}
	desc, err := kc.DescribeStreamSummary(ctx, &sdk.DescribeStreamSummaryInput{StreamName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("stack: the Kinesis stream: %w", err)
	}
	s.KinesisARN = aws.ToString(desc.StreamDescriptionSummary.StreamARN)
	s.kinesis.dest = &destination.Kinesis{Client: kc, StreamARN: s.KinesisARN, Faults: o.Kinesis.Faults, Seed: o.Kinesis.Seed}
	// The table's Kinesis destination: a reader of its DynamoDB stream
	// that never gives a change up.
	r := &stream.Runner{API: s.Clients.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: &stream.MemoryDeadLetters{}, Logger: s.log,
		Config: stream.Config{StreamARN: s.StreamARN, Consumer: "kinesis-destination", StartingPosition: stream.TrimHorizon,
			PollInterval: 50 * time.Millisecond, MaxRetries: stream.Retries(stream.Forever), Skip: stream.SkipNone}} // every change, derived ones too
	runCtx, cancel := context.WithCancel(context.Background())
	s.kinesis.cancel, s.kinesis.done = cancel, make(chan struct{})
	go func() {
		defer close(s.kinesis.done)
		if err := r.Run(runCtx, s.kinesis.dest.Handle); err != nil && runCtx.Err() == nil {
			s.log.Error("the Kinesis destination stopped: the consumers get no more changes", "err", err)
		}
	}()
	s.log.Info("the table's changes go to a Kinesis data stream on moto_server; the consumers read it",
		"kinesis", s.KinesisARN, "endpoint", endpoint, "repeat", o.Kinesis.Faults.Repeat, "reorder", o.Kinesis.Faults.Reorder, "seed", o.Kinesis.Seed)
	return []string{"STREAM_SOURCE=kinesis", "KINESIS_STREAM_ARN=" + s.KinesisARN, "KINESIS_ENDPOINT=" + endpoint}, nil
}

// KinesisCounts says what the Kinesis destination carried and injected
// (zero without Options.Kinesis).
func (s *Stack) KinesisCounts() destination.Counts {
	if s.kinesis == nil || s.kinesis.dest == nil {
		return destination.Counts{}
	}
	return s.kinesis.dest.Counts()
}

// stopKinesis stops carrying changes, then moto_server.
func (s *Stack) stopKinesis() {
	k := s.kinesis
	if k == nil {
		return
	}
	s.kinesis = nil
	if k.cancel != nil {
		k.cancel()
		<-k.done
	}
	if k.dest != nil {
		n := k.dest.Counts()
		s.log.Info("the Kinesis destination stopped", "changes", n.Changes, "repeated", n.Repeated, "reordered", n.Reordered)
	}
	k.moto.Stop()
	s.log.Info("moto_server stopped")
}
