//go:build unix && !linux

package child

import (
	"os/exec"
	"syscall"
)

// Group starts cmd in a process group of its own (only Linux kills it
// with this process).
func Group(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
