package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/internal/ddb"
)

// A key per month takes the growth (its rate scales with the target), a
// key per room does not (more rooms, each as busy), a pinned key does; the
// keys over their limit are named first to break first, and the last line
// says which.
func TestProjection(t *testing.T) {
	used := ddb.Keys{
		"load/GSI3": {"RECENT#2026-11": {Write: 150}, ddb.UnknownKey: {Write: 30}},
		"load":      {"ROOM#r1": {Write: 75, Read: 30}, "RECIPE#hot": {Write: 300}, "RECIPE#cold": {Write: 300}},
		"load/GSI1": {"LOCATION": {Read: 15}},
	}
	s := project(used, 15, 50, 50, 10000, whereIn("load"), map[string]string{"RECIPE#hot": "the hot recipe"})
	byKey := map[string]KeyLoad{}
	for _, l := range s.Keys {
		byKey[l.Key] = l
	}
	if l := byKey["RECENT#2026-11"]; l.Where != "GSI3" || l.Write != 10 || l.ProjectedWrite != 2000 || l.BreaksAt != 5000 {
		t.Errorf("a key per month: %+v, want 10 WCU/s now, 2000 then, breaking at 5000/s", l)
	}
	if l := byKey["ROOM#r1"]; l.ProjectedWrite != 5 || l.ProjectedRead != 2 || l.BreaksAt != 0 {
		t.Errorf("a key per room: %+v, want 5 WCU/s and 2 RCU/s at any rate, never breaking", l)
	}
	if l := byKey["RECIPE#hot"]; l.ProjectedWrite != 4000 || l.BreaksAt != 2500 {
		t.Errorf("the pinned recipe: %+v, want 4000 WCU/s then, breaking at 2500/s", l)
	}
	if l := byKey["RECIPE#cold"]; l.ProjectedWrite != 20 || l.BreaksAt != 0 {
		t.Errorf("another recipe: %+v, want 20 WCU/s, never breaking", l)
	}
	if l := byKey["LOCATION"]; l.ProjectedRead != 200 || l.BreaksAt != 150000 {
		t.Errorf("a key per item type, read: %+v, want 200 RCU/s then, breaking at 150000/s", l)
	}
	if len(s.Breaking) != 2 || s.Breaking[0].Key != "RECIPE#hot" || s.Breaking[1].Key != "RECENT#2026-11" {
		t.Errorf("breaking %+v, want the hot recipe, then the month", s.Breaking)
	}
	if s.Unknown["GSI3"] != 2 {
		t.Errorf("unknown %v, want GSI3 2 WCU/s", s.Unknown)
	}
	if got, want := s.line(), "scale: at 10000 writes/s: first to break: table RECIPE#<recipeId> at 2500 writes/s; advised: STORE_SHARDS_RECENT=3"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	// the month's key at 200% of a key's limit: three shards take 67% each
	if len(s.Advice) != 1 || s.Advice[0] != (Advice{Setting: "STORE_SHARDS_RECENT", Shards: 3, Where: "GSI3", Key: "RECENT#2026-11", Use: 2, Current: 1, SpreadBy: "the cooking"}) {
		t.Errorf("advice %+v", s.Advice)
	}
	var b strings.Builder
	s.print(&b)
	if !strings.Contains(b.String(), "advice: STORE_SHARDS_RECENT=3: GSI3 RECENT#2026-11 takes 200% of a key's limit at 10000/s (its 1 shard(s) together); 3 shards take 67% each") {
		t.Errorf("the advice is not printed:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "RECENT#<yyyy-mm>[#<shard>] (month)") || !strings.Contains(b.String(), "GSI3 2.0") {
		t.Errorf("the table lacks the month key or the unknown writes:\n%s", b.String())
	}
	var page bytes.Buffer
	if err := (&Report{Scale: s}).html(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>RECENT#2026-11</td>", html.EscapeString(s.line()), "% of the limit"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	if got := project(ddb.Keys{}, 15, 50, 50, 100, whereIn("load"), nil).line(); !strings.Contains(got, "not measured") {
		t.Errorf("with no key data: %q", got)
	}
	if got := project(ddb.Keys{"load": {"ROOM#r1": {Write: 1}}}, 15, 50, 50, 100, whereIn("load"), nil).line(); got != "scale: at 100 writes/s: no key over its limit" {
		t.Errorf("line %q", got)
	}
}

// A program whose keys could not be read in either snapshot is left out of
// the phase's keys (not counted as all it used since it started, nor as
// negative), and the last line says the projection is incomplete.
func TestProjectionWithAProgramMissing(t *testing.T) {
	before := map[string]ddb.Keys{"writer": {"load": {"ROOM#r1": {Write: 10}}}, "projector": {"load": {"ROOM#r1": {Write: 100}}}}
	after := map[string]ddb.Keys{"writer": {"load": {"ROOM#r1": {Write: 40}}}}
	used, missing := keysSince(after, before, []string{"writer", "projector", "notifier"})
	if got := used["load"]["ROOM#r1"].Write; got != 30 {
		t.Errorf("ROOM#r1 used %v write units, want the writer's 30", got)
	}
	if strings.Join(missing, ",") != "notifier,projector" {
		t.Errorf("missing %v", missing)
	}
	s := project(used, 15, 50, 50, 10000, whereIn("load"), nil)
	s.Missing = missing
	if got := s.line(); !strings.HasSuffix(got, "no key over its limit (incomplete: no keys from notifier, projector)") {
		t.Errorf("line %q", got)
	}
}

// Advice sums a shardable key's shards: four shards of the week's key at
// 60% each need no more, at 75% each they need five; a key per method is
// spread by recipe, which the advice says; a key no setting spreads gets
// none.
func TestShardAdvice(t *testing.T) {
	keys := func(perShard float64, prefix string) ddb.Keys {
		m := map[string]ddb.KeyUnits{"RECIPE#hot": {Write: 2000 * 15 / 200}}
		for i := range 4 {
			m[fmt.Sprintf("%s#%d", prefix, i)] = ddb.KeyUnits{Write: perShard * 15 / 200} // projected ×200
		}
		return ddb.Keys{"load/GSI3": m}
	}
	if a := project(keys(600, "TRENDING#2026-W01"), 15, 50, 50, 10000, whereIn("load"), nil).Advice; len(a) != 0 {
		t.Errorf("four shards at 60%%: advice %+v, want none", a)
	}
	s := project(keys(750, "TRENDING#2026-W01"), 15, 50, 50, 10000, whereIn("load"), nil)
	if len(s.Advice) != 1 || s.Advice[0].Setting != "STORE_SHARDS_TRENDING" || s.Advice[0].Shards != 5 || s.Advice[0].Current != 4 || s.Advice[0].Key != "TRENDING#2026-W01" {
		t.Fatalf("four shards at 75%%: advice %+v, want STORE_SHARDS_TRENDING=5", s.Advice)
	}
	var b strings.Builder
	s.print(&b)
	if !strings.Contains(b.String(), "one hot recipe's share stays on one shard") {
		t.Errorf("the advice for a key spread by recipe does not say so:\n%s", b.String())
	}
	if got := s.line(); !strings.HasSuffix(got, "; advised: STORE_SHARDS_TRENDING=5") {
		t.Errorf("line %q", got)
	}
	if unsharded("METHOD#stir-fry#12") != "METHOD#stir-fry" || unsharded("RECENT#2026-11") != "RECENT#2026-11" || unsharded("TRENDING#2026-W01") != "TRENDING#2026-W01" {
		t.Error("unsharded")
	}
}

// The hot recipe's units per change are its partition's write units in
// the table (not its index entries) over the changes of its counts.
func TestHotRecipeUnitsPerChange(t *testing.T) {
	phases := []PhaseReport{{TargetRate: 50, AchievedRate: 50, sentSecs: 10, hotChanges: 40,
		keys: ddb.Keys{"load": {"RECIPE#hot": {Write: 100}, "RECIPE#cold": {Write: 7}}, "load/GSI3": {"RECIPE#hot": {Write: 9}}}}}
	s := scaleOf(phases, 10000, whereIn("load"), nil, "RECIPE#hot")
	if s.HotRecipe == nil || s.HotRecipe.WriteUnitsPerChange != 2.5 || s.HotRecipe.Changes != 40 {
		t.Fatalf("hot recipe %+v, want 100 units over 40 changes", s.HotRecipe)
	}
	var out strings.Builder
	s.print(&out)
	if !strings.Contains(out.String(), "the hot recipe's partition (table RECIPE#hot) took 2.5 write units per change of its counts (40 changes") {
		t.Errorf("report:\n%s", out.String())
	}
	if scaleOf(phases, 10000, whereIn("load"), nil, "").HotRecipe != nil {
		t.Error("a run without cooking reports a hot recipe")
	}
}

// Each key over its limit says why and what would move it: the setting for
// a key shards spread (the advised count), the design change for the rest.
func TestWallsSayWhy(t *testing.T) {
	phases := []PhaseReport{{TargetRate: 50, AchievedRate: 50, sentSecs: 10, hotChanges: 40, keys: ddb.Keys{
		"load":      {"RECIPE#hot": {Write: 300}, "USER#chef": {Write: 200}, "CHATROOM#global": {Write: 60}},
		"load/GSI3": {"RECENT#2026-12": {Write: 100}, "TRENDING#2026-W49": {Write: 90}},
		"load/GSI1": {"LOCATION": {Write: 60}, "USER#chef": {Read: 200}},
	}}}
	pinned := map[string]string{"RECIPE#hot": "the hot recipe: 50% of cookings", "USER#chef": "the hot recipe's author", "CHATROOM#global": "the chat room everyone is in"}
	s := scaleOf(phases, 100000, whereIn("load"), pinned, "RECIPE#hot")
	want := map[string]string{
		"RECIPE#hot":        "one recipe's aggregate",
		"USER#chef":         "its author's folded notifications",
		"RECENT#2026-12":    "a key shards spread: STORE_SHARDS_RECENT=",
		"TRENDING#2026-W49": "except the hot recipe's entry",
		"LOCATION":          "one key per item type",
		"CHATROOM#global":   "roomId#shard",
	}
	if len(s.Breaking) != len(want)+1 {
		t.Fatalf("breaking %d keys, want %d: %+v", len(s.Breaking), len(want), s.Breaking)
	}
	for _, l := range s.Breaking {
		if l.Where == "GSI1" && l.Key == "USER#chef" {
			if !strings.Contains(l.Why, "the author's recipes") {
				t.Errorf("the author's index: why %q", l.Why)
			}
			continue
		}
		if !strings.Contains(l.Why, want[l.Key]) {
			t.Errorf("%s: why %q, want it to say %q", l.Key, l.Why, want[l.Key])
		}
	}
	var out strings.Builder
	s.print(&out)
	if !strings.Contains(out.String(), "the walls at 100000/s, first to break first:\n  1. table RECIPE#<recipeId> at ") ||
		!strings.Contains(out.String(), "GSI1 USER#<userId> at 7500 writes/s (1333% of its limit then): by its reads; read: the author's recipes") {
		t.Errorf("report:\n%s", out.String())
	}
}

// The keys a recipe's drains write (its totals, its author's folded
// notifications) are held to the drains' bound: store.PendingShards drains
// of drainsPerKey calls a second, each of the units measured per call that
// wrote the key; a projection under the bound stays linear, and the last
// line no longer names a capped key. (The base poll rate is Lambda's:
// lambda/latest/dg/with-ddb.html.)
func TestProjectionCapsDrains(t *testing.T) {
	used := ddb.Keys{"load": {
		"RECIPE#hot":   {Write: 600, Writes: 150, Read: 300}, // 40 WCU/s now, 4 units a drain; 20 RCU/s
		"USER#chef":    {Write: 300, Writes: 50},             // 20 WCU/s, 6 units a call
		"RECIPE#other": {Write: 3, Writes: 1},
	}, "load/GSI2": {
		// 10 WCU/s, 8 of them the hot recipe's entry
		"METHOD#bake#0": {Write: 150, Top: [4]ddb.ItemUnits{{Item: "RECIPE#hot", Write: 120}, {Item: "RECIPE#x", Write: 30}}},
	}}
	s := project(used, 15, 50, 50, 10000, whereIn("load"), map[string]string{"RECIPE#hot": "the hot recipe", "USER#chef": "the hot recipe's author"})
	if len(s.Breaking) != 3 {
		t.Fatalf("linear: %d keys over, want 3", len(s.Breaking))
	}
	s.capDrains(used, 15, whereIn("load"), "RECIPE#hot", "USER#chef")
	byKey := map[string]KeyLoad{}
	for _, l := range s.Keys {
		byKey[l.Key] = l
	}
	// its reads still grow: 4,000 RCU/s then, over the 3,000 from 7,500/s
	if l := byKey["RECIPE#hot"]; l.ProjectedWrite != 128 || l.ProjectedRead != 4000 || l.BreaksAt != 7500 || !strings.Contains(l.Combined, "8 drains × 4 calls/s (a lane's base poll rate) × 4.0 write units per call") {
		t.Errorf("the hot recipe: %+v, want 128 WCU/s and 4,000 RCU/s, breaking at 7,500/s by its reads", l)
	}
	if l := byKey["USER#chef"]; l.ProjectedWrite != 192 || l.BreaksAt != 0 {
		t.Errorf("its author: %+v, want 192 WCU/s", l)
	}
	// the method key: 2 WCU/s of others grow (400), the hot entry's 8 are
	// held as its recipe's drains are (1,600 × 128/8,000 = 25.6); it breaks
	// where the rest does, about 10,000 / 0.4256
	if l := byKey["METHOD#bake#0"]; math.Abs(l.ProjectedWrite-425.6) > 1e-9 || math.Abs(l.BreaksAt-10000/0.4256) > 1e-6 || l.Combined == "" {
		t.Errorf("the hot recipe's method entry: %+v, want 425.6 WCU/s, breaking at about 23,496/s", l)
	}
	if l := byKey["RECIPE#other"]; l.Combined != "" || l.ProjectedWrite != 0.2 {
		t.Errorf("another recipe: %+v, untouched", l)
	}
	if got := s.line(); got != "scale: at 10000 writes/s: first to break: table RECIPE#<recipeId> at 7500 writes/s" {
		t.Errorf("last line %q", got)
	}
}
