package main

import (
	"slices"
	"strings"
	"testing"
	"time"
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

// -soak is one long phase at the first rate; it takes neither -step nor
// -catchup.
func TestSoakFlag(t *testing.T) {
	c, err := parseFlags([]string{"-soak", "30m", "-rates", "30,60"})
	if err != nil || len(c.rates) != 1 || c.rates[0] != 30 || c.duration != 30*time.Minute || c.soak != 30*time.Minute {
		t.Fatalf("-soak 30m -rates 30,60: %+v %v", c, err)
	}
	for _, bad := range [][]string{{"-soak", "30m", "-step"}, {"-soak", "30m", "-catchup", "60s"}, {"-soak", "-1m"}} {
		if _, err := parseFlags(bad); err == nil || !strings.Contains(err.Error(), "-soak") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// -source kinesis has the stack carry the table's changes into a Kinesis
// stream with 5% repeated and 5% reordered, drawn from -seed; it needs the
// stack loadgen starts, and an unknown source is refused; the report's
// line says what was injected.
func TestSourceFlag(t *testing.T) {
	c, err := parseFlags([]string{"-source", "kinesis", "-seed", "9"})
	if err != nil {
		t.Fatal(err)
	}
	if k := c.kinesis; k == nil || k.Seed != 9 || k.Faults.Repeat != 0.05 || k.Faults.Reorder != 0.05 {
		t.Fatalf("kinesis %+v", c.kinesis)
	}
	if c, err := parseFlags(nil); err != nil || c.kinesis != nil {
		t.Fatalf("default: %+v %v, want the DynamoDB stream", c.kinesis, err)
	}
	for _, args := range [][]string{{"-source", "sqs"}, {"-source", "kinesis", "-writer", "http://127.0.0.1:9", "-dynamodb", "http://127.0.0.1:9"},
		{"-source", "kinesis", "-rates", "50", "-catchup", "10s"}} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "-source") {
			t.Errorf("%q: %v, want an error naming -source", args, err)
		}
	}
	if got, want := (KinesisReport{Changes: 100, Repeated: 5, Reordered: 2}).line(), "kinesis: 5 duplicate and 2 reordered records injected over 100 records"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}
