package projections_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/drift"
	devents "github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// assertNoDrift checks that the derived items drift covers are what the
// core items say: the strongest end-to-end check of the projector's
// counts.
func assertNoDrift(t *testing.T, st *store.Store) *drift.Facts {
	t.Helper()
	f, err := st.Upkeep.ScanFactsWith(context.Background(), 3, nil, projections.ExpectedActivities)
	if err != nil {
		t.Fatal(err)
	}
	f.Snapshot = projections.Snapshot
	if diffs := drift.Check(f); len(diffs) > 0 {
		t.Fatalf("%d derived items differ from the core items, e.g. %+v", len(diffs), diffs[0])
	}
	return f
}

// TestDriftFindsAndRepairs: a table the projector derived has no drift;
// corrupted, deleted and stray derived items are each found, repaired, and
// the table then equals what the projector had derived.
func TestDriftFindsAndRepairs(t *testing.T) {
	t.Parallel()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	runKitchen(t, st)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ts := func() string { at = at.Add(time.Second); return store.Timestamp(at) }
	if err := st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Quest, ResourceID: "q1", Title: "t", OwnerID: "alice", CreatedAt: ts()}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		if _, err := st.Collab.AddReaction(ctx, collab.Reaction{CommentID: "c1", ResourceType: collab.Quest, ResourceID: "q1", UserID: u, Emoji: "👍", CreatedAt: ts()}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	follow := ddbtest.FollowPending(t, c.Streams, arn)
	for batch := range slices.Chunk(ev.Records, 100) {
		resp, err := p.Handle(ctx, events.DynamoDBEvent{Records: batch})
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("projector: %v %+v", err, resp)
		}
	}
	// the drains of the recipes' pending counts
	if _, err := replay.Deliver(ctx, events.DynamoDBEvent{}, replay.Target{Handler: p.Handle, Follow: follow}, replay.AsCaptured); err != nil {
		t.Fatal(err)
	}
	before := assertNoDrift(t, st)
	if len(before.Histories) == 0 || len(before.Recents) == 0 || len(before.Trending) == 0 || len(before.Counts) == 0 {
		t.Fatalf("the scenario derived too little to check: %+v", before)
	}

	// Corrupt one of each kind, delete some, add strays.
	var names map[string]string
	update := func(k store.Key, expr string, vals map[string]types.AttributeValue) {
		t.Helper()
		if _, err := c.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: k.AV(), UpdateExpression: aws.String(expr),
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals}); err != nil {
			t.Fatal(err)
		}
		names = nil
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	del := func(k store.Key) {
		t.Helper()
		if _, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: k.AV()}); err != nil {
			t.Fatal(err)
		}
	}
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	update(store.CountsKey("c1"), "SET counts = :c", map[string]types.AttributeValue{":c": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"👍": n("4"), "🎉": n("1")}}})
	update(store.CountsKey("stray"), "SET counts = :c, itemType = :t, derived = :d", map[string]types.AttributeValue{
		":c": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"👍": n("2")}},
		":t": &types.AttributeValueMemberS{Value: store.TypeReactionCounts}, ":d": &types.AttributeValueMemberBOOL{Value: true}})
	var rated drift.Recipe
	for _, r := range before.Recipes {
		if r.Rating.RatingCount > 0 && (rated.RecipeID == "" || r.RecipeID < rated.RecipeID) {
			rated = r
		}
	}
	update(store.RecipeKey(rated.RecipeID), "SET ratingSum = ratingSum + :one", map[string]types.AttributeValue{":one": n("1")})
	var week drift.RecipeWeek
	for k := range before.Trending {
		if week.RecipeID == "" || k.RecipeID+k.Week < week.RecipeID+week.Week {
			week = k
		}
	}
	del(store.TrendingKey(week.RecipeID, week.Week))
	names = map[string]string{"#c": "count"}
	update(store.TrendingKey(week.RecipeID, "2020-W01"), "SET #c = :c, recipeId = :r, week = :w, itemType = :t, derived = :d", map[string]types.AttributeValue{
		":c": n("3"), ":r": str(week.RecipeID), ":w": str("2020-W01"), ":t": str(store.TypeTrending), ":d": &types.AttributeValueMemberBOOL{Value: true}})
	gone := before.Recents[0]
	del(store.RecentKey(gone.UserID, gone.CookDate, gone.HistoryID))
	stray := drift.Recent{RecipeID: rated.RecipeID, HistoryID: "h999", UserID: "mallory", CookDate: "2026-01-01T12:00:00Z", Title: "never cooked"}
	update(store.RecentKey(stray.UserID, stray.CookDate, stray.HistoryID), "SET recipeId = :r, historyId = :h, userId = :u, cookDate = :d, recipeTitle = :t, itemType = :it, derived = :yes",
		map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: stray.RecipeID}, ":h": &types.AttributeValueMemberS{Value: stray.HistoryID},
			":u": &types.AttributeValueMemberS{Value: stray.UserID}, ":d": &types.AttributeValueMemberS{Value: stray.CookDate},
			":t": &types.AttributeValueMemberS{Value: stray.Title}, ":it": &types.AttributeValueMemberS{Value: store.TypeRecentCooking},
			":yes": &types.AttributeValueMemberBOOL{Value: true}})

	f, err := st.Upkeep.ScanFacts(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	diffs := drift.Check(f)
	var got []string
	for _, d := range diffs {
		got = append(got, d.Kind+" "+d.Key+": want "+d.Want+", got "+d.Got)
	}
	want := []string{
		drift.KindReactionCounts + " comment c1: want 👍 3, got 🎉 1, 👍 4",
		drift.KindReactionCounts + " comment stray: want none, got 👍 2",
		drift.KindRecipeRating + " recipe " + rated.RecipeID + ": want " + ratingText(rated) + ", got " + ratingTextSum(rated, 1),
		drift.KindTrending + " recipe " + week.RecipeID + " week " + week.Week + ": want " + strconv.Itoa(before.Trending[week]) + ", got absent",
		drift.KindTrending + " recipe " + week.RecipeID + " week 2020-W01: want absent, got 3",
		drift.KindRecentCooking + " recipe " + gone.RecipeID + " history " + gone.HistoryID + ": want user " + gone.UserID + " cooked " + strconv.Quote(gone.Title) + " at " + gone.CookDate + ", got absent",
		drift.KindRecentCooking + " recipe " + stray.RecipeID + " history h999: want absent, got user mallory cooked \"never cooked\" at 2026-01-01T12:00:00Z",
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("differences (-want +got):\n%s", diff)
	}

	// A difference whose item changed after the scan is left alone.
	names = map[string]string{"#e": "🎉"}
	update(store.CountsKey("stray"), "SET counts.#e = :n", map[string]types.AttributeValue{":n": n("1")})
	mid, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		err := st.Upkeep.Repair(ctx, d, "test-run")
		if d.Key == "comment stray" {
			if !errors.Is(err, store.ErrChangedMeanwhile) {
				t.Errorf("repair of an item changed meanwhile: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("repair %s: %v", d.ID(), err)
		}
	}
	// The repairs are no news: the notifier maps their records to no
	// domain event.
	all, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	repairs := 0
	for _, rec := range all.Records[len(mid.Records):] {
		ch, err := notify.ToChange(rec)
		if err != nil {
			t.Fatal(err)
		}
		if ch.ItemType == store.TypeRecipe {
			repairs++
			if ch.New[devents.AttrRebuild] != "test-run" {
				t.Errorf("a repaired recipe without its run: %v", ch.New)
			}
		}
		if evs, err := devents.Map(ch); err != nil || len(evs) > 0 {
			t.Errorf("a repair's record %s %s means events: %+v %v", ch.ItemType, ch.Kind, evs, err)
		}
	}
	if repairs != 1 {
		t.Errorf("%d repaired recipe records, want 1", repairs)
	}

	f, err = st.Upkeep.ScanFacts(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	diffs = drift.Check(f)
	if len(diffs) != 1 || diffs[0].Key != "comment stray" {
		t.Fatalf("after the repairs: %+v", diffs)
	}
	if err := st.Upkeep.Repair(ctx, diffs[0], ""); err != nil {
		t.Fatal(err)
	}
	after := assertNoDrift(t, st)
	// The repaired table holds what the projector had derived.
	before.Scanned, after.Scanned = 0, 0
	before.Snapshot, after.Snapshot = nil, nil
	sortFacts(before)
	sortFacts(after)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("repaired facts differ from the projector's (-projector +repaired):\n%s", diff)
	}
}

func ratingText(r drift.Recipe) string { return ratingTextSum(r, 0) }

// ratingTextSum is how a difference shows r's rating with its sum moved
// by extra (the sort key as stored).
func ratingTextSum(r drift.Recipe, extra int) string {
	return fmt.Sprintf("%d ratings, sum %d, average %.2f, GSI2SK %s", r.Rating.RatingCount, r.Rating.RatingSum+extra, r.Rating.AvgRating, r.SortKey)
}

// sortFacts orders the lists of f, so that two scans compare.
func sortFacts(f *drift.Facts) {
	slices.SortFunc(f.Recents, func(a, b drift.Recent) int { return strings.Compare(a.RecipeID+a.HistoryID, b.RecipeID+b.HistoryID) })
	slices.SortFunc(f.Histories, func(a, b cooking.History) int { return strings.Compare(a.UserID+a.HistoryID, b.UserID+b.HistoryID) })
}

// TestDriftRooms: the rooms' newest snapshots and a deleted room's
// leftovers. A changed combined criteria, a missing compatibility and a
// deleted room's stray items are found and repaired.
func TestDriftRooms(t *testing.T) {
	t.Parallel()
	c, table, st := derivedScenario(t)
	ctx := context.Background()
	before := assertNoDrift(t, st)
	comb, err := st.Rooms.LatestCombined(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	compat := before.Rooms["r2"].Compatibility
	if compat == nil || len(before.Rooms) != 3 || before.Rooms["r4"] != nil { // r4 was deleted: its cascade left nothing
		t.Fatalf("the scenario's rooms: %+v", before.Rooms)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := c.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: store.CombinedKey("r1", comb.Timestamp).AV(),
		UpdateExpression: aws.String("SET criteria.locations = :l"), ExpressionAttributeValues: map[string]types.AttributeValue{
			":l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("Geneva")}}}}); err != nil {
		t.Fatal(err)
	}
	// Every compatibility version of r2 gone (one gone would leave the one
	// before it, which says the same here: dave's leaving changed nothing).
	versions, err := c.DB.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("ROOM#r2"), ":sk": s("COMPATIBILITY#")}})
	if err != nil || len(versions.Items) < 2 {
		t.Fatalf("r2's compatibility versions: %v %v", versions, err)
	}
	for _, it := range versions.Items {
		if _, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": it["PK"], "SK": it["SK"]}}); err != nil {
			t.Fatal(err)
		}
	}
	// Two feed entries lost: r1's RoomCreated and one of r3's CriteriaUpdated.
	var lost []string
	for roomID, typ := range map[string]string{"r1": room.ActivityRoomCreated, "r3": room.ActivityCriteriaUpdated} {
		feed, err := c.DB.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("ROOM#" + roomID), ":sk": s("ACTIVITY#")}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range feed.Items {
			if it["type"].(*types.AttributeValueMemberS).Value != typ {
				continue
			}
			if _, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": it["PK"], "SK": it["SK"]}}); err != nil {
				t.Fatal(err)
			}
			lost = append(lost, drift.KindRoomActivity+" room "+roomID+" "+typ)
			break
		}
	}
	if len(lost) != 2 {
		t.Fatalf("feed entries to lose: %v", lost)
	}
	// What the deleted r4's cascade missed: a feed entry, a UserRoom item,
	// a message of its chat (a plain chat room's message is nobody's
	// leftover).
	for k, typ := range map[store.Key]string{{PK: "ROOM#r4", SK: "ACTIVITY#2026-01-01T00:00:00.000Z#x"}: store.TypeActivity,
		store.UserRoomKey("eve", "r4"): store.TypeUserRoom, store.MessageKey("r4", "2026-01-01T00:00:00.000Z", "m1"): store.TypeMessage,
		store.MessageKey("r9", "2026-01-01T00:00:00.000Z", "m1"): store.TypeMessage} {
		it := k.AV()
		it["itemType"] = s(typ)
		if k.PK == store.ChatRoomPK("r4") {
			it["searchRoom"] = &types.AttributeValueMemberBOOL{Value: true}
		}
		if _, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := st.Upkeep.ScanFactsWith(ctx, 2, nil, projections.ExpectedActivities)
	if err != nil {
		t.Fatal(err)
	}
	f.Snapshot = projections.Snapshot
	all := drift.Check(f)
	var got []string
	var diffs []drift.Difference // the snapshots' and the cascade's
	for _, d := range all {
		if d.Kind == drift.KindRoomActivity {
			got = append(got, d.Kind+" room "+d.Activity.RoomID+" "+d.Activity.Type) // its time is the scenario's clock
			continue
		}
		diffs = append(diffs, d)
		got = append(got, d.Kind+" "+d.Key)
	}
	want := append([]string{drift.KindRoomCombined + " room r1", drift.KindRoomCompatibility + " room r2"}, lost...)
	want = append(want, drift.KindRoomCascade+" room r4")
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("differences (-want +got):\n%s", diff)
	}
	if d := diffs[0]; !strings.Contains(d.Want, `"locations":["Zurich"]`) || !strings.Contains(d.Got, `"locations":["Geneva"]`) {
		t.Errorf("combined: want %s\ngot %s", d.Want, d.Got)
	}
	if d := diffs[1]; d.Got != "absent" || d.Compatibility == nil {
		t.Errorf("compatibility: %+v", d)
	}
	if d := diffs[2]; d.Got != "3 item(s), e.g. CHATROOM#r4 / MSG#2026-01-01T00:00:00.000Z#m1" {
		t.Errorf("cascade: %s", d.Got)
	}
	for _, d := range all {
		if err := st.Upkeep.Repair(ctx, d, "test-run"); err != nil {
			t.Fatalf("repair %s: %v", d.ID(), err)
		}
	}
	assertNoDrift(t, st)
	got1, err := st.Rooms.LatestCombined(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(comb, got1); diff != "" {
		t.Errorf("r1's repaired combined criteria (-projector +repaired):\n%s", diff)
	}
}

