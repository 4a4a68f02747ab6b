package orders_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/examples/orders"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

func TestMain(m *testing.M) {
	ddblocal.MainLimited(m, ddblocal.Limits{Scale: 0.1, Unprocessed: 0.05, Seed: 1})
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }

// scenario writes orders for three customers — new ones, changed amounts,
// cancellations — and one poison order whose amount is text, and returns
// the totals the surviving valid orders make.
func scenario(t *testing.T, tbl *ddblocal.Table) map[string]any {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	amounts := map[[2]string]int{}
	put := func(c, o string, amount types.AttributeValue) {
		_, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
			"PK": s("CUSTOMER#" + c), "SK": s("ORDER#" + o), "amount": amount}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		c, o := fmt.Sprint("c", i%3), fmt.Sprint("o", i)
		a := 100 + rng.IntN(10000)
		put(c, o, n(a))
		amounts[[2]string{c, o}] = a
		if i%4 == 1 { // the amount changes
			a = 1 + rng.IntN(5000)
			put(c, o, n(a))
			amounts[[2]string{c, o}] = a
		}
		if i%7 == 3 { // cancelled
			_, err := tbl.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl.Name),
				Key: map[string]types.AttributeValue{"PK": s("CUSTOMER#" + c), "SK": s("ORDER#" + o)}})
			if err != nil {
				t.Fatal(err)
			}
			delete(amounts, [2]string{c, o})
		}
		if i == 13 {
			put("c1", "poison", s("twelve dollars")) // cannot be counted: dead-lettered
		}
	}
	// the expected state, as TableState reads it: each customer's totals
	want := map[string][2]int{}
	for k, a := range amounts {
		w := want[k[0]]
		want[k[0]] = [2]int{w[0] + 1, w[1] + a}
	}
	out := map[string]any{}
	for c, w := range want {
		out["CUSTOMER#"+c] = map[string]any{"PK": "CUSTOMER#" + c, "SK": orders.TotalsSK, "derived": true,
			"orders": replay.Number(fmt.Sprint(w[0])), "cents": replay.Number(fmt.Sprint(w[1]))}
	}
	return out
}

// captured makes a table, runs the scenario on it and captures its stream.
func captured(t *testing.T) (*ddblocal.Table, events.DynamoDBEvent, map[string]any) {
	t.Helper()
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	want := scenario(t, tbl)
	ev, err := replay.Capture(context.Background(), tbl.Streams, tbl.StreamARN)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, ev, want
}

// totalsByCustomer turns TableState's items into the totals per customer
// (the markers aside).
func totalsByCustomer(state any) map[string]any {
	out := map[string]any{}
	for _, it := range state.([]map[string]any) {
		if it["SK"] == orders.TotalsSK {
			out[it["PK"].(string)] = it
		}
	}
	return out
}

func target(tbl *ddblocal.Table, h stream.Handler, want map[string]any) replay.Target {
	// totals and markers; a marker's ttl is counted from the real time, so
	// it differs from run to run and is left out
	ts := replay.TableState{DB: tbl.DB, Table: tbl.Name, Derived: replay.DerivedFlag, Ignore: []string{"ttl"}}
	return replay.Target{
		Handler:   h,
		Filter:    orders.Filter,                                   // as the mapping filters
		OnFailure: replay.OnFailure{MaxRetries: stream.Retries(2)}, // as the event source mapping would be set (it bisects)
		Reset:     ts.Reset,
		State:     ts.State,
		Expect: func(state any) error {
			return replay.Want(want)(totalsByCustomer(state))
		},
	}
}

// The correct projection passes every schedule, its baseline is the
// expected totals, and the poison order is dead-lettered, alone, with its
// reason, in every run.
func TestTotalsUnderReplay(t *testing.T) {
	tbl, ev, want := captured(t)
	ctx := context.Background()
	// the kit crashes the handler between two of its requests through this
	// client (replay.APIOption; it does nothing outside a replay)
	db := dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	p := &orders.Totals{DB: db, Table: tbl.Name}
	// 16 schedules; 8 under -short (a quick run's: make test's)
	seq, par := 10, 6
	if testing.Short() {
		seq, par = 4, 4
	}
	// and as a Kinesis data stream for DynamoDB would deliver the same
	// changes (repeated, one order's records out of order): the handler
	// is the same for either source
	schedules := slices.Concat(replay.Schedules(7, seq), replay.Parallel(replay.Schedules(8, par), 4),
		replay.KinesisSchedules(9, par/4), replay.Parallel(replay.KinesisSchedules(10, par/4), 4))
	rep, err := replay.Check(ctx, ev, target(tbl, p.Handler(), want), schedules)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	dls := rep.BaselineStats.DeadLetters
	if len(dls) != 1 || len(dls[0].Event.Records) != 1 || dls[0].Event.Records[0].Change.Keys["SK"].String() != "ORDER#poison" ||
		!strings.Contains(dls[0].Error, "orders: bad order: CUSTOMER#c1 ORDER#poison has no numeric amount") {
		t.Fatalf("dead letters: %+v", dls)
	}
}

// The naive projection is caught: this test passes only because the kit
// fails it.
func TestNaiveTotalsAreCaught(t *testing.T) {
	tbl, ev, want := captured(t)
	ctx := context.Background()
	p := &orders.NaiveTotals{DB: tbl.DB, Table: tbl.Name}
	rep, err := replay.Check(ctx, ev, target(tbl, p.Handler(), want), replay.Schedules(7, 10))
	if err != nil {
		t.Fatal(err)
	}
	err = rep.Err()
	if err == nil {
		t.Fatal("the replay kit passed the naive projection")
	}
	if rep.BaselineErr == nil || len(rep.Differing()) == 0 || !strings.Contains(err.Error(), "duplicates only") {
		t.Fatalf("want the baseline wrong (no removals, no changes) and the duplicates caught:\n%v", err)
	}
	t.Log(rep.Summary())
}

