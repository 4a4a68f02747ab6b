package projections

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/room"
)

func TestLevel(t *testing.T) {
	tests := []struct {
		score int
		want  string
	}{
		{0, room.LevelLow},
		{39, room.LevelLow},
		{40, room.LevelMedium},
		{64, room.LevelMedium},
		{65, room.LevelHigh},
		{84, room.LevelHigh},
		{85, room.LevelExcellent},
		{100, room.LevelExcellent},
	}
	for _, tt := range tests {
		if got := Level(tt.score); got != tt.want {
			t.Errorf("Level(%d) = %q, want %q", tt.score, got, tt.want)
		}
	}
}

func sk(user string) string { return "CRITERIA#" + user + "#1" }

func price(lo, hi *float64) room.Criteria { return room.Criteria{PriceMin: lo, PriceMax: hi} }

// TestRangeAgreement checks the range formula through Compatibility: two
// members who share only one range criterion score exactly its agreement.
func TestRangeAgreement(t *testing.T) {
	tests := []struct {
		name string
		a, b room.Criteria
		want float64 // agreement, worked out by hand
	}{
		// ∩ [800,1000] = 200; narrower [500,1000] = 500.
		{"overlap", price(fp(500), fp(1000)), price(fp(800), fp(1600)), 0.4},
		{"disjoint", price(fp(500), fp(700)), price(fp(800), fp(900)), 0},
		// ∩ is the single point 3: length 0.
		{"touching", price(fp(1), fp(3)), price(fp(3), fp(5)), 0},
		// ∩ = [700,900] = the narrower range.
		{"nested", price(fp(500), fp(1500)), price(fp(700), fp(900)), 1},
		{"point inside", price(fp(800), fp(800)), price(fp(500), fp(1000)), 1},
		{"point on a bound", price(fp(500), fp(1000)), price(fp(1000), fp(1000)), 1},
		{"point outside", price(fp(1200), fp(1200)), price(fp(500), fp(1000)), 0},
		{"equal points", price(fp(3), fp(3)), price(fp(3), fp(3)), 1},
		{"different points", price(fp(3), fp(3)), price(fp(4), fp(4)), 0},
		// only a max of 0: the point [0,0], inside [0,10].
		{"max 0 only is the point 0", price(nil, fp(0)), price(fp(0), fp(10)), 1},
		// [500,∞) and [800,∞): narrower is infinite.
		{"both unbounded", price(fp(500), nil), price(fp(800), nil), 1},
		// [0,1000] and [600,∞): ∩ [600,1000] = 400 over 1000.
		{"missing min is 0", price(nil, fp(1000)), price(fp(600), nil), 0.4},
		// [900,∞) and [0,1000]: ∩ [900,1000] = 100 over 1000.
		{"min only against max only", price(fp(900), nil), price(nil, fp(1000)), 0.1},
		// [500,∞) contains [600,800].
		{"unbounded contains bounded", price(fp(500), nil), price(fp(600), fp(800)), 1},
		{"inverted range accepts nothing", price(fp(10), fp(5)), price(fp(0), fp(100)), 0},
		// rooms [2,4] and [3,5]: ∩ [3,4] = 1 over 2.
		{"rooms", room.Criteria{RoomsMin: fp(2), RoomsMax: fp(4)}, room.Criteria{RoomsMin: fp(3), RoomsMax: fp(5)}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ms := range permutations([]room.MemberCriteria{
				{UserID: "a", SK: sk("a"), Criteria: tt.a},
				{UserID: "b", SK: sk("b"), Criteria: tt.b},
			}) {
				got, ok := Compatibility(ms)
				if !ok {
					t.Fatal("Compatibility ok = false")
				}
				if got.Pairs["a|b"] != tt.want {
					t.Fatalf("agreement = %v, want %v", got.Pairs["a|b"], tt.want)
				}
			}
		})
	}
}

