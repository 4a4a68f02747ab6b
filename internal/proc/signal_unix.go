//go:build unix

package proc

import (
	"errors"
	"os"
	"syscall"
)

// Terminate asks p's process group to stop (SIGTERM).
func Terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// Kill stops p's process group at once (SIGKILL).
func Kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// Running reports whether a process of this host with pid runs.
func Running(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
