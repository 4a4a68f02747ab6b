//go:build windows

package child

import (
	"os"
	"os/exec"
	"syscall"
)

// Group starts cmd in a process group of its own.
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// Terminate stops p: Windows has no SIGTERM to ask it with.
func Terminate(p *os.Process) { _ = p.Kill() }

// Kill stops p.
func Kill(p *os.Process) { _ = p.Kill() }
