//go:build unix

package app

import (
	"os"
	"syscall"
	"time"
)

// CPUSeconds is the user and system CPU time this process has used.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// pauseSignals are the signals that pause and resume a consumer.
func pauseSignals() (pause, resume os.Signal, ok bool) {
	return syscall.SIGUSR1, syscall.SIGUSR2, true
}
