//go:build linux

package child

import (
	"os/exec"
	"syscall"
)

// Group starts cmd in a process group of its own that gets SIGKILL when
// this process dies.
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
