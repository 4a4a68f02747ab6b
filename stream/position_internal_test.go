package stream

import "testing"

// Every checkpoint value reads back as the position it was written from,
// and the value a position writes reads as that position.
func TestPositionRoundTrip(t *testing.T) {
	for _, c := range []struct {
		value string
		want  position
	}{
		{"", position{}},
		{"000000000000000000042", position{seq: "000000000000000000042"}},
		{"000000000000000000042\n{\"seq\":\"000000000000000000042\"}", position{seq: "000000000000000000042", state: `{"seq":"000000000000000000042"}`}},
		{"SHARD_END", position{end: true}},
	} {
		got := parsePosition(c.value)
		if got != c.want {
			t.Errorf("parsePosition(%q) = %+v, want %+v", c.value, got, c.want)
		}
		if s := got.String(); s != c.value {
			t.Errorf("%+v.String() = %q, want %q", got, s, c.value)
		}
	}
}
