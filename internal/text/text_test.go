package text_test

import (
	"testing"

	"github.com/dynastream/dynastream/internal/text"
)

func TestBlank(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, " \t\n": true, "\u200B": true, "\uFEFF": true, "\u200B\u200C\u200D\u2060": true, "\u00AD": true,
		"\u3164": true, "\u2800 ": true, "\u200E\u200F": true, "\u00A0\u3000": true,
		"a": false, "\u200Ba": false, "한": false, "·": false, "\u0301": false,
	} {
		if got := text.Blank(s); got != want {
			t.Errorf("Blank(%+q) = %v, want %v", s, got, want)
		}
	}
}

func TestProblem(t *testing.T) {
	for _, c := range []struct {
		s     string
		multi bool
		bad   bool
	}{
		{"Flat in Zürich", false, false},
		{"שלום עולם", false, false},           // right-to-left text itself is fine
		{"a\u200Fb", false, false},            // a right-to-left mark is fine
		{"invoice\u202Egpj.exe", false, true}, // right-to-left override
		{"a\u2066b\u2069", false, true},       // isolates
		{"a\u202Eb", true, false},             // free text may hold them
		{"a\nb", false, true},
		{"a\nb\r\n\tc", true, false},
		{"a\rb", true, true},
		{"a\u0085b", true, true},
		{"a\x7fb", false, true},
	} {
		if got := text.Problem(c.s, c.multi) != ""; got != c.bad {
			t.Errorf("Problem(%+q, %v) = %q, want bad %v", c.s, c.multi, text.Problem(c.s, c.multi), c.bad)
		}
	}
}
