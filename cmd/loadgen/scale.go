package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/store"
)

// DynamoDB's limits per partition, which a partition key (an index's too)
// cannot pass however the table is provisioned: the throughput one key
// can take.
const (
	keyWriteLimit = 1000.0 // write units per second
	keyReadLimit  = 3000.0 // read units per second
)

// Scale is the projection of every partition key's load to a target rate
// of user writes (-target): what each key took in the basis phase, what it
// would take at the target, and the rate at which it passes its
// partition's limit.
//
// A key's rate grows by its shape (store.KeyShape): a key per room, user,
// recipe or request is one of more keys as users grow, each as busy as in
// the basis phase, so its rate stays; a key per month, week, item type or
// method, and a key the workload pins (Pinned: the hot recipe, the chat
// room everyone is in), takes the growth, so its rate is scaled by target
// over the basis phase's achieved rate.
type Scale struct {
	Target float64 `json:"targetWritesPerSec"`
	// Basis is the phase the rates were measured in: its target and the
	// user writes per second it achieved.
	BasisTarget float64 `json:"basisTargetWritesPerSec"`
	BasisRate   float64 `json:"basisWritesPerSec"`
	// Keys are the keys most loaded at the target (over a hundredth of
	// a limit, at least the top 20), most loaded first; Breaking those
	// over a limit at the target, first to break first.
	Keys     []KeyLoad `json:"keys"`
	Breaking []KeyLoad `json:"breaking"`
	// Unknown is the write units per second the programs spent on index
	// entries whose partition key their calls did not name
	// (ddb.UnknownKey), per table or index: not in Keys.
	Unknown map[string]float64 `json:"unknownKeyWriteUnitsPerSec,omitempty"`
	// KeysSeen is how many partition keys the basis phase used.
	KeysSeen int `json:"keysSeen"`
	// Missing names the programs whose keys could not be read in the
	// basis phase: the projection leaves their calls out.
	Missing []string `json:"missingPrograms,omitempty"`
	// Advice are the shard settings that keep the keys shards can spread
	// under adviceUse of their limit at the target, where the run's
	// settings do not.
	Advice []Advice `json:"advice,omitempty"`
	// HotRecipe is what the hot recipe's own partition took per change of
	// its counts in the basis phase.
	HotRecipe *HotRecipe `json:"hotRecipe,omitempty"`
}

// HotRecipe is the write units the hot recipe's partition (the table's
// RECIPE#<id>, not its index entries) took per change of its counts (a
// cooking, a rating changed): the projector writes the per-cooking items
// in the cooks' partitions and the counts in the recipe's pending items,
// and the recipe's item and a week's trending item once per drain of a
// pending item, so this falls as drains hold more of its changes.
type HotRecipe struct {
	Key                 string  `json:"key"`
	Changes             int     `json:"changes"`
	WriteUnits          float64 `json:"writeUnits"`
	WriteUnitsPerChange float64 `json:"writeUnitsPerChange"`
}

// Advice is a shard setting for a key shards can spread: the setting and
// the shards it needs, for the key (its shards together) that needs the
// most.
type Advice struct {
	Setting string `json:"setting"`
	Shards  int    `json:"shards"`
	Where   string `json:"where"`
	Key     string `json:"key"`
	// Use is the key's projected load, all its shards together, as a share
	// of one key's limit; Shards the run had for it.
	Use     float64 `json:"use"`
	Current int     `json:"currentShards"`
	// SpreadBy is what picks a record's shard: "the cooking" spreads the
	// load evenly; "the recipe" leaves one hot recipe's share on one shard.
	SpreadBy string `json:"spreadBy"`
}

// adviceUse is the share of a key's limit advice leaves each shard at: the
// headroom for a burst and for a shard that draws more than its share.
const adviceUse = 0.7

// shardSettings are the keys a setting spreads over shards (docs/
// operations.md), and what picks a record's shard.
var shardSettings = []struct{ prefix, setting, by string }{
	{"RECENT#", "STORE_SHARDS_RECENT", "the cooking"},
	{"TRENDING#", "STORE_SHARDS_TRENDING", "the recipe"},
	{"METHOD#", "STORE_SHARDS_METHOD", "the recipe"},
}

