package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// What filter prints of a real go test -json run (testdata/mixed.json: a
// build failure, a failing test with a failing and a passing subtest, and
// passing and skipped tests) is what go test printed without -json for
// the same packages (testdata/mixed.plain.txt), but for the last FAIL
// line, which go test prints after the packages and -json does not carry
// (run returns go test's exit code instead), and the packages' times.
func TestFilterPrintsWhatGoTestPrints(t *testing.T) {
	in, err := os.ReadFile("testdata/mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/mixed.plain.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := filter(bytes.NewReader(in), &got); err != nil {
		t.Fatal(err)
	}
	times := regexp.MustCompile(`\t[0-9.]+s\n`)
	norm := func(b []byte) string { return string(times.ReplaceAll(b, []byte("\tTIME\n"))) }
	wantText := norm(bytes.TrimSuffix(want, []byte("FAIL\n")))
	if norm(got.Bytes()) != wantText {
		t.Errorf("filter printed:\n%s\nwant what go test printed:\n%s", got.String(), wantText)
	}
}

// A line that is not an event (go test -json prints none, but a test
// binary's stray write could reach it) is printed, not dropped.
func TestFilterKeepsOtherLines(t *testing.T) {
	var got bytes.Buffer
	if err := filter(bytes.NewReader([]byte("not json\n")), &got); err != nil || got.String() != "not json\n" {
		t.Fatalf("%q %v", got.String(), err)
	}
}

// Tests that never end — a timeout, a panic in a goroutine of their own —
// fail their package without a fail event of their own: what they said
// is printed with the package's FAIL, not dropped (testdata/crash.json,
// a real go test -json run of both; testdata/crash.plain.txt is what
// go test printed without -json).
func TestFilterPrintsTestsThatNeverEnded(t *testing.T) {
	in, err := os.ReadFile("testdata/crash.json")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := filter(bytes.NewReader(in), &got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"panic: a handler goroutine panicked", "panic: test timed out after 2s", "TestHangs", "FAIL\texample.com/jm2/gopanic", "FAIL\texample.com/jm2/hang"} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("filter printed no %q:\n%s", want, got.String())
		}
	}
}
