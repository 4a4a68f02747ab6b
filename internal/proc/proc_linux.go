//go:build linux

package proc

import (
	"os/exec"
	"syscall"
)

// Group makes cmd start in a process group of its own that gets SIGKILL
// when this process dies.
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
