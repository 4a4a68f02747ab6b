//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"
)

// Group makes cmd start in a process group of its own (no platform but
// Linux kills it with this process: stop it with Terminate or Kill).
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
