// Package text holds the rules for text people write into the system: when
// it says nothing (Blank: white space and invisible characters alone) and
// which characters a line may not hold (Problem: control characters, and
// in a single line the bidirectional controls that make a name read
// otherwise than it is stored). The writer's validation and the chat use
// the same rules.
package text

import (
	"fmt"
	"unicode"
)

// Blank reports whether s shows nothing: it holds only white space,
// invisible format characters (zero-width space and joiners, the byte
// order mark, soft hyphens, bidirectional marks) and characters that
// render as blank (the Hangul fillers, the braille blank).
func Blank(s string) bool {
	for _, r := range s {
		if !invisible(r) {
			return false
		}
	}
	return true
}

func invisible(r rune) bool {
	switch r {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800':
		return true
	}
	return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r)
}

// bidiControl reports the characters that embed, override or isolate a
// direction (U+202A–U+202E, U+2066–U+2069): in a single-line name they
// make it display otherwise than it reads ("Trojan Source").
func bidiControl(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// Problem says why s is refused as a line (multiline false) or as text of
// several lines, "" when it is not: a control character (C0, DEL, C1;
// several lines may hold line feeds, tabs and a carriage return before a
// line feed), or in a single line a bidirectional control.
func Problem(s string, multiline bool) string {
	for i, c := range s {
		switch {
		case multiline && (c == '\n' || c == '\t'):
		case multiline && c == '\r' && i+1 < len(s) && s[i+1] == '\n':
		case c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0):
			if multiline {
				return "must not contain control characters other than line breaks and tabs"
			}
			return "must be one line without control characters"
		case !multiline && bidiControl(c):
			return fmt.Sprintf("must not contain bidirectional override or isolate characters (found U+%04X)", c)
		}
	}
	return ""
}
