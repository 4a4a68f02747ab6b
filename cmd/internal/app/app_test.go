package app

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/stream"
)

func TestExposed(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": false, "localhost:8080": false, "[::1]:8080": false, "127.0.0.2:1": false,
		":8080": true, "0.0.0.0:8080": true, "[::]:8080": true, "192.168.1.10:8080": true, "example.com:80": true, "nonsense": true,
	} {
		if got := Exposed(addr); got != want {
			t.Errorf("Exposed(%q) = %v, want %v", addr, got, want)
		}
	}
}

// Each stream setting has one meaning and one default everywhere: the
// environment spells a retry limit as Lambda's MaximumRetryAttempts does
// (and the template's parameter of that name), with the library's
// defaults.
func TestRunnerSettingsMeanWhatLambdaAndTheLibraryMean(t *testing.T) {
	for in, want := range map[string]int{"": stream.DefaultMaxRetries, "0": 0, "-1": stream.Forever, "5": 5} {
		t.Setenv("STREAM_MAX_RETRIES", in)
		r, err := LoadRunner("t")
		if err != nil || r.Stream.MaxRetries == nil || *r.Stream.MaxRetries != want {
			t.Errorf("STREAM_MAX_RETRIES=%q: %v, %v; want %d", in, r.Stream.MaxRetries, err, want)
		}
	}
	for _, bad := range []string{"-2", "10001", "x"} {
		t.Setenv("STREAM_MAX_RETRIES", bad)
		if _, err := LoadRunner("t"); err == nil || !strings.Contains(err.Error(), "STREAM_MAX_RETRIES") {
			t.Errorf("STREAM_MAX_RETRIES=%q: %v", bad, err)
		}
	}
	t.Setenv("STREAM_MAX_RETRIES", "")
	r, err := LoadRunner("t")
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Stream; c.PollInterval != stream.DefaultPollInterval || c.BatchSize != stream.DefaultBatchSize ||
		c.ParallelizationFactor != DefaultParallelizationFactor || c.BatchWindow != stream.DefaultBatchWindow || c.NoBisect {
		t.Errorf("defaults: %+v", r)
	}
	// the library's ranges, named by the variable
	for name, bad := range map[string]string{"STREAM_POLL_INTERVAL": "0s", "STREAM_BATCH_SIZE": "10001", "STREAM_PARALLELIZATION_FACTOR": "0", "STREAM_STUCK_AFTER": "-5s"} {
		t.Setenv(name, bad)
		if _, err := LoadRunner("t"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, bad, err)
		}
		t.Setenv(name, "")
	}
	t.Setenv("STREAM_BISECT", "false")
	if r, err := LoadRunner("t"); err != nil || !r.Stream.NoBisect {
		t.Errorf("STREAM_BISECT=false: %+v, %v", r.Stream, err)
	}
}

// The template's ParallelizationFactor parameter defaults to the programs'
// DefaultParallelizationFactor, so the two modes run alike.
func TestTemplateParallelizationFactor(t *testing.T) {
	raw, err := os.ReadFile("../../../infra/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  ParallelizationFactor:\n    Type: Number\n    Default: (\d+)$`).FindSubmatch(raw)
	if m == nil || string(m[1]) != strconv.Itoa(DefaultParallelizationFactor) {
		t.Errorf("the template's ParallelizationFactor default: %q, want %d", m, DefaultParallelizationFactor)
	}
}
