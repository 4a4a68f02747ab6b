package projections

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynastream/dynastream/internal/room"
)

// maxCriteria bounds room.CriterionNames (a test checks), so a pair's
// agreements fit on the stack.
const maxCriteria = 8

// tieEpsilon is the tolerance under which two mean agreements count as equal
// when the comment picks the strongest agreement and largest disagreement.
const tieEpsilon = 1e-9

// Compatibility derives a room's compatibility snapshot from its members'
// current criteria (docs/design.md §3).
//
// Members who set no criterion are left out; when the same user appears more
// than once, the entry with the greatest SK is used. A pair that shares no
// criterion, or whose weights for the shared criteria sum to 0, is left out
// of the score, of Pairs and of the comment. It reports false when fewer
// than two members have criteria or when no pair is left to score. The
// result does not depend on the order of members.
func Compatibility(members []room.MemberCriteria) (room.Compatibility, bool) {
	ms := withCriteria(members)
	if len(ms) < 2 {
		return room.Compatibility{}, false
	}

	// Each member's criteria set and weights, by criterion, once: a pair
	// looks them up instead of switching on the criterion's name again.
	type member struct {
		set [maxCriteria]bool
		w   [maxCriteria]int
	}
	prep := make([]member, len(ms))
	for i, m := range ms {
		for k, name := range room.CriterionNames {
			prep[i].set[k], prep[i].w[k] = sets(m.Criteria, name), weightOf(m, name)
		}
	}
	var (
		pairs    = make(map[string]float64, len(ms)*(len(ms)-1)/2)
		scoreSum float64
		scored   int
		agreeSum [maxCriteria]float64
		agreeN   [maxCriteria]int
	)
	for i := range ms {
		for j := i + 1; j < len(ms); j++ {
			a, b := ms[i], ms[j]
			pa, pb := &prep[i], &prep[j]
			var sumW, sumWA float64
			var agreements [maxCriteria]float64
			var both [maxCriteria]bool
			shared := 0
			for k, name := range room.CriterionNames {
				if !pa.set[k] || !pb.set[k] {
					continue
				}
				ag := agreement(name, a.Criteria, b.Criteria)
				w := float64(pa.w[k]+pb.w[k]) / 2
				sumW += w
				sumWA += w * ag
				agreements[k], both[k] = ag, true
				shared++
			}
			if shared == 0 || sumW == 0 {
				continue
			}
			score := sumWA / sumW
			pairs[a.UserID+"|"+b.UserID] = math.Round(score*1e4) / 1e4
			scoreSum += score
			scored++
			for k := range room.CriterionNames {
				if both[k] {
					agreeSum[k] += agreements[k]
					agreeN[k]++
				}
			}
		}
	}
	if scored == 0 {
		return room.Compatibility{}, false
	}

	refs := []string{}
	for _, m := range ms {
		if m.SK != "" {
			refs = append(refs, m.SK)
		}
	}
	slices.Sort(refs)
	refs = slices.Compact(refs)

	pct := int(math.Round(100 * scoreSum / float64(scored)))
	return room.Compatibility{
		ScorePercent: pct,
		Level:        Level(pct),
		Comment:      comment(&agreeSum, &agreeN),
		CriteriaRefs: refs,
		Pairs:        pairs,
	}, true
}

// Level maps a score percent to its compatibility level: below 40 low, below
// 65 medium, below 85 high, else excellent.
func Level(scorePercent int) string {
	switch {
	case scorePercent < 40:
		return room.LevelLow
	case scorePercent < 65:
		return room.LevelMedium
	case scorePercent < 85:
		return room.LevelHigh
	default:
		return room.LevelExcellent
	}
}

