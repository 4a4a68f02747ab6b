//go:build windows

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// Group makes cmd start in a process group of its own.
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// Terminate stops p (Windows has no SIGTERM for another process: it is
// killed).
func Terminate(p *os.Process) { _ = p.Kill() }

// Kill stops p at once.
func Kill(p *os.Process) { _ = p.Kill() }

// Running reports whether a process of this host with pid runs.
func Running(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	const stillActive = 259
	return syscall.GetExitCodeProcess(h, &code) == nil && code == stillActive
}
