package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// logTimes is what one log says of where the time went.
type logTimes struct {
	name     string
	wall     time.Duration // first event to last
	packages []timed
	tests    []timed
	failed   int
}

type timed struct {
	pkg, test string
	elapsed   time.Duration
}

// read reads the go test -json events of one log.
func read(path string) (logTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return logTimes{}, err
	}
	defer f.Close()
	lt := logTimes{name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	var first, last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if !e.Time.IsZero() {
			if first.IsZero() {
				first = e.Time
			}
			last = e.Time
		}
		if e.Action != "pass" && e.Action != "fail" {
			continue
		}
		d := time.Duration(e.Elapsed * float64(time.Second))
		switch {
		case e.Test == "":
			lt.packages = append(lt.packages, timed{pkg: e.Package, elapsed: d})
		case !strings.Contains(e.Test, "/"):
			lt.tests = append(lt.tests, timed{pkg: e.Package, test: e.Test, elapsed: d})
		}
		if e.Action == "fail" && e.Test != "" {
			lt.failed++
		}
	}
	lt.wall = last.Sub(first)
	return lt, sc.Err()
}

// table prints, in Markdown, where the time of the logs at paths went.
func table(w io.Writer, paths []string, top int) error {
	var logs []logTimes
	for _, p := range paths {
		lt, err := read(p)
		if err != nil {
			return err
		}
		logs = append(logs, lt)
	}
	byTime := func(a, b timed) int {
		return cmp.Or(cmp.Compare(b.elapsed, a.elapsed), cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test))
	}
	fmt.Fprintln(w, "| run | wall | packages | slowest packages (go test's time) |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	var all []timed
	for _, lt := range logs {
		slices.SortFunc(lt.packages, byTime)
		var names []string
		for _, p := range lt.packages[:min(5, len(lt.packages))] {
			names = append(names, fmt.Sprintf("%s %s", short(p.pkg), secs(p.elapsed)))
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s |\n", lt.name, secs(lt.wall), len(lt.packages), strings.Join(names, ", "))
		for _, t := range lt.tests {
			t.pkg = lt.name + " " + short(t.pkg)
			all = append(all, t)
		}
	}
	slices.SortFunc(all, byTime)
	fmt.Fprintf(w, "\n| slowest tests | run and package | time |\n|---|---|---:|\n")
	for _, t := range all[:min(top, len(all))] {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.test, t.pkg, secs(t.elapsed))
	}
	return nil
}

// short is a package's path inside the module: what tells it apart.
func short(pkg string) string {
	const module = "github.com/dynastream/dynastream/"
	if s, ok := strings.CutPrefix(pkg, module); ok {
		return s
	}
	return pkg
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
