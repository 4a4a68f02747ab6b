package eventbus_test

import (
	"context"
	"testing"
	"time"

	"github.com/dynastream/dynastream/eventbus"
)

func TestEntrySize(t *testing.T) {
	tests := []struct {
		name  string
		entry eventbus.Entry
		want  int
	}{
		{"empty", eventbus.Entry{}, 0},
		{"source and detail type", eventbus.Entry{Source: "abc", DetailType: "de"}, 5},
		{"time is 14 bytes", eventbus.Entry{Source: "abc", DetailType: "de", Time: time.Unix(1, 0)}, 19},
		{"detail", eventbus.Entry{Source: "s", DetailType: "d", Detail: []byte(`{"a":1}`)}, 9},
		{"UTF-8 bytes, not runes", eventbus.Entry{Source: "é", DetailType: "😀", Detail: []byte(`"ü"`)}, 2 + 4 + 4},
		{"each resource", eventbus.Entry{Source: "s", DetailType: "d", Resources: []string{"r1", "é", ""}}, 2 + 2 + 2},
		{"bus and trace header do not count", eventbus.Entry{Source: "s", DetailType: "d", TraceHeader: "Root=1-abc"}, 2},
		{"an invalid byte becomes U+FFFD (3 bytes)", eventbus.Entry{Source: "a\xffb", DetailType: "d"}, 1 + 3 + 1 + 1},
		{"a truncated sequence is one U+FFFD per byte", eventbus.Entry{Source: "s", DetailType: "d", Detail: []byte("\xe2\x82")}, 2 + 6},
		{"all together", eventbus.Entry{
			Source:     "dynastream.collab",                         // 17
			DetailType: "InviteAccepted",                            // 14
			Detail:     []byte(`{"id":"x"}`),                        // 10
			Time:       time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), // 14
			Resources:  []string{"arn:aws:events:::rule/r"},         // 23
		}, 17 + 14 + 10 + 14 + 23},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.entry.Size(); got != tt.want {
				t.Errorf("Size() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestEntrySizeMatchesWire checks Entry.Size against the size the fake
// service recomputes from what the real client put on the wire, multi-byte
// and invalid UTF-8 included.
func TestEntrySizeMatchesWire(t *testing.T) {
	f := newFakeBus(t)
	entries := []eventbus.Entry{
		{Source: "dynastream.té", DetailType: "Réaction", Detail: []byte(`{"id":"1","emoji":"😀","name":"Zoë"}`), Time: baseTime},
		{Source: "dynastream.test", DetailType: "Broken", Detail: []byte("{\"id\":\"2\",\"bad\":\"a\xffb\xe2\x82\"}")},
		{Source: "dynastream.test", DetailType: "Sep", Detail: []byte(`{"id":"3","s":"a` + "\u2028\u2029" + `\n\"q\""}`), Resources: []string{"arn:x:é", "arn:y"}},
	}
	noErrors(t, f.publisher(&sleeps{}, &logBuffer{}).Publish(context.Background(), entries))
	calls := f.allCalls()
	if len(calls) != 1 || len(calls[0]) != len(entries) {
		t.Fatalf("calls %v", calls)
	}
	for i, e := range calls[0] {
		if got, want := wireSize(e), entries[i].Size(); got != want {
			t.Errorf("entry %d: size on the wire %d, Entry.Size %d", i, got, want)
		}
	}
}
