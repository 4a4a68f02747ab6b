package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// VerifyReport is what `projector verify` said of the stack's table after
// the run: the derived items it covers, checked against the core items.
type VerifyReport struct {
	Differences int     `json:"differences"`
	Scanned     int64   `json:"scanned"`
	ItemsPerSec float64 `json:"itemsPerSec"`
	Seconds     float64 `json:"seconds"`
	// Examples are the first differences (JSON, as verify -json prints).
	Examples []json.RawMessage `json:"examples,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// runVerify runs bin/projector verify on the table at endpoint, with env
// added to its environment (the projector's settings in the run: the
// write shards among them, which it checks against the table's).
func runVerify(ctx context.Context, bin, endpoint, table string, env []string) *VerifyReport {
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "projector"), "verify", "-json", "-recheck", "2s")
	cmd.Env = append(append(os.Environ(), env...), "DYNAMODB_TABLE_NAME="+table, "DYNAMODB_ENDPOINT="+endpoint, "LOG_LEVEL=warn", "AWS_LAMBDA_RUNTIME_API=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	rep := parseVerify(&out)
	rep.Seconds = time.Since(start).Seconds()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		rep.Error = err.Error()
	case err != nil && rep.Differences == 0:
		rep.Error = strings.TrimSpace(errb.String())
	}
	return rep
}

// parseVerify reads verify -json's output: a difference per line, then
// the summary line.
func parseVerify(r io.Reader) *VerifyReport {
	rep := &VerifyReport{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "{") {
			if len(rep.Examples) < 5 {
				rep.Examples = append(rep.Examples, json.RawMessage(line))
			}
			continue
		}
		var n int
		if _, err := fmt.Sscanf(line, "%d difference(s) in %d items scanned (%f items/s)", &n, &rep.Scanned, &rep.ItemsPerSec); err == nil {
			rep.Differences = n
		}
	}
	return rep
}

func (v *VerifyReport) print(w io.Writer) {
	if v.Error != "" {
		fmt.Fprintf(w, "\nprojector verify failed: %s\n", v.Error)
		return
	}
	fmt.Fprintf(w, "\nprojector verify: %d difference(s) between the derived items and the core items (%d items scanned at %.0f items/s)\n",
		v.Differences, v.Scanned, v.ItemsPerSec)
	for _, e := range v.Examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

func (v *VerifyReport) String() string {
	if v == nil {
		return "not run"
	}
	var b strings.Builder
	v.print(&b)
	return strings.TrimSpace(b.String())
}
