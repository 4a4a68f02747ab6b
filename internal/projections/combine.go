package projections

import (
	"slices"

	"github.com/dynastream/dynastream/internal/room"
)

// mixedStrictWeight is the weight from which, in mixed mode, a criterion is
// combined as in strict mode (docs/design.md §3).
const mixedStrictWeight = 4

// Combine derives a room's combined criteria from its members' current
// criteria under the given combine mode (docs/design.md §3). An invalid or empty
// mode counts as room.DefaultMode.
//
// Only members who set a criterion take part in its combination and in its
// weight; members who set no criterion at all are left out entirely. When
// the same user appears more than once, the entry with the greatest SK (the
// latest version) is used. The result does not depend on the order of
// members. It reports false when no member has criteria.
func Combine(mode room.Mode, members []room.MemberCriteria) (room.Combined, bool) {
	if !mode.Valid() {
		mode = room.DefaultMode
	}
	ms := withCriteria(members)
	if len(ms) == 0 {
		return room.Combined{}, false
	}

	out := room.Combined{
		Weights:     map[string]float64{},
		FromUserIDs: make([]string, 0, len(ms)),
		CombineMode: mode,
		Conflicts:   []string{},
	}
	for _, m := range ms {
		out.FromUserIDs = append(out.FromUserIDs, m.UserID)
	}

	c := &out.Criteria
	var stack [8]room.MemberCriteria // a room's members, mostly: no allocation
	buf := stack[:0]
	for _, name := range room.CriterionNames {
		setters := settersOf(buf[:0], ms, name)
		if len(setters) == 0 {
			continue
		}
		strict := mode == room.ModeStrict ||
			(mode == room.ModeMixed && anyWeightAtLeast(setters, name, mixedStrictWeight))
		out.Weights[name] = combineWeight(strict, setters, name)

		conflict := false
		switch name {
		case room.Locations:
			sets := collect(setters, func(c room.Criteria) []string { return c.Locations })
			if strict {
				c.Locations = intersect(sets)
				conflict = len(c.Locations) == 0
			} else {
				c.Locations = union(sets)
			}
		case room.Features:
			sets := collect(setters, func(c room.Criteria) []string { return c.Features })
			if strict {
				c.Features = union(sets)
			} else {
				// An empty intersection only means no feature is required.
				if f := intersect(sets); len(f) > 0 {
					c.Features = f
				}
			}
		case room.Price:
			c.PriceMin, c.PriceMax = combineRange(strict, setters,
				func(c room.Criteria) (*float64, *float64) { return c.PriceMin, c.PriceMax })
			conflict = inverted(c.PriceMin, c.PriceMax)
		case room.Rooms:
			c.RoomsMin, c.RoomsMax = combineRange(strict, setters,
				func(c room.Criteria) (*float64, *float64) { return c.RoomsMin, c.RoomsMax })
			conflict = inverted(c.RoomsMin, c.RoomsMax)
		case room.Area:
			v := *setters[0].Criteria.AreaMin
			for _, m := range setters[1:] {
				if strict {
					v = max(v, *m.Criteria.AreaMin)
				} else {
					v = min(v, *m.Criteria.AreaMin)
				}
			}
			c.AreaMin = &v
		}
		if conflict {
			out.Conflicts = append(out.Conflicts, name)
		}
	}
	return out, true
}

// withCriteria returns the members that set at least one criterion, one per
// user (the greatest SK wins), sorted by UserID. The input is not modified;
// the result may be the input itself, so callers only read it.
func withCriteria(members []room.MemberCriteria) []room.MemberCriteria {
	if oneEachByUser(members) {
		// Already one per user and in order (Snapshot's): only the
		// filter is left, and nothing to copy when all pass (callers only
		// read the result).
		if !slices.ContainsFunc(members, func(m room.MemberCriteria) bool { return !hasAny(m.Criteria) }) {
			return members
		}
		out := make([]room.MemberCriteria, 0, len(members))
		for _, m := range members {
			if hasAny(m.Criteria) {
				out = append(out, m)
			}
		}
		return out
	}
	sorted := slices.Clone(members)
	slices.SortStableFunc(sorted, func(a, b room.MemberCriteria) int {
		if a.UserID != b.UserID {
			if a.UserID < b.UserID {
				return -1
			}
			return 1
		}
		// Greatest SK first, so it is the one kept below.
		switch {
		case a.SK > b.SK:
			return -1
		case a.SK < b.SK:
			return 1
		}
		return 0
	})
	out := make([]room.MemberCriteria, 0, len(sorted))
	for i, m := range sorted {
		if i > 0 && sorted[i-1].UserID == m.UserID {
			continue
		}
		if hasAny(m.Criteria) {
			out = append(out, m)
		}
	}
	return out
}

