package replay_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// sales is a stream of 36 sales of three shops, one every 7 seconds from
// 10:00:30: five one-minute windows (the first and last partial).
func sales() (events.DynamoDBEvent, map[string]int) {
	var ev events.DynamoDBEvent
	t0 := time.Date(2026, 11, 27, 10, 0, 30, 0, time.UTC)
	want := map[string]int{}
	for i := range 36 {
		at := t0.Add(time.Duration(i*7) * time.Second)
		shop := []string{"A", "B", "C"}[i%3]
		amount := 1 + i%5
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			EventID: fmt.Sprintf("sale-%d", i), EventName: "INSERT", EventSourceArn: "arn:aws:dynamodb:us-east-1:1:table/sales/stream/x",
			Change: events.DynamoDBStreamRecord{
				SequenceNumber:              fmt.Sprintf("%021d", i+1),
				ApproximateCreationDateTime: events.SecondsEpochTime{Time: at},
				Keys: map[string]events.DynamoDBAttributeValue{
					"PK": events.NewStringAttribute("SHOP#" + shop), "SK": events.NewStringAttribute(fmt.Sprintf("SALE#%03d", i))},
				NewImage: map[string]events.DynamoDBAttributeValue{
					"PK": events.NewStringAttribute("SHOP#" + shop), "SK": events.NewStringAttribute(fmt.Sprintf("SALE#%03d", i)),
					"amount": events.NewNumberAttribute(strconv.Itoa(amount))},
			}})
		want[at.Truncate(time.Minute).Format("15:04")] += amount
	}
	return ev, want
}

// windowed is a windowed consumer of sales: each call adds the amounts to
// the window's state; the final call writes the window's total, set (put)
// or, when add is true, added to what is there (not idempotent).
func windowed(db *dynamodb.Client, table string, add bool) stream.WindowHandler {
	return func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		total, _ := strconv.Atoi(ev.State["total"])
		if !ev.IsFinalInvokeForWindow {
			for _, r := range ev.Records {
				n, _ := strconv.Atoi(r.Change.NewImage["amount"].Number())
				total += n
			}
			return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
				State: map[string]string{"total": strconv.Itoa(total)}}}, nil
		}
		key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "WINDOW#" + ev.Window.Start.UTC().Format("15:04")}, "SK": &types.AttributeValueMemberS{Value: "TOTAL"}}
		var err error
		if add {
			_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key,
				UpdateExpression: aws.String("ADD #t :n SET derived = :t"), ExpressionAttributeNames: map[string]string{"#t": "total"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(total)}, ":t": &types.AttributeValueMemberBOOL{Value: true}}})
		} else {
			item := map[string]types.AttributeValue{"total": &types.AttributeValueMemberN{Value: strconv.Itoa(total)}, "derived": &types.AttributeValueMemberBOOL{Value: true}}
			for k, v := range key {
				item[k] = v
			}
			_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		}
		return events.DynamoDBTimeWindowEventResponse{}, err
	}
}

func windowTable(t *testing.T) (*dynamodb.Client, replay.TableState) {
	t.Helper()
	tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK"))
	db := dynamodb.New(tbl.DB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, replay.APIOption) })
	return db, replay.TableState{DB: db, Table: tbl.Name, Derived: replay.DerivedFlag}
}

// totals reads the windows' totals out of a TableState's state.
func totals(state any) map[string]int {
	out := map[string]int{}
	for _, it := range state.([]map[string]any) {
		n, _ := strconv.Atoi(fmt.Sprint(it["total"]))
		out[strings.TrimPrefix(it["PK"].(string), "WINDOW#")] = n
	}
	return out
}

