//go:build unix

package ddblocal

import (
	"os"
	"syscall"
)

func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
