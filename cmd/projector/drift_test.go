//go:build !lambda.norpc

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// run runs the built projector with args against table; it returns the
// standard output, the standard error and the exit status.
func run(t *testing.T, bin, table string, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, bin, table, t.TempDir(), args...)
}

// runIn is run with LOCAL_DIR set to dir (where the scan's journal goes).
func runIn(t *testing.T, bin, table, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DYNAMODB_TABLE_NAME="+table, "DYNAMODB_ENDPOINT="+ddbtest.Endpoint(), "AWS_LAMBDA_RUNTIME_API=", "LOCAL_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// setUp builds the projector and makes a table for it.
func setUp(t *testing.T) (bin string, c *ddb.Clients, table, arn string, st *store.Store) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), "projector")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	c, table, arn = ddbtest.Table(t)
	return bin, c, table, arn, store.New(c.DB, table)
}

// TestVerifyAndRebuild runs `projector verify` and `projector rebuild` as
// built on a table the projector derived: no differences; then a corrupted
// count, a deleted trending item, a stray recent item, a lowered and a
// stray access item are each reported (exit 1), rebuild repairs them, and
// verify reports 0 again.
func TestVerifyAndRebuild(t *testing.T) {
	bin, c, table, arn, st := setUp(t)
	ctx := context.Background()
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	ts := func() string { at = at.Add(time.Second); return store.Timestamp(at) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.Cooking.CreateRecipe(ctx, cooking.Recipe{RecipeID: "r1", AuthorID: "alice", Title: "Pho", Method: "boil", Steps: []string{"boil"}, Servings: 2,
		Ingredients: []cooking.RecipeIngredient{{IngredientID: "i1", Quantity: 1, Unit: "g"}}, CreatedAt: ts(), UpdatedAt: ts()}))
	for i, u := range []string{"bob", "carol", "dave"} {
		when := ts()
		must(st.Cooking.RecordCooking(ctx, cooking.History{UserID: u, HistoryID: fmt.Sprintf("h%d", i), RecipeID: "r1", RecipeTitle: "Pho",
			CookDate: fmt.Sprintf("2026-01-0%dT12:00:00Z", 5+i), Rating: 3 + i%2, CreatedAt: when, UpdatedAt: when}))
	}
	must(st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Quest, ResourceID: "q1", Title: "t", OwnerID: "alice", CreatedAt: ts()}))
	for _, u := range []string{"alice", "bob"} {
		_, err := st.Collab.AddReaction(ctx, collab.Reaction{CommentID: "c1", ResourceType: collab.Quest, ResourceID: "q1", UserID: u, Emoji: "👍", CreatedAt: ts()})
		must(err)
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	must(err)
	p := &projections.Projector{Store: st}
	// the records, then those of the recipes' pending counts it drains
	if _, err := replay.Deliver(ctx, ev, replay.Target{Handler: p.Handle, Follow: ddbtest.FollowPending(t, c.Streams, arn)}, replay.AsCaptured); err != nil {
		t.Fatal(err)
	}

	out, logs, code := run(t, bin, table, "verify", "-recheck", "0")
	if code != 0 || !strings.HasPrefix(out, "0 difference(s) in ") {
		t.Fatalf("verify of a derived table: %d\n%s\n%s", code, out, logs)
	}

	n := &types.AttributeValueMemberN{Value: "7"}
	_, err = c.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: store.CountsKey("c1").AV(),
		UpdateExpression: aws.String("SET counts.#e = :n"), ExpressionAttributeNames: map[string]string{"#e": "👍"}, ExpressionAttributeValues: map[string]types.AttributeValue{":n": n}})
	must(err)
	_, err = c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: store.TrendingKey("r1", "2026-W02").AV()})
	must(err)
	stray := map[string]types.AttributeValue{}
	for k, v := range store.RecentKey("eve", "2026-01-09T12:00:00Z", "h9").AV() {
		stray[k] = v
	}
	for k, v := range map[string]string{"itemType": store.TypeRecentCooking, "recipeId": "r1", "historyId": "h9", "userId": "eve", "cookDate": "2026-01-09T12:00:00Z", "recipeTitle": "Pho"} {
		stray[k] = &types.AttributeValueMemberS{Value: v}
	}
	_, err = c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: stray})
	must(err)
	// the owner's access item lowered, a stranger's written
	_, err = c.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: store.AccessKey(collab.Quest, "q1", "alice").AV(),
		UpdateExpression: aws.String("SET #r = :c"), ExpressionAttributeNames: map[string]string{"#r": "role"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: collab.RoleCollaborator}}})
	must(err)
	stranger := store.AccessKey(collab.Quest, "q1", "mallory").AV()
	for k, v := range map[string]string{"itemType": store.TypeResourceAccess, "userId": "mallory", "resourceType": "quest", "resourceId": "q1", "role": "owner"} {
		stranger[k] = &types.AttributeValueMemberS{Value: v}
	}
	_, err = c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: stranger})
	must(err)

	out, logs, code = run(t, bin, table, "verify", "-recheck", "100ms")
	want := []string{
		"reaction counts: 1 difference(s)",
		"  comment c1: want 👍 2, got 👍 7",
		"trending: 1 difference(s)",
		"  recipe r1 week 2026-W02: want 3, got absent",
		"recent cooking: 1 difference(s)",
		`  recipe r1 history h9: want absent, got user eve cooked "Pho" at 2026-01-09T12:00:00Z`,
		"resource access: 2 difference(s)",
		"  quest q1 user alice: want owner, got collaborator",
		"  quest q1 user mallory: want absent, got owner",
	}
	if code != 1 || !strings.HasPrefix(out, strings.Join(want, "\n")+"\n5 difference(s) in ") {
		t.Fatalf("verify of a corrupted table: exit %d\n%s\nwant\n%s\n%s", code, out, strings.Join(want, "\n"), logs)
	}
	if !strings.Contains(logs, `"msg":"rescan done"`) {
		t.Errorf("no recheck in the log:\n%s", logs)
	}
	out, logs, code = run(t, bin, table, "rebuild", "-dry-run", "-recheck", "0")
	if code != 1 || !strings.Contains(out, "5 difference(s)") || !strings.Contains(out, "nothing written (-dry-run)") {
		t.Fatalf("rebuild -dry-run: exit %d\n%s\n%s", code, out, logs)
	}
	out, logs, code = run(t, bin, table, "rebuild", "-recheck", "0", "-json")
	if code != 0 || !strings.Contains(out, `"kind":"trending","key":"recipe r1 week 2026-W02","want":"3","got":"absent"`) || !strings.Contains(out, ": 5 repaired (") {
		t.Fatalf("rebuild: exit %d\n%s\n%s", code, out, logs)
	}
	if out, logs, code := run(t, bin, table, "verify"); code != 0 || !strings.HasPrefix(out, "0 difference(s) in ") {
		t.Fatalf("verify after the rebuild: %d\n%s\n%s", code, out, logs)
	}
	if _, logs, code := run(t, bin, table, "verify", "-segments", "0"); code != 1 || !strings.Contains(logs, "-segments 0: want 1..1000") {
		t.Errorf("bad flag: %d %s", code, logs)
	}
}

