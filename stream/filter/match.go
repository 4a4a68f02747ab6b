package filter

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Match reports whether the record matches the pattern. The zero Pattern
// matches nothing.
func (p Pattern) Match(r events.DynamoDBEventRecord) bool {
	if p.root == nil {
		return false
	}
	path := make([]string, 0, 8)
	return p.root.match(&r, path)
}

func (o *object) match(r *events.DynamoDBEventRecord, path []string) bool {
	for i := range o.fields {
		f := &o.fields[i]
		p := append(path, f.key)
		if f.sub != nil {
			if !f.sub.match(r, p) {
				return false
			}
			continue
		}
		if !f.matchLeaves(r, p) {
			return false
		}
	}
	for _, alts := range o.ors {
		if !slices.ContainsFunc(alts, func(a *object) bool { return a.match(r, path) }) {
			return false
		}
	}
	return true
}

// matchLeaves: one of the rules matches one of the leaves at path; an
// exists rule is judged on whether there is any leaf.
func (f *field) matchLeaves(r *events.DynamoDBEventRecord, path []string) bool {
	found, matched := false, false
	leaves(r, path, func(v value) bool {
		found = true
		for i := range f.rules {
			if f.rules[i].match(v) {
				matched = true
				return false
			}
		}
		return true
	})
	if matched {
		return true
	}
	for i := range f.rules {
		if f.rules[i].kind == ruleExists && f.rules[i].b == found {
			return true
		}
	}
	return false
}

// match reports whether the rule matches one leaf value (exists rules are
// judged by matchLeaves).
func (r *rule) match(v value) bool {
	switch r.kind {
	case ruleString:
		return v.kind == valString && v.s == r.s
	case ruleNumber:
		return v.kind == valNumber && v.n == r.n
	case ruleBool:
		return v.kind == valBool && v.b == r.b
	case ruleNull:
		return v.kind == valNull
	case ruleExists:
		return r.b
	case ruleNumeric:
		return v.kind == valNumber && r.inRange(v.n)
	case ruleAnythingBut:
		switch v.kind {
		case valString:
			return !slices.Contains(r.strs, v.s)
		case valNumber:
			return !slices.Contains(r.nums, v.n)
		}
		return false
	}
	if v.kind != valString {
		return false
	}
	s := v.s
	switch r.kind {
	case rulePrefix:
		return strings.HasPrefix(s, r.s)
	case rulePrefixFold:
		return hasPrefixFold(s, r.s)
	case ruleSuffix:
		return strings.HasSuffix(s, r.s)
	case ruleSuffixFold:
		return hasSuffixFold(s, r.s)
	case ruleEqualsFold:
		return strings.EqualFold(s, r.s)
	case ruleWildcard:
		return wildcard(r.s, s)
	case ruleAnythingButPrefix:
		return !strings.HasPrefix(s, r.s)
	case ruleAnythingButPrefixFold:
		return !hasPrefixFold(s, r.s)
	case ruleAnythingButSuffix:
		return !strings.HasSuffix(s, r.s)
	case ruleAnythingButSuffixFold:
		return !hasSuffixFold(s, r.s)
	case ruleAnythingButFold:
		return !slices.ContainsFunc(r.strs, func(x string) bool { return strings.EqualFold(s, x) })
	case ruleAnythingButWildcard:
		return !slices.ContainsFunc(r.strs, func(w string) bool { return wildcard(w, s) })
	}
	return false
}

func (r *rule) inRange(n float64) bool {
	if math.IsNaN(n) || math.Abs(n) > MaxNumeric {
		return false
	}
	if r.hasLo && (n < r.lo || (n == r.lo && !r.loIncl)) {
		return false
	}
	if r.hasHi && (n > r.hi || (n == r.hi && !r.hiIncl)) {
		return false
	}
	return true
}

// hasPrefixFold: s starts with p, rune by rune under Unicode case folding.
func hasPrefixFold(s, p string) bool {
	for p != "" {
		if s == "" {
			return false
		}
		a, n := utf8.DecodeRuneInString(s)
		b, m := utf8.DecodeRuneInString(p)
		if !strings.EqualFold(s[:n], p[:m]) && a != b {
			return false
		}
		s, p = s[n:], p[m:]
	}
	return true
}

// hasSuffixFold: s ends with p, rune by rune under Unicode case folding.
func hasSuffixFold(s, p string) bool {
	for p != "" {
		if s == "" {
			return false
		}
		a, n := utf8.DecodeLastRuneInString(s)
		b, m := utf8.DecodeLastRuneInString(p)
		if !strings.EqualFold(s[len(s)-n:], p[len(p)-m:]) && a != b {
			return false
		}
		s, p = s[:len(s)-n], p[:len(p)-m]
	}
	return true
}

// wildcard matches s against a wildcard pattern: * is any run of
// characters (none too), \* a star and \\ a backslash.
func wildcard(w, s string) bool {
	// The classic greedy algorithm: remember the last star and how much of
	// s it has taken; on a mismatch let it take one more byte.
	star, taken := -1, 0
	i, j := 0, 0
	for j < len(s) {
		if i < len(w) {
			switch {
			case w[i] == '*':
				star, taken = i, j
				i++
				continue
			case w[i] == '\\' && i+1 < len(w) && w[i+1] == s[j]:
				i, j = i+2, j+1
				continue
			case w[i] != '\\' && w[i] == s[j]:
				i, j = i+1, j+1
				continue
			}
		}
		if star < 0 {
			return false
		}
		taken++
		i, j = star+1, taken
	}
	for i < len(w) && w[i] == '*' {
		i++
	}
	return i == len(w)
}
