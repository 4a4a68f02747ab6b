package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json's TestEvent, and the
// build events of go 1.24 and later).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64
}

// run runs go test -json args, writes its events to log and prints what
// go test prints without -v to out. It returns go test's exit code.
func run(log string, args []string, out, errOut io.Writer) (int, error) {
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(log)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	copyErr := filter(io.TeeReader(stdout, f), out)
	_, _ = io.Copy(io.Discard, stdout) // the log could not be written: go test must not block
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), copyErr
	case err != nil:
		return 0, err
	}
	return 0, copyErr
}

// filter reads go test -json events from r and prints to w what go test
// prints without -v: build output, each package's own lines (ok, FAIL, a
// panic outside a test) and, when a top-level test failed, the output of
// it and of its subtests that failed, each under its --- FAIL line and
// indented by its depth. A line that is not an event is printed as it is.
func filter(r io.Reader, w io.Writer) error {
	trees := map[string]*tree{} // package and top-level test
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text())
			continue
		}
		if e.Test == "" {
			if e.Action == "fail" || e.Action == "output" && strings.HasPrefix(e.Output, "FAIL") {
				// the package ends with tests that never ended (a
				// timeout, a goroutine's panic, os.Exit): what they said
				// is why
				flush(w, trees, e.Package)
			}
			switch {
			case e.Action == "build-output":
				io.WriteString(w, e.Output)
			case e.Action == "output" && e.Output != "PASS\n":
				io.WriteString(w, e.Output)
			}
			continue
		}
		topName, _, _ := strings.Cut(e.Test, "/")
		key := e.Package + "\x00" + topName
		tr := trees[key]
		if tr == nil {
			tr = &tree{out: map[string][]string{}, failed: map[string]bool{}}
			trees[key] = tr
		}
		switch e.Action {
		case "output":
			tr.add(e.Test, e.Output)
		case "fail":
			tr.failed[e.Test] = true
		}
		if e.Test == topName && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			if e.Action == "fail" {
				tr.print(w)
			}
			delete(trees, key)
		}
	}
	flush(w, trees, "")
	return sc.Err()
}

// flush prints the whole output of every test of pkg ("": of every
// package) that has not ended, and forgets it.
func flush(w io.Writer, trees map[string]*tree, pkg string) {
	for _, key := range slices.Sorted(maps.Keys(trees)) {
		if p, _, _ := strings.Cut(key, "\x00"); pkg != "" && p != pkg {
			continue
		}
		tr := trees[key]
		for test := range tr.failed {
			delete(tr.failed, test)
		}
		for _, test := range tr.order {
			tr.failed[test] = true
		}
		tr.print(w)
		delete(trees, key)
	}
}

// tree is the output of one top-level test and its subtests.
type tree struct {
	order  []string            // tests, as first seen
	out    map[string][]string // each test's output, its --- line first
	failed map[string]bool
}

func (t *tree) add(test, line string) {
	if strings.HasPrefix(line, "=== ") {
		return
	}
	if _, ok := t.out[test]; !ok {
		t.order = append(t.order, test)
	}
	if strings.HasPrefix(line, "--- ") {
		t.out[test] = append([]string{line}, t.out[test]...)
		return
	}
	t.out[test] = append(t.out[test], line)
}

func (t *tree) print(w io.Writer) {
	for _, test := range t.order {
		if !t.failed[test] {
			continue
		}
		indent := strings.Repeat("    ", strings.Count(test, "/"))
		for _, line := range t.out[test] {
			io.WriteString(w, indent+line)
		}
	}
}
