package main

import (
	"bytes"
	"strings"
	"testing"
)

// The table names each log with its packages (the build failure counts
// as a failed package) and lists top-level tests, slowest first, never
// subtests.
func TestTable(t *testing.T) {
	var out bytes.Buffer
	if err := table(&out, []string{"testdata/mixed.json"}, 10); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"| mixed | ", " | 3 | ", "| TestFails | mixed example.com/jm/bad |", "| TestPasses | mixed example.com/jm/ok |"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestFails/sub") {
		t.Errorf("a subtest is listed:\n%s", got)
	}
}