// oneEachByUser reports whether members are in strictly increasing user
// order: sorted, each user once.
func oneEachByUser(members []room.MemberCriteria) bool {
	for i := 1; i < len(members); i++ {
		if members[i-1].UserID >= members[i].UserID {
			return false
		}
	}
	return true
}

// sets reports whether c sets the named criterion.
func sets(c room.Criteria, name string) bool {
	switch name {
	case room.Locations:
		return len(c.Locations) > 0
	case room.Price:
		return c.PriceMin != nil || c.PriceMax != nil
	case room.Rooms:
		return c.RoomsMin != nil || c.RoomsMax != nil
	case room.Area:
		return c.AreaMin != nil
	case room.Features:
		return len(c.Features) > 0
	}
	return false
}

// hasAny reports whether c sets at least one criterion.
func hasAny(c room.Criteria) bool {
	for _, name := range room.CriterionNames {
		if sets(c, name) {
			return true
		}
	}
	return false
}

// settersOf appends to out the members that set the named criterion.
func settersOf(out, ms []room.MemberCriteria, name string) []room.MemberCriteria {
	for _, m := range ms {
		if sets(m.Criteria, name) {
			out = append(out, m)
		}
	}
	return out
}

// weightOf is m's weight for the named criterion, clamped to 0..MaxWeight.
func weightOf(m room.MemberCriteria, name string) int {
	return min(max(m.Weights.Of(name), 0), room.MaxWeight)
}

func anyWeightAtLeast(ms []room.MemberCriteria, name string, w int) bool {
	for _, m := range ms {
		if weightOf(m, name) >= w {
			return true
		}
	}
	return false
}

// combineWeight is the max (strict) or the mean (all) of the members' weights.
func combineWeight(strict bool, ms []room.MemberCriteria, name string) float64 {
	if strict {
		w := 0
		for _, m := range ms {
			w = max(w, weightOf(m, name))
		}
		return float64(w)
	}
	sum := 0
	for _, m := range ms {
		sum += weightOf(m, name)
	}
	return float64(sum) / float64(len(ms))
}

// combineRange combines the members' [min, max] ranges. Strict: the tightest
// bound among those set (max of mins, min of maxes; nil when nobody set it).
// All: the loosest (min of mins, max of maxes), and a bound that some member
// left open stays open.
func combineRange(strict bool, ms []room.MemberCriteria, get func(room.Criteria) (*float64, *float64)) (lo, hi *float64) {
	var (
		loV, hiV       float64
		loSet, hiSet   bool
		loOpen, hiOpen bool
	)
	for _, m := range ms {
		mn, mx := get(m.Criteria)
		if mn == nil {
			loOpen = true
		} else if !loSet {
			loV, loSet = *mn, true
		} else if strict {
			loV = max(loV, *mn)
		} else {
			loV = min(loV, *mn)
		}
		if mx == nil {
			hiOpen = true
		} else if !hiSet {
			hiV, hiSet = *mx, true
		} else if strict {
			hiV = min(hiV, *mx)
		} else {
			hiV = max(hiV, *mx)
		}
	}
	if loSet && (strict || !loOpen) {
		lo = &loV
	}
	if hiSet && (strict || !hiOpen) {
		hi = &hiV
	}
	return lo, hi
}

func inverted(lo, hi *float64) bool {
	return lo != nil && hi != nil && *lo > *hi
}

func collect(ms []room.MemberCriteria, get func(room.Criteria) []string) [][]string {
	out := make([][]string, len(ms))
	for i, m := range ms {
		out[i] = get(m.Criteria)
	}
	return out
}

// dedup returns s sorted and without duplicates, in a new slice.
func dedup(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// union returns the sorted union of the sets.
func union(sets [][]string) []string {
	var all []string
	for _, s := range sets {
		all = append(all, s...)
	}
	return dedup(all)
}

// intersect returns the sorted intersection of the sets, an empty non-nil
// slice when it is empty.
func intersect(sets [][]string) []string {
	out := []string{}
	if len(sets) == 0 {
		return out
	}
	out = append(out, dedup(sets[0])...)
	var buf [16]string
	for _, s := range sets[1:] {
		out = mergeCommon(out, sortedSet(s, buf[:0]))
	}
	return out
}

// sortedSet is s sorted and without duplicates, in buf when it fits (s is
// not modified).
func sortedSet(s, buf []string) []string {
	out := append(buf, s...)
	slices.Sort(out)
	return slices.Compact(out)
}

// mergeCommon keeps, in place, the elements of a (sorted, no duplicates)
// that b (likewise) has too.
func mergeCommon(a, b []string) []string {
	n, j := 0, 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j < len(b) && b[j] == v {
			a[n] = v
			n++
		}
	}
	return a[:n]
}
