//go:build unix

package stream

import (
	"errors"
	"syscall"
)

// running reports whether a process of this host with pid runs.
func running(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
