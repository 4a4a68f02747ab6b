package runtimeapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrorBody is what a runtime posts to …/error and init/error.
type ErrorBody struct {
	ErrorMessage string   `json:"errorMessage"`
	ErrorType    string   `json:"errorType"`
	StackTrace   []string `json:"stackTrace,omitempty"`
	// Header is the Lambda-Runtime-Function-Error-Type header.
	Header string `json:"-"`
}

// Result is what became of one invocation.
type Result struct {
	RequestID string
	// Payload is the response body (posted to …/response).
	Payload []byte
	// Error is set when the runtime posted to …/error.
	Error *ErrorBody
	// TimedOut: no answer by the deadline (Lambda's "Task timed out").
	TimedOut bool
	// Exited: the process ended before answering (Runtime.ExitError).
	Exited bool
	// Duration is from the invocation's hand-over to its answer.
	Duration time.Duration
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	given    time.Time
	done     chan Result
	once     sync.Once
}

func (iv *invocation) finish(r Result) {
	iv.once.Do(func() {
		r.RequestID = iv.id
		if !iv.given.IsZero() {
			r.Duration = time.Since(iv.given)
		}
		iv.done <- r
	})
}

// Server is the runtime API of one execution environment.
type Server struct {
	// FunctionARN goes in Lambda-Runtime-Invoked-Function-Arn.
	FunctionARN string

	ln      net.Listener
	srv     *http.Server
	queue   chan *invocation
	mu      sync.Mutex
	current *invocation
	seq     atomic.Int64

	firstNext     chan struct{}
	firstNextOnce sync.Once
	firstNextAt   time.Time
	initErr       chan ErrorBody
}

// NewServer starts a runtime API on a loopback port.
func NewServer() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		FunctionARN: "arn:aws:lambda:eu-west-1:123456789012:function:test",
		ln:          ln, queue: make(chan *invocation, 1),
		firstNext: make(chan struct{}), initErr: make(chan ErrorBody, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", s.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", s.answer(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", s.answer(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", s.initError)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the value of AWS_LAMBDA_RUNTIME_API.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	s.firstNextOnce.Do(func() { s.firstNextAt = time.Now(); close(s.firstNext) })
	var iv *invocation
	select {
	case iv = <-s.queue:
	case <-r.Context().Done():
		return
	}
	s.mu.Lock()
	s.current = iv
	iv.given = time.Now()
	s.mu.Unlock()
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", iv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(iv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", s.FunctionARN)
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(iv.payload)
}

