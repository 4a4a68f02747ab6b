//go:build unix

package child

import (
	"os"
	"syscall"
)

// Terminate asks p's process group to stop (SIGTERM).
func Terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// Kill stops p's process group (SIGKILL).
func Kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
