//go:build windows

package app

import "os"

// CPUSeconds is the CPU time this process has used: not measured on
// Windows (0).
func CPUSeconds() float64 { return 0 }

// pauseSignals: Windows has no signals to pause and resume a consumer
// with; POST /pause and /resume do it.
func pauseSignals() (pause, resume os.Signal, ok bool) { return nil, nil, false }