func TestCompatibility(t *testing.T) {
	refs := func(users ...string) []string {
		out := make([]string, len(users))
		for i, u := range users {
			out[i] = sk(u)
		}
		return out
	}
	m := func(user string, c room.Criteria, w room.Weights) room.MemberCriteria {
		return room.MemberCriteria{UserID: user, SK: sk(user), Criteria: c, Weights: w}
	}
	loc := func(s ...string) room.Criteria { return room.Criteria{Locations: s} }
	// scoreCase: members a [0,100] and b [bMin,200] on rooms share only
	// rooms; the agreement is (100-bMin)/100.
	scoreCase := func(bMin float64) []room.MemberCriteria {
		return []room.MemberCriteria{
			m("a", room.Criteria{RoomsMin: fp(0), RoomsMax: fp(100)}, room.Weights{}),
			m("b", room.Criteria{RoomsMin: fp(bMin), RoomsMax: fp(200)}, room.Weights{}),
		}
	}

	tests := []struct {
		name    string
		members []room.MemberCriteria
		want    room.Compatibility
		wantOK  bool
	}{
		{name: "no members"},
		{name: "one member", members: []room.MemberCriteria{m("a", loc("x"), room.Weights{})}},
		{
			name: "second member has no criteria",
			members: []room.MemberCriteria{
				m("a", loc("x"), room.Weights{}),
				m("b", room.Criteria{}, room.Weights{}),
			},
		},
		{
			name: "no shared criterion",
			members: []room.MemberCriteria{
				m("a", loc("x"), room.Weights{}),
				m("b", price(fp(1), fp(2)), room.Weights{}),
			},
		},
		{
			name: "only shared criterion weighs 0",
			members: []room.MemberCriteria{
				m("a", loc("x"), room.Weights{Locations: ip(0)}),
				m("b", loc("x"), room.Weights{Locations: ip(0)}),
			},
		},
		{
			// Jaccard {a,b,c} vs {b,c,d}: 2/4.
			name: "jaccard locations",
			members: []room.MemberCriteria{
				m("a", loc("a", "b", "c"), room.Weights{}),
				m("b", loc("b", "c", "d"), room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 50, Level: room.LevelMedium,
				Comment:      "Only one criterion is shared: locations (50% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.5},
			},
			wantOK: true,
		},
		{
			// Jaccard {balcony,parking} vs {balcony,balcony}: 1/2.
			name: "jaccard features, duplicates ignored",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Features: []string{"parking", "balcony"}}, room.Weights{}),
				m("b", room.Criteria{Features: []string{"balcony", "balcony"}}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 50, Level: room.LevelMedium,
				Comment:      "Only one criterion is shared: features (50% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.5},
			},
			wantOK: true,
		},
		{
			// 1/3 = 0.33333… → pair 0.3333, score 33.
			name: "pair score rounded to 4 decimals",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Features: []string{"a", "b", "c"}}, room.Weights{}),
				m("b", room.Criteria{Features: []string{"a"}}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 33, Level: room.LevelLow,
				Comment:      "Only one criterion is shared: features (33% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.3333},
			},
			wantOK: true,
		},
		{
			// 40/50 = 0.8.
			name: "area ratio",
			members: []room.MemberCriteria{
				m("a", room.Criteria{AreaMin: fp(40)}, room.Weights{}),
				m("b", room.Criteria{AreaMin: fp(50)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 80, Level: room.LevelHigh,
				Comment:      "Only one criterion is shared: area (80% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.8},
			},
			wantOK: true,
		},
		{
			name: "area both 0",
			members: []room.MemberCriteria{
				m("a", room.Criteria{AreaMin: fp(0)}, room.Weights{}),
				m("b", room.Criteria{AreaMin: fp(0)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 100, Level: room.LevelExcellent,
				Comment:      "Only one criterion is shared: area (100% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 1},
			},
			wantOK: true,
		},
		{
			// 0/30 = 0.
			name: "area 0 and 30",
			members: []room.MemberCriteria{
				m("a", room.Criteria{AreaMin: fp(0)}, room.Weights{}),
				m("b", room.Criteria{AreaMin: fp(30)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 0, Level: room.LevelLow,
				Comment:      "Only one criterion is shared: area (0% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0},
			},
			wantOK: true,
		},
		{
			// A negative minimum area counts as 0: 0/20 = 0.
			name: "area negative counts as 0",
			members: []room.MemberCriteria{
				m("a", room.Criteria{AreaMin: fp(-10)}, room.Weights{}),
				m("b", room.Criteria{AreaMin: fp(20)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 0, Level: room.LevelLow,
				Comment:      "Only one criterion is shared: area (0% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0},
			},
			wantOK: true,
		},
		{
			// locations: Jaccard {a,b} vs {a,b,c,d} = 0.5, w = (3+5)/2 = 4;
			// price: [600,800] inside [500,1000] = 1, w = (1+1)/2 = 1.
			// (4×0.5 + 1×1) / (4+1) = 0.6.
			name: "weighted pair",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"a", "b"}, PriceMin: fp(500), PriceMax: fp(1000)}, room.Weights{Locations: ip(3)}),
				m("b", room.Criteria{Locations: []string{"a", "b", "c", "d"}, PriceMin: fp(600), PriceMax: fp(800)}, room.Weights{Locations: ip(5)}),
			},
			want: room.Compatibility{
				ScorePercent: 60, Level: room.LevelMedium,
				Comment:      "Strongest agreement on price (100%); largest disagreement on locations (50%).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.6},
			},
			wantOK: true,
		},
		{
			// locations w = 0 (agreement 0), price w = 1 (agreement 1):
			// score (0×0 + 1×1)/1 = 1. The comment still names locations.
			name: "weight 0 criterion does not count in the score",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"a"}, PriceMin: fp(0), PriceMax: fp(100)}, room.Weights{Locations: ip(0)}),
				m("b", room.Criteria{Locations: []string{"b"}, PriceMin: fp(0), PriceMax: fp(100)}, room.Weights{Locations: ip(0)}),
			},
			want: room.Compatibility{
				ScorePercent: 100, Level: room.LevelExcellent,
				Comment:      "Strongest agreement on price (100%); largest disagreement on locations (0%).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 1},
			},
			wantOK: true,
		},
		{
			// a|b 1, a|c 0, b|c 0 → mean 1/3 → 33.
			name: "mean over three pairs",
			members: []room.MemberCriteria{
				m("a", loc("x"), room.Weights{}),
				m("b", loc("x"), room.Weights{}),
				m("c", loc("y"), room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 33, Level: room.LevelLow,
				Comment:      "Only one criterion is shared: locations (33% agreement).",
				CriteriaRefs: refs("a", "b", "c"),
				Pairs:        map[string]float64{"a|b": 1, "a|c": 0, "b|c": 0},
			},
			wantOK: true,
		},
		{
			// a|b: Jaccard {x,y} vs {x} = 0.5; c shares nothing with a or
			// b, so a|c and b|c are left out. c's version is still a ref.
			name: "pairs sharing nothing left out",
			members: []room.MemberCriteria{
				m("a", loc("x", "y"), room.Weights{}),
				m("b", loc("x"), room.Weights{}),
				m("c", room.Criteria{AreaMin: fp(40)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 50, Level: room.LevelMedium,
				Comment:      "Only one criterion is shared: locations (50% agreement).",
				CriteriaRefs: refs("a", "b", "c"),
				Pairs:        map[string]float64{"a|b": 0.5},
			},
			wantOK: true,
		},
		{
			// a|b share only price, both weigh it 0 → Σw = 0, left out
			// (also from the comment); a|c locations = 1; b|c nothing.
			name: "pair with zero total weight left out",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(100)}, room.Weights{Price: ip(0)}),
				m("b", room.Criteria{PriceMin: fp(50), PriceMax: fp(100)}, room.Weights{Price: ip(0)}),
				m("c", loc("x"), room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 100, Level: room.LevelExcellent,
				Comment:      "Only one criterion is shared: locations (100% agreement).",
				CriteriaRefs: refs("a", "b", "c"),
				Pairs:        map[string]float64{"a|c": 1},
			},
			wantOK: true,
		},
		{
			// Member without criteria: no pair, no ref.
			name: "member without criteria left out of refs",
			members: []room.MemberCriteria{
				m("a", loc("x"), room.Weights{}),
				m("b", loc("x"), room.Weights{}),
				m("c", room.Criteria{}, room.Weights{Price: ip(5)}),
			},
			want: room.Compatibility{
				ScorePercent: 100, Level: room.LevelExcellent,
				Comment:      "Only one criterion is shared: locations (100% agreement).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 1},
			},
			wantOK: true,
		},
		{
			// a|b: locations 1, price ∩ [50,100] = 50 over 100 = 0.5 →
			// (1+0.5)/2 = 0.75; a|c, b|c: locations 0. Mean 0.75/3 = 0.25.
			// Per criterion: locations (1+0+0)/3 = 33%, price 0.5 (a|b only).
			name: "comment uses per-criterion means over pairs",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(100)}, room.Weights{}),
				m("b", room.Criteria{Locations: []string{"x"}, PriceMin: fp(50), PriceMax: fp(150)}, room.Weights{}),
				m("c", loc("y"), room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 25, Level: room.LevelLow,
				Comment:      "Strongest agreement on price (50%); largest disagreement on locations (33%).",
				CriteriaRefs: refs("a", "b", "c"),
				Pairs:        map[string]float64{"a|b": 0.75, "a|c": 0, "b|c": 0},
			},
			wantOK: true,
		},
		{
			name: "comment, every criterion equal",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(10)}, room.Weights{}),
				m("b", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(10)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 100, Level: room.LevelExcellent,
				Comment:      "Equal agreement on every shared criterion (locations, price): 100%.",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 1},
			},
			wantOK: true,
		},
		{
			// locations {x,y} vs {x} 0.5; price 1; rooms [2,4]∩[3,5] 1/2.
			// Tie at the bottom → locations (canonical order first).
			// (0.5+1+0.5)/3 = 0.6667 → 67.
			name: "comment, tie on the largest disagreement",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"x", "y"}, PriceMin: fp(0), PriceMax: fp(10), RoomsMin: fp(2), RoomsMax: fp(4)}, room.Weights{}),
				m("b", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(10), RoomsMin: fp(3), RoomsMax: fp(5)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 67, Level: room.LevelHigh,
				Comment:      "Strongest agreement on price (100%); largest disagreement on locations (50%).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.6667},
			},
			wantOK: true,
		},
		{
			// locations 1, price 1, area 40/50 = 0.8. Tie at the top →
			// locations. (1+1+0.8)/3 = 0.9333 → 93.
			name: "comment, tie on the strongest agreement",
			members: []room.MemberCriteria{
				m("a", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(10), AreaMin: fp(40)}, room.Weights{}),
				m("b", room.Criteria{Locations: []string{"x"}, PriceMin: fp(0), PriceMax: fp(10), AreaMin: fp(50)}, room.Weights{}),
			},
			want: room.Compatibility{
				ScorePercent: 93, Level: room.LevelExcellent,
				Comment:      "Strongest agreement on locations (100%); largest disagreement on area (80%).",
				CriteriaRefs: refs("a", "b"),
				Pairs:        map[string]float64{"a|b": 0.9333},
			},
			wantOK: true,
		},
		{
			// u1's later version {y} is used: Jaccard {y} vs {y} = 1.
			name: "duplicate user, latest version wins",
			members: []room.MemberCriteria{
				{UserID: "u1", SK: "CRITERIA#u1#2", Criteria: loc("y")},
				{UserID: "u1", SK: "CRITERIA#u1#1", Criteria: loc("x")},
				{UserID: "u2", SK: "CRITERIA#u2#1", Criteria: loc("y")},
			},
			want: room.Compatibility{
				ScorePercent: 100, Level: room.LevelExcellent,
				Comment:      "Only one criterion is shared: locations (100% agreement).",
				CriteriaRefs: []string{"CRITERIA#u1#2", "CRITERIA#u2#1"},
				Pairs:        map[string]float64{"u1|u2": 1},
			},
			wantOK: true,
		},
		// Level thresholds: rooms [0,100] vs [bMin,200] → (100-bMin)/100.
		{name: "score 39", members: scoreCase(61), wantOK: true, want: room.Compatibility{
			ScorePercent: 39, Level: room.LevelLow, Comment: "Only one criterion is shared: rooms (39% agreement).",
			CriteriaRefs: refs("a", "b"), Pairs: map[string]float64{"a|b": 0.39}}},
		{name: "score 40", members: scoreCase(60), wantOK: true, want: room.Compatibility{
			ScorePercent: 40, Level: room.LevelMedium, Comment: "Only one criterion is shared: rooms (40% agreement).",
			CriteriaRefs: refs("a", "b"), Pairs: map[string]float64{"a|b": 0.4}}},
		{name: "score 64", members: scoreCase(36), wantOK: true, want: room.Compatibility{
			ScorePercent: 64, Level: room.LevelMedium, Comment: "Only one criterion is shared: rooms (64% agreement).",
			CriteriaRefs: refs("a", "b"), Pairs: map[string]float64{"a|b": 0.64}}},
		{name: "score 65", members: scoreCase(35), wantOK: true, want: room.Compatibility{
			ScorePercent: 65, Level: room.LevelHigh, Comment: "Only one criterion is shared: rooms (65% agreement).",
			CriteriaRefs: refs("a", "b"), Pairs: map[string]float64{"a|b": 0.65}}},
		{name: "score 84", members: scoreCase(16), wantOK: true, want: room.Compatibility{
			ScorePercent: 84, Level: room.LevelHigh, Comment: "Only one criterion is shared: rooms (84% agreement).",
			CriteriaRefs: refs("a", "b"), Pairs: map[string]float64{"a|b": 0.84}}},
		{name: "score 85", members: scoreCase(15), wantOK: true, want: room.Compatibility{
			ScorePercent: 85, Level: room.LevelExcellent, Comment: "Only one criterion is shared: rooms (85% agreement).",
			CriteriaRefs: refs("a", "b"), Pairs: map[string]float64{"a|b": 0.85}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ms := range permutations(tt.members) {
				got, ok := Compatibility(ms)
				if ok != tt.wantOK {
					t.Fatalf("Compatibility ok = %v, want %v", ok, tt.wantOK)
				}
				if diff := cmp.Diff(tt.want, got, approx); diff != "" {
					t.Fatalf("Compatibility(%v) mismatch (-want +got):\n%s", userIDs(ms), diff)
				}
			}
		})
	}
}
