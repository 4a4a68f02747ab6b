package main

import (
	"slices"
	"strings"
	"testing"
)

// -env KEY=VALUE goes to every program; PROGRAM:KEY=VALUE to that one; a
// value may hold colons (a URL); an unknown program is refused.
func TestEnvFlag(t *testing.T) {
	c, err := parseFlags([]string{"-env", "STREAM_POLL_INTERVAL=50ms", "-env", "notifier:STREAM_PARALLELIZATION_FACTOR=4",
		"-env", "SES_ENDPOINT=http://127.0.0.1:9", "-env", "writer:IDEMPOTENCY_HOLD=2s", "-env", "notifier:MAIL_HOLD=3s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"STREAM_POLL_INTERVAL=50ms", "SES_ENDPOINT=http://127.0.0.1:9"}; !slices.Equal(c.env, want) {
		t.Errorf("env %q, want %q", c.env, want)
	}
	if got, want := c.programEnv["notifier"], []string{"STREAM_PARALLELIZATION_FACTOR=4", "MAIL_HOLD=3s"}; !slices.Equal(got, want) {
		t.Errorf("notifier's env %q, want %q", got, want)
	}
	if got, want := c.programEnv["writer"], []string{"IDEMPOTENCY_HOLD=2s"}; !slices.Equal(got, want) {
		t.Errorf("writer's env %q, want %q", got, want)
	}
	for _, bad := range []string{"loader:X=1", "notifier:X"} {
		if _, err := parseFlags([]string{"-env", bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("-env %s: err %v, want one naming it", bad, err)
		}
	}
}

// -mix rooms-comments leaves out every kind but the rooms' and the
// comments'; -skip adds to it; an unknown mix is refused.
func TestMixFlag(t *testing.T) {
	c, err := parseFlags([]string{"-mix", "rooms-comments", "-skip", "unreact"})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, m := range mix {
		if !c.skip[m.name] {
			kept = append(kept, m.name)
		}
	}
	if want := []string{"criteria", "listing", "status", "join", "leave", "comment", "react"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if _, err := parseFlags([]string{"-mix", "everything"}); err == nil || !strings.Contains(err.Error(), "rooms-comments") {
		t.Errorf("an unknown mix: %v", err)
	}
}