// A scan cut off midway leaves its journal; the next verify goes on from
// it, reads only the rest, finds what a whole scan finds, and removes it.
func TestScanJournal(t *testing.T) {
	bin, c, table, arn, st := setUp(t)
	ctx := context.Background()
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	if err := st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Quest, ResourceID: "q1", Title: "t", OwnerID: "alice", CreatedAt: store.Timestamp(at)}); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		at = at.Add(time.Second)
		_, err := st.Collab.AddReaction(ctx, collab.Reaction{CommentID: fmt.Sprint("c", i%6), ResourceType: collab.Quest, ResourceID: "q1",
			UserID: fmt.Sprint("u", i), Emoji: "👍", CreatedAt: store.Timestamp(at)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	p := &projections.Projector{Store: st}
	if _, err := replay.Deliver(ctx, ev, replay.Target{Handler: p.Handle, Follow: ddbtest.FollowPending(t, c.Streams, arn)}, replay.AsCaptured); err != nil {
		t.Fatal(err)
	}
	whole, err := st.Upkeep.ScanFacts(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "projector-scan-"+table+".jsonl")
	j, pages, err := openJournal(path, table, 2, false)
	if err != nil || pages != nil {
		t.Fatalf("a new journal: %v %v", pages, err)
	}
	cut, cancel := context.WithCancel(ctx)
	_, err = st.Upkeep.ScanFactsFrom(cut, 2, 5, nil, func(n int64) {
		if n >= whole.Scanned/2 {
			cancel()
		}
	}, projections.ExpectedActivities, j.add)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cut off: %v", err)
	}
	if err := j.close(false); err != nil {
		t.Fatal(err)
	}
	// a crash in the middle of a line
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"segment":1,"read":5,"items":[{"PK":{"S":"COMM`)
	f.Close()
	j, pages, err = openJournal(path, table, 2, false)
	if err != nil || len(pages) == 0 {
		t.Fatalf("reopened: %d pages, %v", len(pages), err)
	}
	j.close(false)
	var before int64
	for _, p := range pages {
		before += int64(p.Read)
	}
	if before == 0 || before >= whole.Scanned {
		t.Fatalf("the journal holds %d of %d items", before, whole.Scanned)
	}
	got, err := st.Upkeep.ScanFactsFrom(ctx, 2, 0, pages, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Scanned != whole.Scanned || fmt.Sprint(got.Reactions) != fmt.Sprint(whole.Reactions) || fmt.Sprint(got.Counts) != fmt.Sprint(whole.Counts) {
		t.Fatalf("resumed %d items %v %v, whole %d %v %v", got.Scanned, got.Reactions, got.Counts, whole.Scanned, whole.Reactions, whole.Counts)
	}
	// The command: -segments must match the journal's (2) to go on with it.
	out, logs, code := runIn(t, bin, table, dir, "verify", "-recheck", "0", "-segments", "2")
	if code != 0 || !strings.HasPrefix(out, "0 difference(s) in ") || !strings.Contains(logs, "going on with an interrupted scan") {
		t.Fatalf("verify with a journal: %d\n%s\n%s", code, out, logs)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal of a complete scan is still there: %v", err)
	}
	// another scan's journal (other segments) is not taken: started anew
	j, _, _ = openJournal(path, table, 3, false)
	j.close(false)
	if _, pages, _ := openJournal(path, table, 2, false); pages != nil {
		t.Errorf("a journal of 3 segments was taken for a scan of 2: %d pages", len(pages))
	}
}