// comment names the criterion with the highest mean agreement and the one
// with the lowest, ties going to the first in canonical order (sum and n
// are by criterion, in room.CriterionNames' order).
func comment(sum *[maxCriteria]float64, n *[maxCriteria]int) string {
	type crit struct {
		name string
		mean float64
	}
	var buf [maxCriteria]crit
	shared := buf[:0]
	for k, name := range room.CriterionNames {
		if n[k] > 0 {
			shared = append(shared, crit{name, sum[k] / float64(n[k])})
		}
	}
	if len(shared) == 1 {
		return "Only one criterion is shared: " + shared[0].name + " (" + percent(shared[0].mean) + " agreement)."
	}
	best, worst := shared[0], shared[0]
	for _, c := range shared[1:] {
		if c.mean > best.mean+tieEpsilon {
			best = c
		}
		if c.mean < worst.mean-tieEpsilon {
			worst = c
		}
	}
	if best.mean-worst.mean <= tieEpsilon {
		names := make([]string, len(shared))
		for i, c := range shared {
			names[i] = c.name
		}
		return "Equal agreement on every shared criterion (" + strings.Join(names, ", ") + "): " + percent(best.mean) + "."
	}
	return "Strongest agreement on " + best.name + " (" + percent(best.mean) + "); largest disagreement on " +
		worst.name + " (" + percent(worst.mean) + ")."
}

func percent(x float64) string {
	return strconv.Itoa(int(math.Round(100*x))) + "%"
}

// agreement is how much two members agree on a criterion both set, in [0,1].
func agreement(name string, a, b room.Criteria) float64 {
	switch name {
	case room.Locations:
		return jaccard(a.Locations, b.Locations)
	case room.Features:
		return jaccard(a.Features, b.Features)
	case room.Price:
		return rangeAgreement(a.PriceMin, a.PriceMax, b.PriceMin, b.PriceMax)
	case room.Rooms:
		return rangeAgreement(a.RoomsMin, a.RoomsMax, b.RoomsMin, b.RoomsMax)
	case room.Area:
		return areaAgreement(*a.AreaMin, *b.AreaMin)
	}
	return 0
}

// jaccard is |A∩B| / |A∪B| (1 when both are empty), counted on the
// sorted sets without building either.
func jaccard(a, b []string) float64 {
	var bufA, bufB [16]string
	sa, sb := sortedSet(a, bufA[:0]), sortedSet(b, bufB[:0])
	common, i, j := 0, 0, 0
	for i < len(sa) && j < len(sb) {
		switch {
		case sa[i] == sb[j]:
			common++
			i++
			j++
		case sa[i] < sb[j]:
			i++
		default:
			j++
		}
	}
	all := len(sa) + len(sb) - common
	if all == 0 {
		return 1
	}
	return float64(common) / float64(all)
}

// span is a closed range; a missing lower bound is 0, a missing upper +Inf.
type span struct{ lo, hi float64 }

func spanOf(lo, hi *float64) span {
	s := span{0, math.Inf(1)}
	if lo != nil {
		s.lo = *lo
	}
	if hi != nil {
		s.hi = *hi
	}
	return s
}

// rangeAgreement is the length of the intersection over the length of the
// narrower range. A point range scores 1 inside the other range and 0
// outside; disjoint ranges (or ones touching at a single point) score 0; an
// unbounded narrower range scores 1; an inverted range accepts nothing and
// scores 0.
func rangeAgreement(aMin, aMax, bMin, bMax *float64) float64 {
	a, b := spanOf(aMin, aMax), spanOf(bMin, bMax)
	if a.lo > a.hi || b.lo > b.hi {
		return 0
	}
	inside := func(p float64, s span) float64 {
		if p >= s.lo && p <= s.hi {
			return 1
		}
		return 0
	}
	if a.lo == a.hi {
		return inside(a.lo, b)
	}
	if b.lo == b.hi {
		return inside(b.lo, a)
	}
	lo, hi := max(a.lo, b.lo), min(a.hi, b.hi)
	if lo >= hi {
		return 0
	}
	narrower := min(a.hi-a.lo, b.hi-b.lo)
	if math.IsInf(narrower, 1) {
		return 1
	}
	return min((hi-lo)/narrower, 1)
}

// areaAgreement is smaller/larger of the two minimum areas (negative values
// count as 0; both 0 gives 1).
func areaAgreement(a, b float64) float64 {
	a, b = max(a, 0), max(b, 0)
	if a == b {
		return 1
	}
	return min(a, b) / max(a, b)
}
