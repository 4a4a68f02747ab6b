package stream_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

func recs(seqs ...int) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, len(seqs))
	for i, s := range seqs {
		out[i].Change.SequenceNumber = fmt.Sprint(s)
	}
	return out
}

func seqList(rs []events.DynamoDBEventRecord) string {
	var b []string
	for _, r := range rs {
		b = append(b, r.Change.SequenceNumber)
	}
	return "[" + strings.Join(b, " ") + "]"
}

// The one policy the Runner follows and the replay kit replays, case by
// case.
func TestPolicy(t *testing.T) {
	five := recs(1, 2, 3, 4, 5)
	cases := []struct {
		name     string
		pol      stream.Policy
		p        stream.Pending
		failedAt int
		counted  bool
		// finished, dead-lettered, and the pending batches (with their
		// failures) that follow
		want string
	}{
		{"success", stream.Policy{MaxRetries: 3}, stream.Pending{Records: five}, -1, true, "[1 2 3 4 5] [] "},
		{"whole batch failed: retried", stream.Policy{MaxRetries: 3}, stream.Pending{Records: five}, 0, true, "[] [] [1 2 3 4 5]/1"},
		{"failed at the third: the first two done", stream.Policy{MaxRetries: 3}, stream.Pending{Records: five, Failures: 1}, 2, true, "[1 2] [] [3 4 5]/2"},
		{"past the retries: dead letters", stream.Policy{MaxRetries: 3}, stream.Pending{Records: five, Failures: 3}, 2, true, "[1 2] [3 4 5] "},
		{"no retries", stream.Policy{MaxRetries: 0}, stream.Pending{Records: five}, 0, true, "[] [1 2 3 4 5] "},
		{"forever", stream.Policy{MaxRetries: stream.Forever}, stream.Pending{Records: five, Failures: 1000}, 4, true, "[1 2 3 4] [] [5]/1001"},
		{"not counted: no retry used", stream.Policy{MaxRetries: 0}, stream.Pending{Records: five}, 1, false, "[1] [] [2 3 4 5]/0"},
		{"bisect: halves, counts from zero", stream.Policy{MaxRetries: 3, Bisect: true}, stream.Pending{Records: five, Failures: 2}, 0, true, "[] [] [1 2]/0 [3 4 5]/0"},
		{"bisect from the failure", stream.Policy{MaxRetries: 3, Bisect: true}, stream.Pending{Records: five}, 3, true, "[1 2 3] [] [4]/0 [5]/0"},
		{"bisect down to one record, then retries", stream.Policy{MaxRetries: 1, Bisect: true}, stream.Pending{Records: recs(7), Failures: 1}, 0, true, "[] [7] "},
		{"one record left of a batch: retried as it is", stream.Policy{MaxRetries: 1, Bisect: true}, stream.Pending{Records: five}, 4, true, "[1 2 3 4] [] [5]/1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fin, dead, next := c.pol.After(c.p, c.failedAt, c.counted)
			got := seqList(fin) + " " + seqList(dead) + " "
			var ns []string
			for _, n := range next {
				ns = append(ns, fmt.Sprintf("%s/%d", seqList(n.Records), n.Failures))
			}
			got += strings.Join(ns, " ")
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// A Config's policy is its settings after the defaults.
func TestConfigPolicy(t *testing.T) {
	if p := (stream.Config{}).Policy(); p.MaxRetries != stream.DefaultMaxRetries || !p.Bisect {
		t.Errorf("zero Config: %+v", p)
	}
	if p := (stream.Config{MaxRetries: stream.Retries(stream.Forever), NoBisect: true}).Policy(); p.MaxRetries != -1 || p.Bisect {
		t.Errorf("forever, no bisect: %+v", p)
	}
}