// derivedScenario runs the rooms' scenario on a new table and derives it
// with the projector.
func derivedScenario(t *testing.T) (*ddb.Clients, string, *store.Store) {
	t.Helper()
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	runScenario(t, st)
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	for batch := range slices.Chunk(ev.Records, 100) {
		if resp, err := p.Handle(ctx, events.DynamoDBEvent{Records: batch}); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("projector: %v %+v", err, resp)
		}
	}
	return c, table, st
}

// A scan for drift cut off midway (a crash, Ctrl-C) goes on from the pages it
// read: only the rest is read, and the facts equal one whole scan's.
func TestDriftScanResumes(t *testing.T) {
	t.Parallel()
	_, _, st := derivedScenario(t)
	ctx := context.Background()
	whole, err := st.Upkeep.ScanFactsWith(ctx, 3, nil, projections.ExpectedActivities)
	if err != nil {
		t.Fatal(err)
	}
	cut, cancel := context.WithCancel(ctx)
	var journal []store.ScanPage
	_, err = st.Upkeep.ScanFactsFrom(cut, 3, 4, nil, func(n int64) {
		if n >= whole.Scanned/2 {
			cancel()
		}
	}, projections.ExpectedActivities, func(p store.ScanPage) error { journal = append(journal, p); return nil })
	if !errors.Is(err, context.Canceled) || len(journal) == 0 {
		t.Fatalf("cut off: %v after %d pages", err, len(journal))
	}
	var before int64
	done := 0
	for _, p := range journal {
		before += int64(p.Read)
		if p.After == nil {
			done++
		}
	}
	if before == 0 || before >= whole.Scanned || done == 3 {
		t.Fatalf("journal: %d of %d items, %d segments done", before, whole.Scanned, done)
	}
	var read int64
	got, err := st.Upkeep.ScanFactsFrom(ctx, 3, 0, journal, func(n int64) { read = n - before }, projections.ExpectedActivities, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(whole, got); d != "" {
		t.Fatalf("resumed facts differ from a whole scan's (-whole +resumed):\n%s", d)
	}
	if read != whole.Scanned-before {
		t.Errorf("the resumed scan read %d items, want the %d left", read, whole.Scanned-before)
	}
	if _, err := st.Upkeep.ScanFactsFrom(ctx, 2, 0, []store.ScanPage{{Segment: 2, Read: 1}}, nil, nil, nil); err == nil {
		t.Error("pages of a scan of 3 segments were taken for one of 2")
	}
}
