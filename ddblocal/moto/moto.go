package moto

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/dynastream/dynastream/ddblocal/internal/child"
)

// Version is the moto release this project tests with.
const Version = "5.2.1"

// ErrNotInstalled is Installed's and Start's error when moto_server is not
// on PATH.
var ErrNotInstalled = errors.New("moto: moto_server is not on PATH (pip install 'moto[server]==" + Version + "')")

// Installed says whether moto_server is on PATH (nil) or not
// (ErrNotInstalled).
func Installed() error {
	if _, err := exec.LookPath("moto_server"); err != nil {
		return ErrNotInstalled
	}
	return nil
}

// Server is a running moto_server.
type Server struct {
	// Endpoint is its base URL, http://127.0.0.1:<port>.
	Endpoint string
	cmd      *exec.Cmd
	out      *tail
	done     chan struct{}
}

// Start starts moto_server on a free loopback port and waits until it
// answers (at most a minute, or until ctx ends).
func Start(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("moto: a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), out: &tail{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	child.Group(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("moto: start moto_server: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := http.Get(s.Endpoint + "/moto-api/"); err == nil {
			resp.Body.Close()
			return s, nil
		}
		var why error
		select {
		case <-s.done:
			why = errors.New("moto: moto_server exited")
		case <-ctx.Done():
			why = ctx.Err()
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				why = errors.New("moto: moto_server did not answer within a minute")
			}
		}
		if why != nil {
			s.Stop()
			return nil, fmt.Errorf("%w; its output:\n%s", why, s.Output())
		}
	}
}

// Config is AWS configuration for the server: its endpoint, region
// us-east-1 and fixed credentials (moto checks no signature).
func (s *Server) Config() aws.Config {
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(s.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
}

// Output is the last 64 KB moto_server printed (it logs every request;
// its traceback says what it could not do).
func (s *Server) Output() string { return s.out.String() }

// Stop terminates moto_server and waits for it to exit (killing it after
// 5 s).
func (s *Server) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	child.Terminate(s.cmd.Process)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		child.Kill(s.cmd.Process)
		<-s.done
	}
}

// ForTest starts a moto_server for t and stops it at t's end, logging its
// last 40 lines of output when t failed; t fails at once when moto_server
// is not on PATH or does not start.
func ForTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			lines := strings.Split(strings.TrimRight(s.Output(), "\n"), "\n")
			t.Logf("moto_server's last output:\n%s", strings.Join(lines[max(len(lines)-40, 0):], "\n"))
		}
	})
	return s
}

// tail keeps the last 64 KB written to it.
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