// Live, on a stream.Runner: the same handler keeps up with the table, the
// poison order is dead-lettered with its reason after the retries, and
// the totals are the expected ones.
func TestTotalsOnARunner(t *testing.T) {
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	want := scenario(t, tbl)
	p := &orders.Totals{DB: tbl.DB, Table: tbl.Name}
	dl := &stream.MemoryDeadLetters{}
	r := &stream.Runner{
		Config:      stream.Config{StreamARN: tbl.StreamARN, Consumer: "totals", Filter: orders.Filter, MaxRetries: stream.Retries(2), RetryBackoff: time.Millisecond, PollInterval: 20 * time.Millisecond},
		API:         tbl.Streams,
		Checkpoints: &stream.MemoryCheckpoints{},
		DeadLetters: dl,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, p.Handler()) }()
	ts := replay.TableState{DB: tbl.DB, Table: tbl.Name, Derived: orders.IsTotals}
	deadline := time.Now().Add(30 * time.Second)
	for {
		state, err := ts.State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if replay.Want(want)(totalsByCustomer(state)) == nil && len(dl.All()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %v\ndead letters %+v", replay.Want(want)(totalsByCustomer(state)), dl.All())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d := dl.All()[0]
	if len(d.Event.Records) != 1 || !strings.Contains(d.Error, "has no numeric amount") || d.Attempts != 3 {
		t.Fatalf("dead letter: %+v", d)
	}
	if st := r.Stats(); st.FilteredOut == 0 || st.Skipped != 0 {
		t.Errorf("the filter filtered out nothing, or the guard behind it skipped some: %+v", st)
	}
}

// The example is a user's module: what it gets from the library is the
// library's own modules and their requirements — the AWS SDK (with config,
// which stream's example uses), aws-lambda-go (whose go.mod brings testify
// and its three requirements along, never built), the JSON decoder and
// go-cmp — and nothing of the application's.
func TestModuleGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}}", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/dynastream/dynastream/", "github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go",
		"github.com/aws/aws-lambda-go", "github.com/go-json-experiment/json", "github.com/google/go-cmp",
		// aws-lambda-go's own test requirements
		"github.com/stretchr/testify", "github.com/davecgh/go-spew", "github.com/pmezard/go-difflib", "gopkg.in/yaml.v3",
	}
	mods := strings.Fields(string(out))
	for _, m := range mods[1:] {
		if !slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(m, a) }) {
			t.Errorf("the module graph has %s", m)
		}
	}
	t.Logf("go list -m all: %d modules besides this one", len(mods)-1)
}

// The example, its program included, uses the public packages only: the
// library modules, never the application's internal or cmd packages (a
// module's own internal packages, such as stream's decoder, come with it).
func TestUsesOnlyPublicPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/dynastream/dynastream/internal/") || strings.HasPrefix(p, "github.com/dynastream/dynastream/cmd/") {
			t.Errorf("imports %s", p)
		}
	}
}

// A TTL deletion is a removal, whether it comes as AWS sends it (REMOVE
// by dynamodb.amazonaws.com) or as DynamoDB Local does (another event
// name, no new image): the totals drop the expired orders, and the replay
// kit's SourceTable moves the table through them.
func TestTTLDeletionsAreRemovals(t *testing.T) {
	tbl, ev, want := captured(t)
	// Two live orders expire: take their newest records as the deleted
	// images.
	last := map[string]events.DynamoDBEventRecord{}
	var maxSeq int64
	for _, r := range ev.Records {
		var seq int64
		fmt.Sscan(r.Change.SequenceNumber, &seq)
		maxSeq = max(maxSeq, seq)
		k := r.Change.Keys["PK"].String() + "/" + r.Change.Keys["SK"].String()
		if r.EventName == "REMOVE" {
			delete(last, k)
		} else if strings.HasPrefix(r.Change.Keys["SK"].String(), "ORDER#o") {
			last[k] = r
		}
	}
	var expired []events.DynamoDBEventRecord
	for _, k := range slices.Sorted(maps.Keys(last))[:2] {
		expired = append(expired, last[k])
	}
	for i, r := range expired {
		ttl := r
		ttl.EventID = fmt.Sprint("ttl-", i)
		ttl.Change.SequenceNumber = fmt.Sprintf("%021d", maxSeq+int64(i)+1)
		ttl.Change.OldImage, ttl.Change.NewImage = r.Change.NewImage, nil
		if i == 0 { // as AWS sends it
			ttl.EventName = "REMOVE"
			ttl.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
		} else { // as DynamoDB Local sends it
			ttl.EventName = "UNKNOWN_TO_SDK_VERSION"
		}
		ev.Records = append(ev.Records, ttl)
		c := r.Change.Keys["PK"].String()
		w := want[c].(map[string]any)
		var orders, cents int64
		fmt.Sscan(string(w["orders"].(replay.Number)), &orders)
		fmt.Sscan(string(w["cents"].(replay.Number)), &cents)
		var amount int64
		fmt.Sscan(r.Change.NewImage["amount"].Number(), &amount)
		w["orders"], w["cents"] = replay.Number(fmt.Sprint(orders-1)), replay.Number(fmt.Sprint(cents-amount))
	}
	db := dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	p := &orders.Totals{DB: db, Table: tbl.Name}
	tg := target(tbl, p.Handler(), want)
	tg.Source = &replay.SourceTable{DB: tbl.DB, Table: tbl.Name}
	rep, err := replay.Check(context.Background(), ev, tg, replay.Schedules(28, 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}