// MaxShards is the most shards a setting takes (docs/operations.md).
const maxShards = 64

// advise sums each shardable key's shards' projected load and names the
// setting that brings each shard under adviceUse, where the run's shards
// do not.
func advise(keys []KeyLoad) []Advice {
	type logical struct{ where, key string }
	use := map[logical]float64{}
	shards := map[logical]int{}
	setting := map[logical]int{}
	for _, l := range keys {
		for i, st := range shardSettings {
			if !strings.HasPrefix(l.Key, st.prefix) {
				continue
			}
			k := logical{l.Where, unsharded(l.Key)}
			use[k] += max(l.ProjectedWrite/keyWriteLimit, l.ProjectedRead/keyReadLimit)
			shards[k]++
			setting[k] = i
		}
	}
	best := map[string]Advice{}
	for k, u := range use {
		st := shardSettings[setting[k]]
		need := min(int(math.Ceil(u/adviceUse)), maxShards)
		if need <= shards[k] {
			continue
		}
		if a, ok := best[st.setting]; !ok || need > a.Shards {
			best[st.setting] = Advice{Setting: st.setting, Shards: need, Where: k.where, Key: k.key, Use: u, Current: shards[k], SpreadBy: st.by}
		}
	}
	out := make([]Advice, 0, len(best))
	for _, a := range best {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Setting < out[j].Setting })
	return out
}

// unsharded is a shardable key without its shard ("RECENT#2026-11#3" is
// "RECENT#2026-11").
func unsharded(key string) string {
	i := strings.LastIndexByte(key, '#')
	if i <= 0 || strings.Count(key, "#") < 2 {
		return key
	}
	if _, err := strconv.Atoi(key[i+1:]); err != nil {
		return key
	}
	return key[:i]
}

// settings is the advice as the settings to give, "STORE_SHARDS_RECENT=4 …".
func (s *Scale) settings() string {
	parts := make([]string, len(s.Advice))
	for i, a := range s.Advice {
		parts[i] = fmt.Sprintf("%s=%d", a.Setting, a.Shards)
	}
	return strings.Join(parts, " ")
}

// KeyLoad is one partition key's load in the basis phase and projected.
type KeyLoad struct {
	// Where is "table", an index's name, "bookkeeping" or "effects".
	Where string `json:"where"`
	Key   string `json:"key"`
	store.KeyShape
	Pinned string `json:"pinned,omitempty"`
	// Combined, for a key whose writes are a recipe's drains (its totals,
	// its author's folded notifications), says the bound its projected
	// writes are held to (drainBound).
	Combined string `json:"combined,omitempty"`
	// Units per second in the basis phase and at the target.
	Read           float64 `json:"readUnitsPerSec"`
	Write          float64 `json:"writeUnitsPerSec"`
	ProjectedRead  float64 `json:"projectedReadUnitsPerSec"`
	ProjectedWrite float64 `json:"projectedWriteUnitsPerSec"`
	// Use is the projected load as a share of the partition's limit (the
	// larger of writes and reads); BreaksAt the user writes per second at
	// which it reaches 1 (0: no rate does, the key's load does not grow).
	Use      float64 `json:"use"`
	BreaksAt float64 `json:"breaksAtWritesPerSec,omitempty"`
	// Why says, for a key over its limit, what its writes are and what
	// would move them (docs/scale.md).
	Why string `json:"why,omitempty"`
}

