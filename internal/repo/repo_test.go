package repo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/stream"
)

// root is the repository's root, from this package's folder.
const root = "../.."

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Makefile installs the DynamoDB Local that ddblocal names in its hint.
func TestDynamoDBLocalVersionMatchesTheMakefile(t *testing.T) {
	if !strings.Contains(read(t, "Makefile"), "DDB_LOCAL_VERSION := "+ddblocal.Version+"\n") {
		t.Fatalf("the Makefile's DDB_LOCAL_VERSION is not %s", ddblocal.Version)
	}
}

// stream's Lambda payload fixtures are attr's, copied so that each module's
// tests read only its own files: the copies stay the same.
func TestCopiedFixturesAreTheSame(t *testing.T) {
	src, err := filepath.Glob(filepath.Join(root, "attr/testdata/lambda/*.json"))
	if err != nil || len(src) == 0 {
		t.Fatalf("attr's fixtures: %v", err)
	}
	copies, _ := filepath.Glob(filepath.Join(root, "stream/testdata/lambda/*.json"))
	if len(copies) != len(src) {
		t.Fatalf("stream/testdata/lambda has %d fixtures, attr/testdata/lambda %d", len(copies), len(src))
	}
	for _, p := range src {
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(root, "stream/testdata/lambda", filepath.Base(p)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("stream/testdata/lambda/%s is not attr's (%v): copy it again", filepath.Base(p), err)
		}
	}
}

// readmeBlock is the code between "// readme: begin" and "// readme: end"
// in a Go file, one tab less indented.
func readmeBlock(t *testing.T, src string) string {
	t.Helper()
	_, rest, ok := strings.Cut(src, "// readme: begin\n")
	block, _, ok2 := strings.Cut(rest, "\t// readme: end\n")
	if !ok || !ok2 {
		t.Fatal("no readme markers")
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(block, "\n") {
		b.WriteString(strings.TrimPrefix(line, "\t"))
	}
	return b.String()
}

// The library guide's once-only example is the code of a test that runs
// it under crash schedules (replay's ExampleCheck_onceOnly).
func TestOnceOnlyExampleIsATest(t *testing.T) {
	block := readmeBlock(t, read(t, "replay/once_test.go"))
	if !strings.Contains(read(t, "docs/library.md"), "```go\n"+block+"```\n") {
		t.Fatalf("docs/library.md does not show replay/once_test.go's example as it is:\n%s", block)
	}
}

// The one-consumer template's filter is stream.LoopGuard("PK"), the value
// its consumer's runner and replay tests apply, and stream.LoopGuard's
// documentation shows those patterns.
func TestExampleTemplateFiltersWithLoopGuard(t *testing.T) {
	var doc, tmpl []string
	for _, line := range strings.Split(read(t, "stream/skip.go"), "\n") {
		if p, ok := strings.CutPrefix(line, "//\t{\"dynamodb\""); ok {
			doc = append(doc, `{"dynamodb"`+p)
		}
	}
	for _, line := range strings.Split(read(t, "examples/orders/template.yaml"), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "- Pattern: '"); ok {
			tmpl = append(tmpl, strings.TrimSuffix(p, "'"))
		}
	}
	want := stream.LoopGuard("PK").Patterns()
	if strings.Join(want, "\n") != strings.Join(tmpl, "\n") {
		t.Errorf("examples/orders/template.yaml filters\n%s\nstream.LoopGuard(\"PK\") is\n%s", strings.Join(tmpl, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(want, "\n") != strings.Join(doc, "\n") {
		t.Errorf("stream/skip.go documents\n%s\nstream.LoopGuard(\"PK\") is\n%s", strings.Join(doc, "\n"), strings.Join(want, "\n"))
	}
}

// Every test the Makefile leaves out of make test (LONG_TESTS) is a test
// of one of LONG_PKGS, where make test-long runs it, and docs/testing.md
// names it with its time: a renamed test would otherwise leave make test
// and make test-long both, and nobody would notice.
func TestLongTestsExistAndAreDocumented(t *testing.T) {
	mk := read(t, "Makefile")
	value := func(name string) string {
		t.Helper()
		for _, line := range strings.Split(mk, "\n") {
			if v, ok := strings.CutPrefix(line, name); ok {
				if v, ok := strings.CutPrefix(strings.TrimLeft(v, " "), ":="); ok {
					return strings.TrimSpace(v)
				}
			}
		}
		t.Fatalf("no %s in the Makefile", name)
		return ""
	}
	var sources strings.Builder
	for _, pkg := range strings.Fields(value("LONG_PKGS")) {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("LONG_PKGS: %s has no tests (%v)", pkg, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources.Write(b)
		}
	}
	doc := read(t, "docs/testing.md")
	for _, name := range strings.Split(value("LONG_TESTS"), "|") {
		if !strings.Contains(sources.String(), "\nfunc "+name+"(t *testing.T) {") && !strings.Contains(sources.String(), "\nfunc "+name+"(f *testing.F) {") {
			t.Errorf("LONG_TESTS names %s, which no package of LONG_PKGS has", name)
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/testing.md does not name %s, which make test leaves to make test-long", name)
		}
	}
}
