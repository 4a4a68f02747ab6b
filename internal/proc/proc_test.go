package proc_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/dynastream/dynastream/internal/proc"
)

// A child started in its group runs until Terminate stops it, and then
// no longer runs.
func TestGroupTerminateRunning(t *testing.T) {
	if !proc.Running(os.Getpid()) {
		t.Fatal("this process does not run")
	}
	name, args := "sleep", []string{"30"}
	if runtime.GOOS == "windows" {
		name, args = "ping", []string{"-n", "30", "127.0.0.1"}
	}
	cmd := exec.Command(name, args...)
	proc.Group(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !proc.Running(pid) {
		t.Fatal("the child does not run")
	}
	proc.Terminate(cmd.Process)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		proc.Kill(cmd.Process)
		t.Fatal("the child outlived Terminate")
	}
	if proc.Running(pid) {
		t.Error("the child runs after it was waited for")
	}
}
