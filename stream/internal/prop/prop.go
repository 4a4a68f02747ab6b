// Package prop runs property tests: a property is checked against many
// cases drawn at random, and a failing case is reported with its seed and
// every value drawn for it, so that -prop.seed reproduces it. It covers the
// part of pgregory.net/rapid's API this module's tests use, without the
// dependency (a library module's test requirements are listed in every
// user's module graph) and without rapid's shrinking.
package prop

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var (
	checks = flag.Int("prop.checks", 100, "prop: cases per property")
	seed   = flag.Uint64("prop.seed", 0, "prop: the seed of the first case (0: from the clock; a failure prints it)")
)

// SetChecks sets the cases per property for the rest of t, unless
// -prop.checks was given: for properties whose cases are slow. It sets a
// package variable: not for tests that run in parallel.
func SetChecks(t testing.TB, n int) {
	if f := flag.Lookup("prop.checks"); f != nil && f.Value.String() != f.DefValue {
		return
	}
	old := *checks
	*checks = n
	t.Cleanup(func() { *checks = old })
}

// T is one case: the test's T and the case's random source.
type T struct {
	*testing.T
	rng   *rand.Rand
	draws []string
}

// Check checks f against -prop.checks cases; the first failing case stops
// the test, reported with its seed and draws.
func Check(t *testing.T, f func(*T)) {
	t.Helper()
	if t.Failed() { // a case's failure is told apart from an earlier one
		t.Fatal("prop: the test had failed before the property was checked")
	}
	first := *seed
	if first == 0 {
		first = uint64(time.Now().UnixNano())
	}
	for i := range *checks {
		s := first + uint64(i)
		c := &T{T: t, rng: rand.New(rand.NewPCG(s, 0x9e3779b97f4a7c15))}
		func() {
			defer func() {
				if t.Failed() {
					t.Logf("prop: case %d failed; reproduce it with -prop.seed=%d -prop.checks=1; drawn: %s", i+1, s, strings.Join(c.draws, ", "))
				}
			}()
			f(c)
		}()
		if t.Failed() {
			return
		}
	}
}

// Generator draws values of one kind.
type Generator[V any] interface {
	Draw(t *T, label string) V
}

type gen[V any] func(*T) V

func (g gen[V]) Draw(t *T, label string) V {
	v := g(t)
	t.draws = append(t.draws, fmt.Sprintf("%s=%v", label, v))
	return v
}

// IntRange draws an int from min to max, both included.
func IntRange(min, max int) Generator[int] {
	return gen[int](func(t *T) int { return min + t.rng.IntN(max-min+1) })
}

// Bool draws true or false.
func Bool() Generator[bool] { return gen[bool](func(t *T) bool { return t.rng.IntN(2) == 0 }) }

// SampledFrom draws one of vs.
func SampledFrom[V any](vs []V) Generator[V] {
	return gen[V](func(t *T) V { return vs[t.rng.IntN(len(vs))] })
}

// Just draws v.
func Just[V any](v V) Generator[V] { return gen[V](func(*T) V { return v }) }

// OneOf draws from one of gs.
func OneOf[V any](gs ...Generator[V]) Generator[V] {
	return gen[V](func(t *T) V { return gs[t.rng.IntN(len(gs))].Draw(t, "one of") })
}

// SliceOfN draws a slice of min to max elements of g.
func SliceOfN[V any](g Generator[V], min, max int) Generator[[]V] {
	return gen[[]V](func(t *T) []V {
		out := make([]V, min+t.rng.IntN(max-min+1))
		for i := range out {
			out[i] = g.Draw(t, "element")
		}
		return out
	})
}