// why says what a key over its limit is and what would move it: a setting
// where one spreads it, else the design change it needs.
func (l KeyLoad) why(advice []Advice, hotRecipe, author string) string {
	for _, st := range shardSettings {
		if !strings.HasPrefix(l.Key, st.prefix) {
			continue
		}
		s := "a key shards spread: raise " + st.setting
		for _, a := range advice {
			if a.Setting == st.setting {
				s = fmt.Sprintf("a key shards spread: %s=%d", a.Setting, a.Shards)
			}
		}
		if st.by == "the recipe" {
			s += ", except the hot recipe's entry, which moves once per drain of its counts"
		}
		return s
	}
	switch {
	case l.Key == hotRecipe && l.Where == "table" && l.ProjectedRead/keyReadLimit > l.ProjectedWrite/keyWriteLimit:
		return "one recipe's item, read about once per change of it (the writer's check of a cooking, the projector's counts and drains, each cook's suggestions): no setting spreads it; fewer or eventually consistent reads of it would (docs/scale.md, The hot recipe's partition)"
	case l.Key == hotRecipe && l.Where == "table":
		return "one recipe's aggregate, written by the drains of its pending counts" + orNot(l.Combined) + ": no setting spreads it (docs/scale.md, The hot recipe's partition)"
	case l.Key == author && l.Where == "table":
		return "its author's folded notifications, written by its recipes' drains" + orNot(l.Combined) + ": no setting spreads it"
	case l.Key == author:
		return "read: the author's recipes, queried for the suggestions of each cook who liked one: no setting spreads it"
	case strings.HasPrefix(l.Key, "CHATROOM#"):
		return "one chat room's messages and connections: roomId#shard (seed 002's advice) is not built"
	case !strings.Contains(l.Pattern, "<"):
		return "one key per item type: no setting spreads it"
	}
	return ""
}

// orNot is a drains' bound to quote, or what it is when there is none
// (the programs that wrote the key counted no calls: an older build).
func orNot(bound string) string {
	if bound == "" {
		return " (their calls not counted, so projected one per change)"
	}
	return " (" + bound + ")"
}

// keyCounts reads every program's capacity by partition key (a program it
// cannot read is left out, and warned of).
func (e *engine) keyCounts(ctx context.Context) map[string]ddb.Keys {
	out := map[string]ddb.Keys{}
	for name, base := range e.admin {
		k, err := readKeys(ctx, base)
		if err != nil {
			e.log.Warn("loadgen: read key metrics", "program", name, "err", err)
			continue
		}
		out[name] = k
	}
	return out
}

func readKeys(ctx context.Context, base string) (ddb.Keys, error) {
	return getJSON[ddb.Keys](ctx, base+"/metrics/keys")
}

// addKeys adds sign × b to a.
func addKeys(a, b ddb.Keys, sign float64) {
	for t, m := range b {
		if a[t] == nil {
			a[t] = map[string]ddb.KeyUnits{}
		}
		for k, u := range m {
			v := a[t][k]
			v.Read += sign * u.Read
			v.Write += sign * u.Write
			v.Calls += int64(sign) * u.Calls
			v.Writes += int64(sign) * u.Writes
			for _, it := range u.Top {
				if it.Item != "" {
					v.AddTop(it.Item, sign*it.Write)
				}
			}
			a[t][k] = v
		}
	}
}

// keysSince is what the programs used between two snapshots, added up,
// and the programs missing from either (left out).
func keysSince(after, before map[string]ddb.Keys, programs []string) (ddb.Keys, []string) {
	out := ddb.Keys{}
	var missing []string
	for _, p := range programs {
		a, ok1 := after[p]
		b, ok2 := before[p]
		if !ok1 || !ok2 {
			missing = append(missing, p)
			continue
		}
		addKeys(out, a, 1)
		addKeys(out, b, -1)
	}
	sort.Strings(missing)
	return out, missing
}

