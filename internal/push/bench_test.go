//go:build unix

package push_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/push"
)

// BenchmarkPush is the notifier's side of a push, against a management
// endpoint that answers at once, 64 pushes at a time as Chat's fanout runs
// them, on kept-alive HTTP/1.1 connections. Its variants:
//   - client: push.Client, as the notifier pushes (its own request, signed
//     by the SDK's SigV4 signer);
//   - sdk: the SDK's PostToConnection, as push.Client pushed before (the
//     same request, through the SDK's per-call middleware);
//   - http: a plain unsigned POST of the frame (the floor: HTTP alone);
//   - encode: the frame's JSON alone (chat.Outbound.Encode; once per
//     message, not per push).
//
// The endpoint is another process (this test binary run again), so that
// cpu-µs/push is the pushing side's CPU alone; docs/performance.md (Chat)
// has the numbers.
func BenchmarkPush(b *testing.B) {
	url := endpoint(b)
	msg := chat.Message{RoomID: "r1", MessageID: "01KXYZ0000000000000000000", UserID: "alice", UserName: "Alice", Content: "Shall we see the flat on Tuesday at six?", CreatedAt: "2026-11-26T08:00:00.000Z"}
	frame := func() []byte { return chat.Outbound{Type: chat.FrameMessage, Message: &msg}.Encode() }
	transport := func() *http.Client {
		return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 64}}
	}
	cfg := func(creds aws.CredentialsProvider) aws.Config {
		return aws.Config{Region: "eu-west-1", Credentials: creds, HTTPClient: transport()}
	}
	run := func(b *testing.B, push func(ctx context.Context, id string) error) {
		b.SetParallelism(32) // 64 at once on 2 cores
		b.ReportAllocs()
		cpu0 := processCPU()
		defer func() {
			// this process's CPU only: the endpoint is another process
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/push")
		}()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if err := push(ctx, "conn-"+strconv.FormatInt(n.Add(1), 10)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("client", func(b *testing.B) {
		c := push.New(cfg(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")), url+"/prod")
		run(b, func(ctx context.Context, id string) error { return c.Push(ctx, id, frame()) })
	})
	b.Run("sdk", func(b *testing.B) {
		api := apigatewaymanagementapi.NewFromConfig(cfg(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")), func(o *apigatewaymanagementapi.Options) {
			o.BaseEndpoint = aws.String(url + "/prod")
		})
		run(b, func(ctx context.Context, id string) error {
			_, err := api.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String(id), Data: frame()})
			return err
		})
	})
	b.Run("http", func(b *testing.B) {
		hc := transport()
		run(b, func(ctx context.Context, id string) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/prod/@connections/"+id, bytes.NewReader(frame()))
			res, err := hc.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, res.Body)
			return res.Body.Close()
		})
	})
	b.Run("encode", func(b *testing.B) {
		run(b, func(context.Context, string) error { _ = frame(); return nil })
	})
}

// endpointEnv makes the test binary serve as the benchmark's endpoint.
const endpointEnv = "PUSH_BENCH_ENDPOINT"

// TestMain serves the endpoint when run as one: answer every request at
// once, after reading its body; the address goes to stdout.
func TestMain(m *testing.M) {
	if os.Getenv(endpointEnv) == "" {
		os.Exit(m.Run())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
}

// endpoint starts the endpoint process and returns its URL.
func endpoint(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), endpointEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