// A windowed aggregate whose final call puts the window's total is exact
// under every schedule: duplicates (the stream read twice, from fresh
// windows), random batches, injected failures and crashes between
// requests, which hit the final calls too.
func TestWindowedAggregateExact(t *testing.T) {
	ev, want := sales()
	db, ts := windowTable(t)
	target := replay.Target{
		WindowHandler: windowed(db, ts.Table, false), Window: time.Minute,
		Reset: ts.Reset, State: ts.State,
		Expect: func(state any) error { return replay.Want(want)(totals(state)) },
	}
	rep, err := replay.Check(context.Background(), ev, target, append(replay.Fixed(), replay.Schedules(11, 12)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("%s\n%v", rep.Summary(), err)
	}
	if len(want) != 5 {
		t.Fatalf("windows %v", want)
	}
}

// The same aggregate added (ADD) at the final call is not idempotent: a
// final call crashed after its write, or a stream read twice, adds the
// window twice. The kit says so.
func TestWindowedAggregateNotIdempotentCaught(t *testing.T) {
	ev, want := sales()
	db, ts := windowTable(t)
	target := replay.Target{
		WindowHandler: windowed(db, ts.Table, true), Window: time.Minute,
		Reset: ts.Reset, State: ts.State,
		Expect: func(state any) error { return replay.Want(want)(totals(state)) },
	}
	rep, err := replay.Check(context.Background(), ev, target, replay.Fixed())
	if err != nil {
		t.Fatal(err)
	}
	if rep.BaselineErr != nil {
		t.Fatalf("baseline: %v", rep.BaselineErr)
	}
	differ := 0
	for _, r := range rep.Runs {
		if r.Differs() {
			differ++
		}
	}
	if differ == 0 {
		t.Fatalf("no schedule caught the non-idempotent final: %s", rep.Summary())
	}
}

// Windows take ParallelizationFactor 1 only, as Lambda; a Target has a
// Handler or a WindowHandler.
func TestWindowedRefusals(t *testing.T) {
	ev, _ := sales()
	wh := func(context.Context, events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		return events.DynamoDBTimeWindowEventResponse{}, nil
	}
	for _, c := range []struct {
		t    replay.Target
		s    replay.Schedule
		want string
	}{
		{replay.Target{WindowHandler: wh, Window: time.Minute}, replay.Schedule{Name: "pf", ParallelizationFactor: 2}, "ParallelizationFactor 2 with tumbling windows"},
		{replay.Target{WindowHandler: wh, Window: 16 * time.Minute}, replay.Schedule{Name: "big"}, "1s to 900s"},
		{replay.Target{WindowHandler: wh, Window: time.Minute, Handler: func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return events.DynamoDBEventResponse{}, nil
		}}, replay.Schedule{Name: "both"}, "give one"},
	} {
		if _, err := replay.Deliver(context.Background(), ev, c.t, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.s.Name, err, c.want)
		}
	}
}

// The kit hands a windowed consumer the stream's order (a shard's records
// in order: https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html;
// records interleaved across a window's boundary are not documented, see
// stream's TestWindowsInterleaved): records of two
// windows created near their boundary interleave as a shard's can (W1,
// W2, W1, W2), each goes into its own window, and each window's final
// call has its whole, under every schedule (the shuffling ones interleave
// keys within WindowGrace of each other).
func TestWindowsInterleavedInStreamOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var ev events.DynamoDBEvent
	for i, at := range []time.Duration{58, 61, 59, 62, 59, 63, 125} { // seconds after t0
		r := record(i+1, []string{"A", "B", "C"}[i%3], i+1)
		r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: t0.Add(at * time.Second)}
		ev.Records = append(ev.Records, r)
	}
	totals := map[string]int{}
	var order []string // the window of each call with records, in order
	target := replay.Target{
		Window: time.Minute,
		WindowHandler: func(_ context.Context, w events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
			sum, _ := strconv.Atoi(w.State["sum"])
			if w.IsFinalInvokeForWindow {
				totals[w.Window.Start.UTC().Format("15:04")] = sum
				return events.DynamoDBTimeWindowEventResponse{}, nil
			}
			order = append(order, w.Window.Start.UTC().Format("15:04"))
			for _, r := range w.Records {
				v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
				sum += v
			}
			return events.DynamoDBTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
				State: map[string]string{"sum": strconv.Itoa(sum)}}}, nil
		},
		NoRequests: true,
		Reset:      func(context.Context) error { clear(totals); order = nil; return nil },
		State:      func(context.Context) (any, error) { return maps.Clone(totals), nil },
		Expect: func(state any) error {
			return replay.Want(map[string]int{"10:00": 1 + 3 + 5, "10:01": 2 + 4 + 6, "10:02": 7})(state)
		},
	}
	if _, err := replay.Deliver(context.Background(), ev, target, replay.Schedule{Name: "in order", MaxBatch: 100}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"10:00", "10:01", "10:00", "10:01", "10:00", "10:01", "10:02"}; !slices.Equal(order, want) {
		t.Errorf("calls by window %v, want the stream's order %v", order, want)
	}
	rep, err := replay.Check(context.Background(), ev, target, append(replay.Fixed(), replay.Schedules(5, 20)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("%s\n%v", rep.Summary(), err)
	}
}