// project projects the basis phase's keys (used over secs seconds, at
// basis user writes per second) to target. where names a table or index
// target for the report; pinned are the partition keys the workload keeps
// one share of the writes on, with why.
func project(used ddb.Keys, secs, basisTarget, basis, target float64, where func(string) string, pinned map[string]string) *Scale {
	s := &Scale{Target: target, BasisTarget: basisTarget, BasisRate: basis}
	if secs <= 0 || basis <= 0 {
		return s
	}
	var all []KeyLoad
	for t, m := range used {
		for k, u := range m {
			if k == ddb.UnknownKey {
				if u.Write > 0 {
					if s.Unknown == nil {
						s.Unknown = map[string]float64{}
					}
					s.Unknown[where(t)] += u.Write / secs
				}
				continue
			}
			if u.Read <= 0 && u.Write <= 0 {
				continue
			}
			s.KeysSeen++
			l := KeyLoad{Where: where(t), Key: k, KeyShape: store.ShapeOf(k), Pinned: pinned[k], Read: u.Read / secs, Write: u.Write / secs}
			if k == ddb.ScanKey { // every partition, not one: not projected as a key
				l.KeyShape = store.KeyShape{Pattern: k, Per: "the whole table or index", Grows: true}
			}
			grow := target / basis // the key takes the growth
			if l.Grows && l.Pinned == "" {
				grow = 1 // more keys like it, each as busy
			}
			l.ProjectedRead, l.ProjectedWrite = l.Read*grow, l.Write*grow
			l.Use = max(l.ProjectedWrite/keyWriteLimit, l.ProjectedRead/keyReadLimit)
			now := max(l.Write/keyWriteLimit, l.Read/keyReadLimit) // at the basis rate
			switch {
			case now >= 1:
				l.BreaksAt = basis
			case grow != 1 && now > 0:
				l.BreaksAt = basis / now
			}
			all = append(all, l)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Use != all[j].Use {
			return all[i].Use > all[j].Use
		}
		return all[i].Where+all[i].Key < all[j].Where+all[j].Key
	})
	for i, l := range all {
		if i < 20 || l.Use >= 0.01 {
			s.Keys = append(s.Keys, l)
		}
		if l.Use >= 1 {
			s.Breaking = append(s.Breaking, l)
		}
	}
	sort.SliceStable(s.Breaking, func(i, j int) bool { return s.Breaking[i].BreaksAt < s.Breaking[j].BreaksAt })
	s.Advice = advise(all)
	return s
}

// scaleOf projects the keys of the phase with the highest rate the writer
// kept up with (or, if none did, the highest achieved) to target.
func scaleOf(phases []PhaseReport, target float64, where func(string) string, pinned map[string]string, hotKey string) *Scale {
	var basis *PhaseReport
	keptUp := (*PhaseReport).keptUp
	for i := range phases {
		p := &phases[i]
		switch {
		case basis == nil, keptUp(p) && !keptUp(basis), keptUp(p) == keptUp(basis) && p.AchievedRate > basis.AchievedRate:
			basis = p
		}
	}
	if basis == nil || basis.keys == nil {
		return nil
	}
	s := project(basis.keys, basis.sentSecs, basis.TargetRate, basis.AchievedRate, target, where, pinned)
	s.Missing = basis.keysMissing
	author := ""
	for k, why := range pinned {
		if strings.HasSuffix(why, "author") {
			author = k
		}
	}
	s.capDrains(basis.keys, basis.sentSecs, where, hotKey, author)
	for i := range s.Breaking {
		s.Breaking[i].Why = s.Breaking[i].why(s.Advice, hotKey, author)
	}
	if hotKey != "" && basis.hotChanges > 0 {
		h := &HotRecipe{Key: hotKey, Changes: basis.hotChanges}
		for t, m := range basis.keys {
			if where(t) == "table" {
				h.WriteUnits += m[hotKey].Write
			}
		}
		h.WriteUnitsPerChange = h.WriteUnits / float64(h.Changes)
		s.HotRecipe = h
	}
	return s
}

// line is the projection in one line a script can read: the last line
// make load prints.
func (s *Scale) line() string {
	if s.KeysSeen == 0 {
		return fmt.Sprintf("scale: at %.0f writes/s: not measured (no capacity by key: the programs need DYNAMODB_CAPACITY=true and /metrics/keys)", s.Target)
	}
	incomplete := ""
	if len(s.Missing) > 0 {
		incomplete = " (incomplete: no keys from " + strings.Join(s.Missing, ", ") + ")"
	}
	advice := ""
	if len(s.Advice) > 0 {
		advice = "; advised: " + s.settings()
	}
	if len(s.Breaking) == 0 {
		return fmt.Sprintf("scale: at %.0f writes/s: no key over its limit%s%s", s.Target, incomplete, advice)
	}
	b := s.Breaking[0]
	return fmt.Sprintf("scale: at %.0f writes/s: first to break: %s %s at %.0f writes/s%s%s", s.Target, b.Where, b.Pattern, b.BreaksAt, incomplete, advice)
}

