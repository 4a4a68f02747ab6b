package projections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynastream/dynastream/internal/room"
)

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

// permutations returns every ordering of ms (n! of them; keep n small).
func permutations(ms []room.MemberCriteria) [][]room.MemberCriteria {
	if len(ms) <= 1 {
		return [][]room.MemberCriteria{slices.Clone(ms)}
	}
	var out [][]room.MemberCriteria
	for i := range ms {
		rest := slices.Concat(ms[:i:i], ms[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]room.MemberCriteria{ms[i]}, p...))
		}
	}
	return out
}

var approx = cmpopts.EquateApprox(0, 1e-12)

// Two members used by several cases.
var (
	alice = room.MemberCriteria{
		UserID: "alice", SK: "CRITERIA#alice#2024-01-01T00:00:00Z",
		Criteria: room.Criteria{
			Locations: []string{"paris", "lyon"},
			PriceMin:  fp(500), PriceMax: fp(1200),
			RoomsMin: fp(2),
			AreaMin:  fp(40),
			Features: []string{"balcony"},
		},
		Weights: room.Weights{Locations: ip(3)},
	}
	bob = room.MemberCriteria{
		UserID: "bob", SK: "CRITERIA#bob#2024-01-02T00:00:00Z",
		Criteria: room.Criteria{
			Locations: []string{"lyon", "nice", "paris"},
			PriceMin:  fp(700), PriceMax: fp(1000),
			RoomsMax: fp(4),
			AreaMin:  fp(50),
			Features: []string{"parking", "balcony"},
		},
		Weights: room.Weights{Locations: ip(5), Price: ip(2)},
	}
)

func mc(user string, c room.Criteria, w room.Weights) room.MemberCriteria {
	return room.MemberCriteria{UserID: user, SK: "CRITERIA#" + user + "#1", Criteria: c, Weights: w}
}

