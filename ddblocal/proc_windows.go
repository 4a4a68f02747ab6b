//go:build windows

package ddblocal

import (
	"os"
	"os/exec"
	"syscall"
)

func group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func terminate(p *os.Process) { _ = p.Kill() }

func kill(p *os.Process) { _ = p.Kill() }