func (s *Server) answer(isErr bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 6<<20+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > 6<<20 { // Lambda's synchronous response limit
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			_, _ = w.Write([]byte(`{"errorMessage":"Exceeded maximum allowed payload size (6291556 bytes).","errorType":"RequestEntityTooLarge"}`))
			return
		}
		s.mu.Lock()
		iv := s.current
		if iv != nil && iv.id == r.PathValue("id") {
			s.current = nil
		} else {
			iv = nil
		}
		s.mu.Unlock()
		if iv == nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errorMessage":"Invalid request ID","errorType":"InvalidRequestID"}`))
			return
		}
		res := Result{Payload: body}
		if isErr {
			var e ErrorBody
			if json.Unmarshal(body, &e) != nil {
				e.ErrorMessage = string(body)
			}
			e.Header = r.Header.Get("Lambda-Runtime-Function-Error-Type")
			res = Result{Error: &e}
		}
		iv.finish(res)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"OK"}`))
	}
}

func (s *Server) initError(w http.ResponseWriter, r *http.Request) {
	var e ErrorBody
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if json.Unmarshal(body, &e) != nil {
		e.ErrorMessage = string(body)
	}
	e.Header = r.Header.Get("Lambda-Runtime-Function-Error-Type")
	select {
	case s.initErr <- e:
	default:
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

// Function is a bootstrap running against its own Server.
type Function struct {
	API     *Server
	Cmd     *exec.Cmd
	Started time.Time

	exited chan struct{}
	err    error

	logMu sync.Mutex
	logs  []string
}

// Start runs binary with env (and nothing of this process's environment
// but PATH and HOME), AWS_LAMBDA_RUNTIME_API pointing at a new Server.
func Start(binary string, env []string) (*Function, error) {
	api, err := NewServer()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "AWS_LAMBDA_RUNTIME_API=" + api.Addr()}, env...)
	// stdout and stderr both go to the function's log, as in Lambda.
	out, pw, err := os.Pipe()
	if err != nil {
		api.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	f := &Function{API: api, Cmd: cmd, exited: make(chan struct{})}
	f.Started = time.Now()
	err = cmd.Start()
	pw.Close() // the child has its copy
	if err != nil {
		out.Close()
		api.Close()
		return nil, err
	}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		defer out.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			f.logMu.Lock()
			f.logs = append(f.logs, sc.Text())
			f.logMu.Unlock()
		}
	}()
	go func() {
		<-lines
		f.err = cmd.Wait()
		close(f.exited)
		f.API.mu.Lock()
		iv := f.API.current
		f.API.mu.Unlock()
		if iv != nil {
			iv.finish(Result{Exited: true})
		}
	}()
	return f, nil
}

// Init waits for the first `next` (init done) or the process's exit, up
// to timeout, and returns how long init took. When init failed, the error
// carries what was posted to init/error.
func (f *Function) Init(timeout time.Duration) (time.Duration, error) {
	select {
	case <-f.API.firstNext:
		return f.API.firstNextAt.Sub(f.Started), nil
	case <-f.exited:
		select {
		case e := <-f.API.initErr:
			return 0, &InitError{Body: e, ExitErr: f.err}
		default:
			return 0, &InitError{ExitErr: f.err}
		}
	case <-time.After(timeout):
		return 0, fmt.Errorf("runtimeapi: no `next` within %s", timeout)
	}
}

// InitError is a bootstrap's failed init: what it posted to init/error
// (Body.ErrorMessage empty when it posted nothing) and how it exited.
type InitError struct {
	Body    ErrorBody
	ExitErr error
}

func (e *InitError) Error() string {
	if e.Body.ErrorMessage == "" {
		return fmt.Sprintf("init failed without reporting to init/error (exit: %v)", e.ExitErr)
	}
	return fmt.Sprintf("init error %s: %s (exit: %v)", e.Body.ErrorType, e.Body.ErrorMessage, e.ExitErr)
}

// Invoke hands payload to the function with a deadline timeout from now
// and waits for the answer. On a timeout or an exit the process is killed
// (later invocations fail: Start a new Function).
func (f *Function) Invoke(payload []byte, timeout time.Duration) Result {
	iv := &invocation{
		id:      fmt.Sprintf("8476a536-e9f4-11e8-9739-%012d", f.API.seq.Add(1)),
		payload: payload, deadline: time.Now().Add(timeout), done: make(chan Result, 1),
	}
	select {
	case f.API.queue <- iv:
	case <-f.exited:
		return Result{RequestID: iv.id, Exited: true}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-iv.done:
		return r
	case <-f.exited:
		iv.finish(Result{Exited: true})
		return <-iv.done
	case <-t.C:
		iv.finish(Result{TimedOut: true})
		f.Kill()
		return <-iv.done
	}
}

// Alive reports whether the process still runs.
func (f *Function) Alive() bool {
	select {
	case <-f.exited:
		return false
	default:
		return true
	}
}

// RSS is the process's resident memory (Linux: /proc/<pid>/status VmRSS).
func (f *Function) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", f.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("runtimeapi: no VmRSS")
}

// Logs returns the lines the process wrote to stdout and stderr so far.
func (f *Function) Logs() []string {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	return append([]string(nil), f.logs...)
}

// LogsContaining returns the log lines that contain every one of subs.
func (f *Function) LogsContaining(subs ...string) []string {
	var out []string
	for _, l := range f.Logs() {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// WaitLogs waits up to timeout for at least n log lines containing every
// one of subs (stderr is read as the process writes it, so a line written
// just before an answer may come in just after it) and returns them.
func (f *Function) WaitLogs(timeout time.Duration, n int, subs ...string) []string {
	end := time.Now().Add(timeout)
	for {
		got := f.LogsContaining(subs...)
		if len(got) >= n || time.Now().After(end) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill ends the process.
func (f *Function) Kill() {
	if f.Alive() {
		_ = f.Cmd.Process.Kill()
	}
}

// Stop kills the process, waits for it and closes the API.
func (f *Function) Stop() {
	f.Kill()
	select {
	case <-f.exited:
	case <-time.After(5 * time.Second):
	}
	f.API.Close()
}