func TestCombine(t *testing.T) {
	tests := []struct {
		name    string
		mode    room.Mode
		members []room.MemberCriteria
		want    room.Combined
		wantOK  bool
	}{
		{
			name: "no members",
			mode: room.ModeStrict,
		},
		{
			name: "members without criteria",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{}, room.Weights{Price: ip(5)}),
				mc("b", room.Criteria{Locations: []string{}}, room.Weights{}),
			},
		},
		{
			// Each criterion as the one member set it; sets sorted and
			// deduplicated; weight 0 kept as 0, unset as 1.
			name: "single member",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{mc("a", room.Criteria{
				Locations: []string{"b", "a", "b"},
				PriceMin:  fp(1), PriceMax: fp(2),
				Features: []string{"z", "y"},
			}, room.Weights{Features: ip(0)})},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{"a", "b"},
					PriceMin:  fp(1), PriceMax: fp(2),
					Features: []string{"y", "z"},
				},
				Weights:     map[string]float64{"locations": 1, "price": 1, "features": 0},
				FromUserIDs: []string{"a"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// locations {lyon,paris} ∩ {lyon,nice,paris}; price [max(500,700),
			// min(1200,1000)]; rooms: alice sets only the min, bob only the
			// max; area max(40,50); features ∪; weights max.
			name:    "strict",
			mode:    room.ModeStrict,
			members: []room.MemberCriteria{alice, bob},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{"lyon", "paris"},
					PriceMin:  fp(700), PriceMax: fp(1000),
					RoomsMin: fp(2), RoomsMax: fp(4),
					AreaMin:  fp(50),
					Features: []string{"balcony", "parking"},
				},
				Weights:     map[string]float64{"locations": 5, "price": 2, "rooms": 1, "area": 1, "features": 1},
				FromUserIDs: []string{"alice", "bob"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// locations ∪; price [min(500,700), max(1200,1000)]; rooms: bob
			// left the min open and alice the max, so both stay open; area
			// min; features ∩; weights mean: (3+5)/2, (1+2)/2.
			name:    "all",
			mode:    room.ModeAll,
			members: []room.MemberCriteria{alice, bob},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{"lyon", "nice", "paris"},
					PriceMin:  fp(500), PriceMax: fp(1200),
					AreaMin:  fp(40),
					Features: []string{"balcony"},
				},
				Weights:     map[string]float64{"locations": 4, "price": 1.5, "rooms": 1, "area": 1, "features": 1},
				FromUserIDs: []string{"alice", "bob"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// bob weighs locations 5 ≥ 4: locations strict (∩, weight max 5);
			// every other criterion as in all.
			name:    "mixed, one criterion weighted 4 or more",
			mode:    room.ModeMixed,
			members: []room.MemberCriteria{alice, bob},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{"lyon", "paris"},
					PriceMin:  fp(500), PriceMax: fp(1200),
					AreaMin:  fp(40),
					Features: []string{"balcony"},
				},
				Weights:     map[string]float64{"locations": 5, "price": 1.5, "rooms": 1, "area": 1, "features": 1},
				FromUserIDs: []string{"alice", "bob"},
				CombineMode: room.ModeMixed,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			name:    "empty mode is the default (mixed)",
			mode:    "",
			members: []room.MemberCriteria{alice, bob},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{"lyon", "paris"},
					PriceMin:  fp(500), PriceMax: fp(1200),
					AreaMin:  fp(40),
					Features: []string{"balcony"},
				},
				Weights:     map[string]float64{"locations": 5, "price": 1.5, "rooms": 1, "area": 1, "features": 1},
				FromUserIDs: []string{"alice", "bob"},
				CombineMode: room.ModeMixed,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// weight exactly 4 is enough to make a criterion strict.
			name: "invalid mode is the default; weight 4 counts",
			mode: "bogus",
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(100), PriceMax: fp(200)}, room.Weights{Price: ip(4)}),
				mc("b", room.Criteria{PriceMin: fp(150), PriceMax: fp(300)}, room.Weights{Price: ip(3)}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{PriceMin: fp(150), PriceMax: fp(200)},
				Weights:     map[string]float64{"price": 4},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeMixed,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// a: [500,∞)  b: [0..900]  c: [600,1000]
			// strict: [max(500,600), min(900,1000)]
			name: "partial bounds, strict",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(500)}, room.Weights{}),
				mc("b", room.Criteria{PriceMax: fp(900)}, room.Weights{}),
				mc("c", room.Criteria{PriceMin: fp(600), PriceMax: fp(1000)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{PriceMin: fp(600), PriceMax: fp(900)},
				Weights:     map[string]float64{"price": 1},
				FromUserIDs: []string{"a", "b", "c"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// b leaves the min open and a the max: both stay open.
			name: "partial bounds, all, both open",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(500)}, room.Weights{}),
				mc("b", room.Criteria{PriceMax: fp(900)}, room.Weights{}),
				mc("c", room.Criteria{PriceMin: fp(600), PriceMax: fp(1000)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{},
				Weights:     map[string]float64{"price": 1},
				FromUserIDs: []string{"a", "b", "c"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// rooms: a [2,4], b [3,∞): min(2,3), max open.
			name: "partial bounds, all, one open",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{RoomsMin: fp(2), RoomsMax: fp(4)}, room.Weights{}),
				mc("b", room.Criteria{RoomsMin: fp(3)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{RoomsMin: fp(2)},
				Weights:     map[string]float64{"rooms": 1},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// rooms strict: a [2,4], b [3,∞): [max(2,3), 4].
			name: "partial bounds, strict, one open",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{RoomsMin: fp(2), RoomsMax: fp(4)}, room.Weights{}),
				mc("b", room.Criteria{RoomsMin: fp(3)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{RoomsMin: fp(3), RoomsMax: fp(4)},
				Weights:     map[string]float64{"rooms": 1},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// locations {paris} ∩ {lyon} = ∅; price [max(1000,500),
			// min(1500,800)] = [1000,800]; rooms [3, 2]. All kept and listed.
			name: "strict conflicts",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{Locations: []string{"paris"}, PriceMin: fp(1000), PriceMax: fp(1500), RoomsMin: fp(3)}, room.Weights{}),
				mc("b", room.Criteria{Locations: []string{"lyon"}, PriceMin: fp(500), PriceMax: fp(800), RoomsMax: fp(2)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{},
					PriceMin:  fp(1000), PriceMax: fp(800),
					RoomsMin: fp(3), RoomsMax: fp(2),
				},
				Weights:     map[string]float64{"locations": 1, "price": 1, "rooms": 1},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{"locations", "price", "rooms"},
			},
			wantOK: true,
		},
		{
			// Same members, mixed, a weighs locations 4: locations strict (∅,
			// conflict); price all [500,1500]; rooms all, both bounds open.
			name: "mixed conflict only on the strict criterion",
			mode: room.ModeMixed,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{Locations: []string{"paris"}, PriceMin: fp(1000), PriceMax: fp(1500), RoomsMin: fp(3)}, room.Weights{Locations: ip(4)}),
				mc("b", room.Criteria{Locations: []string{"lyon"}, PriceMin: fp(500), PriceMax: fp(800), RoomsMax: fp(2)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria: room.Criteria{
					Locations: []string{},
					PriceMin:  fp(500), PriceMax: fp(1500),
				},
				Weights:     map[string]float64{"locations": 4, "price": 1, "rooms": 1},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeMixed,
				Conflicts:   []string{"locations"},
			},
			wantOK: true,
		},
		{
			// features {balcony} ∩ {garden} = ∅ in all: nil, not a conflict.
			name: "all, empty features intersection is no conflict",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{Locations: []string{"paris"}, Features: []string{"balcony"}}, room.Weights{}),
				mc("b", room.Criteria{Locations: []string{"lyon"}, Features: []string{"garden"}}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{Locations: []string{"lyon", "paris"}},
				Weights:     map[string]float64{"locations": 1, "features": 1},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// A member's own inverted range stays inverted and is listed.
			name: "all, inverted range",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(900), PriceMax: fp(100)}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{PriceMin: fp(900), PriceMax: fp(100)},
				Weights:     map[string]float64{"price": 1},
				FromUserIDs: []string{"a"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{"price"},
			},
			wantOK: true,
		},
		{
			// price weights 0, unset (1), 5: all → mean (0+1+5)/3 = 2;
			// range [min(100,150,120), max(200,300,250)].
			name: "weights 0, unset, 5: all",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(100), PriceMax: fp(200)}, room.Weights{Price: ip(0)}),
				mc("b", room.Criteria{PriceMin: fp(150), PriceMax: fp(300)}, room.Weights{}),
				mc("c", room.Criteria{PriceMin: fp(120), PriceMax: fp(250)}, room.Weights{Price: ip(5)}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{PriceMin: fp(100), PriceMax: fp(300)},
				Weights:     map[string]float64{"price": 2},
				FromUserIDs: []string{"a", "b", "c"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// strict → max weight 5; range [max(100,150,120), min(200,300,250)].
			name: "weights 0, unset, 5: strict",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(100), PriceMax: fp(200)}, room.Weights{Price: ip(0)}),
				mc("b", room.Criteria{PriceMin: fp(150), PriceMax: fp(300)}, room.Weights{}),
				mc("c", room.Criteria{PriceMin: fp(120), PriceMax: fp(250)}, room.Weights{Price: ip(5)}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{PriceMin: fp(150), PriceMax: fp(200)},
				Weights:     map[string]float64{"price": 5},
				FromUserIDs: []string{"a", "b", "c"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// c weighs price 5 → price strict in mixed.
			name: "weights 0, unset, 5: mixed",
			mode: room.ModeMixed,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{PriceMin: fp(100), PriceMax: fp(200)}, room.Weights{Price: ip(0)}),
				mc("b", room.Criteria{PriceMin: fp(150), PriceMax: fp(300)}, room.Weights{}),
				mc("c", room.Criteria{PriceMin: fp(120), PriceMax: fp(250)}, room.Weights{Price: ip(5)}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{PriceMin: fp(150), PriceMax: fp(200)},
				Weights:     map[string]float64{"price": 5},
				FromUserIDs: []string{"a", "b", "c"},
				CombineMode: room.ModeMixed,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// a weighs locations 5 but sets none: it takes no part, so
			// locations is combined as in all ({x} ∪ {y}, weight (1+1)/2);
			// area 30 vs 60 → all → min.
			name: "mixed, weight of a member who does not set the criterion is ignored",
			mode: room.ModeMixed,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{AreaMin: fp(30)}, room.Weights{Locations: ip(5)}),
				mc("b", room.Criteria{Locations: []string{"x"}, AreaMin: fp(60)}, room.Weights{}),
				mc("c", room.Criteria{Locations: []string{"y"}}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{Locations: []string{"x", "y"}, AreaMin: fp(30)},
				Weights:     map[string]float64{"locations": 1, "area": 1},
				FromUserIDs: []string{"a", "b", "c"},
				CombineMode: room.ModeMixed,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// Out-of-range weights are clamped to 0..5: (5+0)/2.
			name: "weights clamped",
			mode: room.ModeAll,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{Locations: []string{"x"}}, room.Weights{Locations: ip(9)}),
				mc("b", room.Criteria{Locations: []string{"x"}}, room.Weights{Locations: ip(-2)}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{Locations: []string{"x"}},
				Weights:     map[string]float64{"locations": 2.5},
				FromUserIDs: []string{"a", "b"},
				CombineMode: room.ModeAll,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			name: "member without criteria left out",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{
				mc("a", room.Criteria{}, room.Weights{Locations: ip(5)}),
				mc("b", room.Criteria{Locations: []string{"x"}}, room.Weights{}),
			},
			want: room.Combined{
				Criteria:    room.Criteria{Locations: []string{"x"}},
				Weights:     map[string]float64{"locations": 1},
				FromUserIDs: []string{"b"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
		{
			// Same user twice: the greatest SK (latest version) is used.
			name: "duplicate user, latest version wins",
			mode: room.ModeStrict,
			members: []room.MemberCriteria{
				{UserID: "u", SK: "CRITERIA#u#2024-02-01", Criteria: room.Criteria{Locations: []string{"new"}}},
				{UserID: "u", SK: "CRITERIA#u#2024-01-01", Criteria: room.Criteria{Locations: []string{"old"}}},
			},
			want: room.Combined{
				Criteria:    room.Criteria{Locations: []string{"new"}},
				Weights:     map[string]float64{"locations": 1},
				FromUserIDs: []string{"u"},
				CombineMode: room.ModeStrict,
				Conflicts:   []string{},
			},
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ms := range permutations(tt.members) {
				got, ok := Combine(tt.mode, ms)
				if ok != tt.wantOK {
					t.Fatalf("Combine ok = %v, want %v", ok, tt.wantOK)
				}
				if diff := cmp.Diff(tt.want, got, approx); diff != "" {
					t.Fatalf("Combine(%v) mismatch (-want +got):\n%s", userIDs(ms), diff)
				}
			}
		})
	}
}

func userIDs(ms []room.MemberCriteria) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.UserID
	}
	return out
}

// The result must not alias the input, and the input must not be reordered.
func TestCombineDoesNotAliasInput(t *testing.T) {
	members := []room.MemberCriteria{bob, alice}
	got, ok := Combine(room.ModeStrict, members)
	if !ok {
		t.Fatal("Combine ok = false")
	}
	*got.Criteria.PriceMin = -1
	*got.Criteria.AreaMin = -1
	got.Criteria.Locations[0] = "changed"
	got.Criteria.Features[0] = "changed"
	if *bob.Criteria.PriceMin != 700 || *bob.Criteria.AreaMin != 50 ||
		bob.Criteria.Locations[0] != "lyon" || bob.Criteria.Features[1] != "balcony" ||
		alice.Criteria.Locations[0] != "paris" || alice.Criteria.Features[0] != "balcony" {
		t.Fatal("Combine result aliases its input")
	}
	if members[0].UserID != "bob" {
		t.Fatal("Combine reordered its input")
	}
}

func TestCriteriaFitMaxCriteria(t *testing.T) {
	if len(room.CriterionNames) > maxCriteria {
		t.Fatalf("%d criteria: raise maxCriteria", len(room.CriterionNames))
	}
}

// intersectByCount and jaccardByMaps are the set operations as they were
// first written (counting in a map); the merges that replaced them must
// give the same results.
func intersectByCount(sets [][]string) []string {
	out := []string{}
	if len(sets) == 0 {
		return out
	}
	count := map[string]int{}
	for _, s := range sets {
		for _, v := range dedup(s) {
			count[v]++
		}
	}
	for _, v := range dedup(sets[0]) {
		if count[v] == len(sets) {
			out = append(out, v)
		}
	}
	return out
}

func jaccardByMaps(a, b []string) float64 {
	u := union([][]string{a, b})
	if len(u) == 0 {
		return 1
	}
	return float64(len(intersectByCount([][]string{a, b}))) / float64(len(u))
}

func TestSetOperationsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	set := func() []string {
		n := rng.IntN(22) // past the 16 kept on the stack
		s := make([]string, n)
		for i := range s {
			s[i] = string(rune('a' + rng.IntN(12)))
		}
		return s
	}
	for range 20000 {
		a, b := set(), set()
		if got, want := jaccard(a, b), jaccardByMaps(a, b); got != want {
			t.Fatalf("jaccard(%q, %q) = %v, want %v", a, b, got, want)
		}
		sets := make([][]string, rng.IntN(5))
		for i := range sets {
			sets[i] = set()
		}
		in := make([][]string, len(sets))
		for i := range sets {
			in[i] = slices.Clone(sets[i])
		}
		if got, want := intersect(in), intersectByCount(sets); !slices.Equal(got, want) || got == nil {
			t.Fatalf("intersect(%q) = %q, want %q", sets, got, want)
		}
		for i := range sets {
			if !slices.Equal(in[i], sets[i]) {
				t.Fatalf("intersect modified its input %q → %q", sets[i], in[i])
			}
		}
	}
}

