//go:build windows

package stream

import "syscall"

// running reports whether a process of this host with pid runs.
func running(pid int) bool {
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
