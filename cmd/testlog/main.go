// Command testlog runs go test with -json, prints what go test prints
// without -v (each package's line, and the output of the tests that
// failed, whole), keeps every event in a log file, and tables where the
// time went from such logs. make test runs its go test commands through
// it, so that every run leaves the figures docs/testing.md is made from.
//
// Usage:
//
//	testlog run -log FILE [-- go test flags and packages]
//	testlog table [-top N] FILE...
//
// run exits with go test's status. table prints, in Markdown, each log's
// wall time and its packages' (the time go test reports for each), then
// the N slowest top-level tests: a parallel test's time includes its
// wait for the others, so the package times are the ones that add up.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		fs := flag.NewFlagSet("run", flag.ExitOnError)
		log := fs.String("log", "", "the file the go test -json events are written to (its folder is made)")
		_ = fs.Parse(args)
		if *log == "" {
			fmt.Fprintln(os.Stderr, "testlog run: -log is required")
			os.Exit(2)
		}
		var code int
		code, err = run(*log, fs.Args(), os.Stdout, os.Stderr)
		if err == nil {
			os.Exit(code)
		}
	case "table":
		fs := flag.NewFlagSet("table", flag.ExitOnError)
		top := fs.Int("top", 25, "how many of the slowest tests to list")
		_ = fs.Parse(args)
		if fs.NArg() == 0 {
			fmt.Fprintln(os.Stderr, "testlog table: name at least one log")
			os.Exit(2)
		}
		err = table(os.Stdout, fs.Args(), *top)
	default:
		usage(os.Stderr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: testlog run -log FILE [-- go test args]\n       testlog table [-top N] FILE...")
}