// latestByMaps is latestCriteria as it was first written (two maps, one
// timestamp); the sweep over many timestamps that replaced it must pick
// the same versions at each.
func latestByMaps(st room.State, at string) []room.MemberCriteria {
	joined := map[string]bool{}
	for _, m := range st.Members {
		if m.JoinedAt <= at {
			joined[m.UserID] = true
		}
	}
	latest := map[string]room.StoredCriteria{}
	for _, c := range st.Criteria {
		if joined[c.UserID] && c.Timestamp <= at && c.Timestamp >= latest[c.UserID].Timestamp {
			latest[c.UserID] = c
		}
	}
	ms := make([]room.MemberCriteria, 0, len(latest))
	for _, c := range latest {
		ms = append(ms, room.MemberCriteria{UserID: c.UserID, SK: c.SK, Criteria: c.Criteria, Weights: c.Weights})
	}
	slices.SortFunc(ms, func(a, b room.MemberCriteria) int { return strings.Compare(a.UserID, b.UserID) })
	return ms
}

func TestLatestCriteriaMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	ts := func() string { return fmt.Sprintf("2026-01-01T00:00:%02d.000Z", rng.IntN(20)) }
	for range 5000 {
		var st room.State
		for range rng.IntN(6) {
			st.Members = append(st.Members, room.Member{UserID: fmt.Sprint("u", rng.IntN(5)), JoinedAt: ts()})
		}
		for i := range rng.IntN(25) {
			u := fmt.Sprint("u", rng.IntN(6))
			st.Criteria = append(st.Criteria, room.StoredCriteria{SK: fmt.Sprint("CRITERIA#", u, "#", i),
				CriteriaVersion: room.CriteriaVersion{UserID: u, Timestamp: ts(), Criteria: room.Criteria{AreaMin: fp(float64(i))}}})
		}
		ats := make([]string, rng.IntN(5))
		for i := range ats {
			ats[i] = ts()
		}
		seen := 0
		latestCriteria(st, ats, func(i int, got []room.MemberCriteria) {
			seen++
			if diff := cmp.Diff(latestByMaps(st, ats[i]), got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("state %+v at %s of %q (-maps +sweep):\n%s", st, ats[i], ats, diff)
			}
		})
		if seen != len(ats) {
			t.Fatalf("%d calls for %d timestamps", seen, len(ats))
		}
	}
}
