//go:build !lambda.norpc

package app

import "testing"

// The resident set's split comes from /proc/<pid>/status (proc(5)); a line
// that is missing or not in kB reads as 0, never as a wrong figure.
func TestStatusKB(t *testing.T) {
	status := "Name:\tprojector\nVmRSS:\t   33000 kB\nRssAnon:\t   12345 kB\nRssFile:\t20000 kB\nRssShmem:\t       0 kB\nThreads:\t9\n"
	for field, want := range map[string]uint64{
		"RssAnon:": 12345 << 10, "RssFile:": 20000 << 10, "RssShmem:": 0, "Threads:": 0, "Missing:": 0,
	} {
		if got := statusKB([]byte(status), field); got != want {
			t.Errorf("%s: %d, want %d", field, got, want)
		}
	}
	for _, bad := range []string{"RssAnon:\n", "RssAnon:\t12 MB\n", "RssAnon:\t-1 kB\n", "RssAnon:\t99999999999999999999 kB\n", "RssAnon:\t1 2 kB\n"} {
		if got := statusKB([]byte(bad), "RssAnon:"); got != 0 {
			t.Errorf("%q: %d, want 0", bad, got)
		}
	}
}
