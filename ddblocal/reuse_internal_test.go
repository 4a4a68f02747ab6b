package ddblocal

import (
	"strings"
	"testing"
)

// A DYNAMODB_ENDPOINT set for the programs does not make a test binary
// reuse a long-running DynamoDB Local; DDBLOCAL_ENDPOINT does, and says so.
func TestReuseOnlyWhenAsked(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if ep, notice := reuse(env(map[string]string{"DYNAMODB_ENDPOINT": "http://127.0.0.1:8000"})); ep != "" || notice != "" {
		t.Errorf("DYNAMODB_ENDPOINT alone: reuse %q (%q), want a fresh one", ep, notice)
	}
	ep, notice := reuse(env(map[string]string{"DDBLOCAL_ENDPOINT": "http://127.0.0.1:8001"}))
	if ep != "http://127.0.0.1:8001" || !strings.Contains(notice, "reusing the DynamoDB Local at http://127.0.0.1:8001") ||
		!strings.Contains(notice, "unset DDBLOCAL_ENDPOINT") {
		t.Errorf("DDBLOCAL_ENDPOINT: %q, %q", ep, notice)
	}
}
