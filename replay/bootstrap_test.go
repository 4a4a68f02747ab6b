package replay_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream/filter"
)

// inventory is a stream with both images (NEW_AND_OLD_IMAGES): six items
// created, changed several times (one back to an earlier value), two
// removed and one of those created again.
func inventory() events.DynamoDBEvent {
	var ev events.DynamoDBEvent
	images := map[string]map[string]events.DynamoDBAttributeValue{}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	seq := 0
	change := func(item string, qty int, remove bool) {
		seq++
		keys := map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(item), "SK": events.NewStringAttribute("STOCK")}
		old := images[item]
		var img map[string]events.DynamoDBAttributeValue
		name := "REMOVE"
		if !remove {
			img = map[string]events.DynamoDBAttributeValue{"PK": keys["PK"], "SK": keys["SK"], "qty": events.NewNumberAttribute(strconv.Itoa(qty))}
			name = map[bool]string{true: "MODIFY", false: "INSERT"}[old != nil]
		}
		images[item] = img
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{EventID: fmt.Sprintf("e%d", seq), EventName: name,
			EventSourceArn: "arn:aws:dynamodb:us-east-1:1:table/stock/stream/x",
			Change: events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprintf("%021d", seq), Keys: keys, OldImage: old, NewImage: img,
				ApproximateCreationDateTime: events.SecondsEpochTime{Time: t0.Add(time.Duration(seq) * time.Second)}, StreamViewType: "NEW_AND_OLD_IMAGES"}})
	}
	for round := range 4 {
		for i, item := range []string{"A", "B", "C", "D", "E", "F"} {
			change(item, 10*round+i, false)
		}
	}
	change("B", 7, false)
	change("B", 30+1, false) // back to an earlier value
	change("C", 0, true)
	change("E", 0, true)
	change("E", 99, false)
	change("A", 5, false)
	return ev
}

// stock is a consumer kept both ways: each item's quantity set from its
// image, and a total kept by differences (new minus old), guarded by the
// record's eventID as an at-least-once consumer must be: a change the scan
// already held, applied again from the stream (another eventID), or one
// skipped, shows in the total.
type stock struct {
	qty     map[string]int
	total   int
	applied map[string]bool
}

func (s *stock) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	q := func(img map[string]events.DynamoDBAttributeValue) int {
		if v, ok := img["qty"]; ok {
			n, _ := strconv.Atoi(v.Number())
			return n
		}
		return 0
	}
	for _, r := range ev.Records {
		pk := r.Change.Keys["PK"].String()
		if s.applied[r.EventID] {
			continue
		}
		s.applied[r.EventID] = true
		s.total += q(r.Change.NewImage) - q(r.Change.OldImage)
		if len(r.Change.NewImage) == 0 {
			delete(s.qty, pk)
		} else {
			s.qty[pk] = q(r.Change.NewImage)
		}
	}
	return events.DynamoDBEventResponse{}, nil
}

// A consumer started from a scan (the kit's bootstrap schedules: a cut, a
// scan that sees each item at its own moment while the stream goes on, then
// the stream from the cut through the ordering rule) reaches the state of
// one that read the stream from the start: scan plus stream equals stream.
func TestBootstrapSchedules(t *testing.T) {
	ev := inventory()
	s := &stock{qty: map[string]int{}, applied: map[string]bool{}}
	target := replay.Target{
		Handler: s.handle, NoRequests: true,
		Reset: func(context.Context) error {
			s.qty, s.total, s.applied = map[string]int{}, 0, map[string]bool{}
			return nil
		},
		State: func(context.Context) (any, error) { return fmt.Sprint(maps.Clone(s.qty), " total ", s.total), nil },
	}
	rep, err := replay.Check(context.Background(), ev, target, replay.BootstrapSchedules(3, 40))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("%s\n%v", rep.Summary(), err)
	}
	t.Log(rep.Summary(), "; baseline ", rep.Baseline)
}

// With the mapping's filter (here: item C is not the consumer's), the Gate
// still sees every record, so a record the filter drops still tells it
// where its item is: scan plus stream equals the filtered stream.
func TestBootstrapSchedulesFiltered(t *testing.T) {
	ev := inventory()
	s := &stock{qty: map[string]int{}, applied: map[string]bool{}}
	target := replay.Target{
		Handler: s.handle, NoRequests: true,
		Filter: filter.MustCriteria(`{"dynamodb":{"Keys":{"PK":{"S":[{"anything-but":["C"]}]}}}}`),
		Reset: func(context.Context) error {
			s.qty, s.total, s.applied = map[string]int{}, 0, map[string]bool{}
			return nil
		},
		State: func(context.Context) (any, error) { return fmt.Sprint(maps.Clone(s.qty), " total ", s.total), nil },
	}
	rep, err := replay.Check(context.Background(), ev, target, replay.BootstrapSchedules(5, 30))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("%s\n%v", rep.Summary(), err)
	}
}

// A poison item read by the scan is dead-lettered under its snapshot
// record's eventID, which no stream record has: under a bootstrap schedule
// the kit compares dead letters by item, so a correct consumer that gives
// up on item D shows no difference from the baseline, which gave up on
// D's stream records. (Bootstrap is the project's own: AWS documents
// nothing like it for a stream's mapping.)
func TestBootstrapSchedulesPoisonItem(t *testing.T) {
	ev := inventory()
	s := &stock{qty: map[string]int{}, applied: map[string]bool{}}
	target := replay.Target{
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range ev.Records {
				if r.Change.Keys["PK"].String() == "D" {
					return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
				}
				if _, err := s.handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}}); err != nil {
					return events.DynamoDBEventResponse{}, err
				}
			}
			return events.DynamoDBEventResponse{}, nil
		},
		NoRequests: true,
		Reset: func(context.Context) error {
			s.qty, s.total, s.applied = map[string]int{}, 0, map[string]bool{}
			return nil
		},
		State: func(context.Context) (any, error) { return fmt.Sprint(maps.Clone(s.qty), " total ", s.total), nil },
	}
	rep, err := replay.Check(context.Background(), ev, target, replay.BootstrapSchedules(7, 10))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("%s\n%v", rep.Summary(), err)
	}
	if items := rep.BaselineStats.DeadLetteredItems(); len(items) != 1 || items[0] != `PK={"S":"D"}, SK={"S":"STOCK"}` {
		t.Errorf("baseline gave up on %v", items)
	}
}
