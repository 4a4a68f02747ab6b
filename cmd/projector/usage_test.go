package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The first hour: -h prints usage and nothing else, before any
// configuration is read; an unknown command is refused with the usage; a
// missing dead-letter file is nothing to resubmit.
func TestUsageAndNothingToResubmit(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "projector")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	runBare := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		// no table, no endpoint: what a newcomer's shell has
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"verify", "-h"}, {"help"}} {
		out, errs, code := runBare(args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "projector derives") || !strings.Contains(out, "projector verify") {
			t.Errorf("projector %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if out, errs, code := runBare("frobnicate"); code != 2 || out != "" || !strings.Contains(errs, `unknown command "frobnicate"`) || !strings.Contains(errs, "Usage:") {
		t.Errorf("unknown command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	_, errs, code := runBare("resubmit", filepath.Join(t.TempDir(), "none.jsonl"))
	if code != 0 || !strings.Contains(errs, "nothing to resubmit") || !strings.Contains(errs, "using make run's stack") {
		t.Errorf("resubmit of no file: exit %d, %s", code, errs)
	}
}
