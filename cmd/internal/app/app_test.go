package app

import (
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
	for in, want := range map[string]int{"": stream.DefaultMaxRetries, "0": stream.NoRetries, "-1": stream.Forever, "5": 5} {
		t.Setenv("STREAM_MAX_RETRIES", in)
		r, err := LoadRunner("t")
		if err != nil || r.MaxRetries != want {
			t.Errorf("STREAM_MAX_RETRIES=%q: %d, %v; want %d", in, r.MaxRetries, err, want)
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
	if r.PollInterval != stream.DefaultPollInterval || r.BatchSize != stream.DefaultBatchSize ||
		r.Parallelization != stream.DefaultParallelizationFactor || r.BatchWindow != stream.DefaultBatchWindow {
		t.Errorf("defaults: %+v", r)
	}
	t.Setenv("STREAM_POLL_INTERVAL", "0s")
	if _, err := LoadRunner("t"); err == nil {
		t.Error("STREAM_POLL_INTERVAL=0s accepted")
	}
}
