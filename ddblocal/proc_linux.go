//go:build linux

package ddblocal

import (
	"os/exec"
	"syscall"
)

// group starts cmd in a process group of its own that gets SIGKILL when
// this process dies. (internal/proc does the same for the application;
// ddblocal, a public package, imports nothing internal.)
func group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
