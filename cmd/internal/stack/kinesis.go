package stack

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/destination"
	child "github.com/dynastream/dynastream/internal/proc"
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
	moto   *exec.Cmd
	dest   *destination.Kinesis
	cancel context.CancelFunc
	done   chan struct{}
}

// startKinesis starts moto_server, creates the Kinesis stream and starts
// carrying the table's changes into it; it returns the environment the
// consumers read it by.
func (s *Stack) startKinesis(ctx context.Context, o Options) ([]string, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, fmt.Errorf("stack: STREAM_SOURCE=kinesis needs moto_server on PATH (pip install 'moto[server]==5.2.1'), which serves the Kinesis stream: %w", err)
	}
	port, err := ddblocal.FreePort()
	if err != nil {
		return nil, err
	}
	out := &tail{}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = out, out
	child.Group(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stack: start moto_server: %w", err)
	}
	s.kinesis = &kinesisSide{moto: cmd}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := http.Get(endpoint + "/moto-api/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stack: moto_server did not answer within a minute:\n%s", out.String())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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
	child.Terminate(k.moto.Process)
	_ = k.moto.Wait()
	s.log.Info("moto_server stopped")
}

// tail keeps the last 64 KB written to it: moto_server's output, which
// logs every request, for the error that says why it did not start.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - 64<<10; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
