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
	return p.root.match(&r, node{kind: nRecord})
}

// match: every field and one alternative of every $or match at n. A nested
// object under a list (an L) must match within one element of it, as AWS's
// matcher has it ("array consistency").
func (o *object) match(r *events.DynamoDBEventRecord, n node) bool {
	for i := range o.fields {
		f := &o.fields[i]
		if f.sub != nil {
			if !f.sub.matchAt(r, n.child(r, f.key)) {
				return false
			}
			continue
		}
		if !f.matchLeaves(r, n) {
			return false
		}
	}
	for _, alts := range o.ors {
		one := false
		for _, a := range alts {
			if a.match(r, n) {
				one = true
				break
			}
		}
		if !one {
			return false
		}
	}
	return true
}

// matchAt matches o at n, or, when n is a list, at one of its elements.
func (o *object) matchAt(r *events.DynamoDBEventRecord, n node) bool {
	if n.kind != nList {
		return o.match(r, n)
	}
	for _, e := range n.list {
		if o.matchAt(r, node{kind: nAttr, av: e}) {
			return true
		}
	}
	return false
}

// matchLeaves: one of the rules matches one of the leaves under the
// field's key; an exists rule is judged on whether there is any leaf.
func (f *field) matchLeaves(r *events.DynamoDBEventRecord, n node) bool {
	lm := leafMatch{rules: f.rules}
	n.leaves(r, f.key, &lm)
	if lm.matched {
		return true
	}
	for i := range f.rules {
		if f.rules[i].kind == ruleExists && f.rules[i].b == lm.found {
			return true
		}
	}
	return false
}

// leafMatch judges the leaves under one key against a field's rules.
type leafMatch struct {
	rules          []rule
	found, matched bool
}

// see takes one leaf; false once a rule matched (no more are needed).
func (lm *leafMatch) see(v value) bool {
	lm.found = true
	for i := range lm.rules {
		if lm.rules[i].match(v) {
			lm.matched = true
			return false
		}
	}
	return true
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
		// As event-ruler matches: any value there but the ones named, of
		// any type (a boolean or null too; a string is never one of the
		// numbers, nor a number one of the strings).
		switch v.kind {
		case valString:
			return !slices.Contains(r.strs, v.s)
		case valNumber:
			return !slices.Contains(r.nums, v.n)
		}
		return true
	}
	if v.kind != valString {
		// The other anything-but forms name strings only: any other
		// value is none of them (event-ruler compares the value's JSON
		// text, which for a number, a boolean or null has no quotes).
		return r.kind >= ruleAnythingButPrefix
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
		return !slices.ContainsFunc(r.strs, func(p string) bool { return strings.HasPrefix(s, p) })
	case ruleAnythingButSuffix:
		return !slices.ContainsFunc(r.strs, func(p string) bool { return strings.HasSuffix(s, p) })
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