func (s *Scale) print(w io.Writer) {
	fmt.Fprintf(w, "\nkeys at %.0f user writes/s, projected from %.1f/s (the phase at %.0f/s; %d keys; limits per key: %.0f write, %.0f read units/s):\n",
		s.Target, s.BasisRate, s.BasisTarget, s.KeysSeen, keyWriteLimit, keyReadLimit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  where\tkey\tpattern (one per)\tWCU/s now\tRCU/s now\tWCU/s then\tRCU/s then\tof limit\tbreaks at")
	for _, l := range s.Keys {
		per := l.Per
		if l.Pinned != "" {
			per = l.Pinned
		}
		breaks := "never"
		if l.BreaksAt > 0 {
			breaks = fmt.Sprintf("%.0f/s", l.BreaksAt)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s (%s)\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f%%\t%s\n", l.Where, short(l.Key), l.Pattern, per,
			l.Write, l.Read, l.ProjectedWrite, l.ProjectedRead, 100*l.Use, breaks)
	}
	tw.Flush()
	if len(s.Breaking) > 0 {
		fmt.Fprintf(w, "  the walls at %.0f/s, first to break first:\n", s.Target)
		for i, l := range s.Breaking {
			why := l.Why
			if why == "" {
				why = l.Per
			}
			if l.ProjectedRead/keyReadLimit > l.ProjectedWrite/keyWriteLimit {
				why = "by its reads; " + why
			}
			fmt.Fprintf(w, "  %d. %s %s at %.0f writes/s (%.0f%% of its limit then): %s\n", i+1, l.Where, l.Pattern, l.BreaksAt, 100*l.Use, why)
		}
	}
	if h := s.HotRecipe; h != nil {
		fmt.Fprintf(w, "  the hot recipe's partition (table %s) took %.1f write units per change of its counts (%d changes: cookings and ratings)\n",
			short(h.Key), h.WriteUnitsPerChange, h.Changes)
	}
	for _, l := range s.Keys {
		if l.Combined != "" {
			fmt.Fprintf(w, "  drains: %s %s: %s (%.0f%% of its limit at %.0f/s)\n", l.Where, short(l.Key), l.Combined, 100*l.Use, s.Target)
		}
	}
	for _, a := range s.Advice {
		fmt.Fprintf(w, "  advice: %s=%d: %s %s takes %.0f%% of a key's limit at %.0f/s (its %d shard(s) together); %d shards take %.0f%% each",
			a.Setting, a.Shards, a.Where, a.Key, 100*a.Use, s.Target, a.Current, a.Shards, 100*a.Use/float64(a.Shards))
		if a.SpreadBy != "the cooking" {
			fmt.Fprintf(w, " if the load is even; a record's shard is picked by %s, so one hot recipe's share stays on one shard", a.SpreadBy)
		}
		fmt.Fprintln(w)
	}
	if len(s.Unknown) > 0 {
		var parts []string
		for t, u := range s.Unknown {
			parts = append(parts, fmt.Sprintf("%s %.1f", t, u))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "  index writes whose key the call did not name (WCU/s now, not projected): %s\n", strings.Join(parts, ", "))
	}
}

// short cuts a long key for the table.
func short(k string) string {
	if len(k) <= 40 {
		return k
	}
	return k[:37] + "…"
}

// where names the tables of a local run for the report.
func whereIn(table string) func(string) string {
	return func(target string) string {
		switch {
		case target == table:
			return "table"
		case strings.HasPrefix(target, table+"/"):
			return strings.TrimPrefix(target, table+"/")
		case target == store.BookkeepingTableName(table):
			return "bookkeeping"
		case target == store.EffectsTableName(table):
			return "effects"
		}
		return target
	}
}

// drainsPerKey is the calls a second assumed of the lane that holds one
// pending key's records (store.PendingShards per recipe; an author's
// notifications are bounded so per recipe of theirs): Lambda's base rate of
// polls per shard ("Lambda polls shards in your DynamoDB stream for
// records at a base rate of 4 times per second",
// lambda/latest/dg/with-ddb.html). A lane with a backlog is called again
// as soon as a call ends, so where the stream's lanes are busy the batch
// size and a call's duration set it (docs/scale.md).
const drainsPerKey = 4.0

// capDrains holds the table writes of the keys a recipe's drains write
// (the hot recipe's partition: its totals; its author's: the folded
// notifications) to their bound: store.PendingShards drains of drainsPerKey
// a second, each of the write units the basis phase measured per call that
// wrote the key. The linear projection counts one write per change; the
// drains do not grow with the changes.
func (s *Scale) capDrains(used ddb.Keys, secs float64, where func(string) string, keys ...string) {
	changed := false
	ratio := map[string]float64{} // a capped key's projected writes over its linear ones
	for i := range s.Keys {
		l := &s.Keys[i]
		if l.Where != "table" || !slices.Contains(keys, l.Key) || l.Key == "" {
			continue
		}
		var u ddb.KeyUnits
		for t, m := range used {
			if where(t) == "table" {
				u.Write += m[l.Key].Write
				u.Writes += m[l.Key].Writes
			}
		}
		if u.Writes <= 0 {
			continue
		}
		perCall := u.Write / float64(u.Writes)
		bound := float64(store.PendingShards) * drainsPerKey * perCall
		l.Combined = fmt.Sprintf("bounded by %d drains × %.0f calls/s (a lane's base poll rate) × %.1f write units per call = %.0f WCU/s", store.PendingShards, drainsPerKey, perCall, bound)
		if l.ProjectedWrite <= bound {
			continue
		}
		ratio[l.Key] = bound / l.ProjectedWrite
		l.ProjectedWrite = bound
		l.Use = max(l.ProjectedWrite/keyWriteLimit, l.ProjectedRead/keyReadLimit)
		// Its writes grow as projected up to the bound: they break where
		// the projection did if the bound is over the limit, else never;
		// its reads still grow with the rate.
		writesBreak := l.BreaksAt
		if bound < keyWriteLimit {
			writesBreak = 0
		}
		l.BreaksAt = writesBreak
		if l.Read > 0 && l.ProjectedRead > l.Read {
			if at := s.BasisRate * keyReadLimit / l.Read; l.BreaksAt == 0 || at < l.BreaksAt {
				l.BreaksAt = max(at, s.BasisRate)
			}
		}
		changed = true
	}
	// An index key's entries of a capped item (the hot recipe's trending
	// and method entries) move with the same drains: that item's share is
	// held in the same ratio, the rest grows as projected.
	for i := range s.Keys {
		l := &s.Keys[i]
		if l.Where == "table" || l.Write <= 0 || l.ProjectedWrite <= 0 {
			continue
		}
		var m ddb.KeyUnits
		for t, km := range used {
			if where(t) == l.Where {
				m = km[l.Key]
			}
		}
		grow := l.ProjectedWrite / l.Write
		rest := l.Write // the units of the entries that grow with the rate
		for _, it := range m.Top {
			r, ok := ratio[it.Item]
			if !ok || it.Write <= 0 {
				continue
			}
			share := min(it.Write/secs, l.Write)
			l.ProjectedWrite -= share * grow * (1 - r)
			rest -= share
			l.Combined = fmt.Sprintf("the entries of %s (%.1f of its %.1f WCU/s now) move with its drains", short(it.Item), share, l.Write)
			changed = true
		}
		if l.Combined == "" {
			continue
		}
		l.Use = max(l.ProjectedWrite/keyWriteLimit, l.ProjectedRead/keyReadLimit)
		l.BreaksAt = 0
		if rest > 1e-9 && grow > 1 {
			l.BreaksAt = s.Target / l.Use // about: the rest grows with the rate
		} else if l.Use >= 1 {
			l.BreaksAt = s.BasisRate
		}
	}
	if !changed {
		return
	}
	s.Advice = advise(s.Keys)
	s.Breaking = s.Breaking[:0]
	for _, l := range s.Keys {
		if l.Use >= 1 {
			s.Breaking = append(s.Breaking, l)
		}
	}
	sort.SliceStable(s.Breaking, func(i, j int) bool { return s.Breaking[i].BreaksAt < s.Breaking[j].BreaksAt })
	sort.SliceStable(s.Keys, func(i, j int) bool { return s.Keys[i].Use > s.Keys[j].Use })
}
