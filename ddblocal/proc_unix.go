//go:build unix && !linux

package ddblocal

import (
	"os/exec"
	"syscall"
)

// group starts cmd in a process group of its own (only Linux kills it
// with this process).
func group(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
