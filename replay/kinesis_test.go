package replay_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/replay"
)

// A Kinesis schedule delivers every record at least once, as DynamoDB
// wrote it, some twice, with times to the microsecond in the order of one
// item's writes (the records here all have the same, zero, time), one item's records out of order by no more than
// Reorder places among the item's (a later version passes an earlier one
// by at most Reorder versions), and numbers what it delivers anew, in the
// order delivered, as a Kinesis shard numbers what is put to it.
// (DynamoDB Developer Guide, "Change data capture for Kinesis Data
// Streams with DynamoDB": one item's records may appear in another order
// than its changes, and more than once; paraphrased, the page could not
// be read here.)
func TestKinesisOrder(t *testing.T) {
	ev := streamOf(12, "A", "B", "C")
	byID := map[string]events.DynamoDBEventRecord{}
	for _, r := range ev.Records {
		byID[r.EventID] = r
	}
	var repeated, reordered int
	for _, s := range replay.KinesisSchedules(7, 50) {
		s.Duplicate = false // the whole stream again would pass every version back
		got := replay.Order(ev, s)
		seen := map[string]int{}
		prev := ""
		for _, r := range got {
			seen[r.EventID]++
			orig := byID[r.EventID]
			if r.Change.NewImage["version"] != orig.Change.NewImage["version"] || r.EventName != orig.EventName {
				t.Fatalf("%s: record %s changed on the way", s.Name, r.EventID)
			}
			if len(r.Change.SequenceNumber) != 56 || r.Change.SequenceNumber <= prev {
				t.Fatalf("%s: sequence number %q after %q: want 56 digits, increasing", s.Name, r.Change.SequenceNumber, prev)
			}
			prev = r.Change.SequenceNumber
		}
		for id := range byID {
			if seen[id] == 0 {
				t.Fatalf("%s: record %s never delivered", s.Name, id)
			}
			if seen[id] > 1 {
				repeated++
			}
		}
		at := map[string]map[int]time.Time{} // by item and version
		for _, r := range got {
			pk := r.Change.Keys["PK"].String()
			v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
			if at[pk] == nil {
				at[pk] = map[int]time.Time{}
			}
			t0, seen := at[pk][v]
			when := r.Change.ApproximateCreationDateTime.Time
			if seen && !t0.Equal(when) {
				t.Fatalf("%s: item %s version %d repeated with another time", s.Name, pk, v)
			}
			at[pk][v] = when
		}
		for pk, times := range at {
			for v := 2; v <= 12; v++ {
				if !times[v].After(times[v-1]) {
					t.Fatalf("%s: item %s version %d at %s, not after version %d's %s", s.Name, pk, v, times[v], v-1, times[v-1])
				}
			}
		}
		for pk, vs := range versions(got) {
			for i := range vs {
				for j := i + 1; j < len(vs); j++ {
					if vs[i] > vs[j] {
						reordered++
						if vs[i]-vs[j] > s.Reorder {
							t.Fatalf("%s: item %s got version %d before %d (Reorder %d): %v", s.Name, pk, vs[i], vs[j], s.Reorder, vs)
						}
					}
				}
			}
		}
	}
	// the run in order Check makes of a differing one repeats the same
	// records
	for _, s := range replay.KinesisSchedules(9, 20) {
		inOrder := s
		inOrder.Reorder = 0
		count := func(recs []events.DynamoDBEventRecord) map[string]int {
			n := map[string]int{}
			for _, r := range recs {
				n[r.EventID]++
			}
			return n
		}
		if diff := cmp.Diff(count(replay.Order(ev, s)), count(replay.Order(ev, inOrder))); diff != "" {
			t.Fatalf("%s: with Reorder 0 other records repeat (-reordered +in order):\n%s", s.Name, diff)
		}
	}
	if repeated == 0 || reordered == 0 {
		t.Fatalf("50 Kinesis schedules: %d records repeated, %d pairs out of order: want both", repeated, reordered)
	}
}

// Check, given Kinesis schedules, catches a handler that assumes one
// item's records come in order, and says so; the same handler passes
// every schedule of DynamoDB Streams' order, which AWS promises ("For each
// item that is modified in a DynamoDB table, the stream records appear in
// the same sequence as the actual modifications to the item": DynamoDB
// Developer Guide, "Change data capture for DynamoDB Streams") and does
// not for Kinesis (the page cited at TestKinesisOrder).
func TestCheckSaysWhichHandlerAssumesOrder(t *testing.T) {
	ev := streamOf(5, "A", "B", "C")
	latest := map[string]int{}
	lastWins := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
			latest[r.Change.Keys["PK"].String()] = v // the last record read wins
		}
		return events.DynamoDBEventResponse{}, nil
	}
	target := replay.Target{Handler: lastWins, NoRequests: true,
		Reset: func(context.Context) error { clear(latest); return nil },
		State: func(context.Context) (any, error) {
			return fmt.Sprint(latest["A"], latest["B"], latest["C"]), nil
		},
	}
	rep, err := replay.Check(context.Background(), ev, target, replay.Schedules(3, 10))
	if err != nil || rep.Err() != nil {
		t.Fatalf("in DynamoDB Streams' order: %v, %v", err, rep.Err())
	}
	rep, err = replay.Check(context.Background(), ev, target, replay.KinesisSchedules(3, 10))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() == nil {
		t.Fatal("10 Kinesis schedules found nothing wrong with a handler whose last record read wins")
	}
	for _, run := range rep.Differing() {
		if !run.AssumesOrder {
			t.Errorf("%s differs, and AssumesOrder is false: %s", run.Schedule, run.Diff)
		}
	}
	if msg := rep.Err().Error(); !strings.Contains(msg, "assumes one item's records come in order") {
		t.Errorf("the report does not say the handler assumes order:\n%s", msg)
	}
}

// A handler that does as AWS advises for a Kinesis source (tell one
// item's order and its duplicates by ApproximateCreationDateTime: "Change
// data capture for Kinesis Data Streams with DynamoDB", paraphrased; its
// precision is microseconds by default: the CDK's
// ApproximateCreationDateTimePrecision), and keeps for each item the
// record with the latest time,
// passes the Kinesis schedules, though the records' captured times (here
// all the same, as DynamoDB Local's minute makes them) say nothing: the
// kit gives them the microseconds Kinesis would. (In the baseline, in
// order, the ties go to the record read last.)
func TestKinesisSchedulesTimeOrdersEachItem(t *testing.T) {
	ev := streamOf(6, "A", "B", "C")
	type newest struct {
		at      time.Time
		version int
	}
	latest := map[string]newest{}
	byTime := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			v, _ := strconv.Atoi(r.Change.NewImage["version"].Number())
			pk, at := r.Change.Keys["PK"].String(), r.Change.ApproximateCreationDateTime.Time
			if cur, ok := latest[pk]; !ok || !at.Before(cur.at) { // a tie: the one read last
				latest[pk] = newest{at, v}
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	rep, err := replay.Check(context.Background(), ev, replay.Target{Handler: byTime, NoRequests: true,
		Reset: func(context.Context) error { clear(latest); return nil },
		State: func(context.Context) (any, error) {
			return fmt.Sprint(latest["A"].version, latest["B"].version, latest["C"].version), nil
		},
		Expect: replay.Want("6 6 6"),
	}, replay.KinesisSchedules(11, 12))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}

	// a state that keeps the time too is compared with a baseline of
	// Kinesis's times, not DynamoDB Streams' seconds
	rep, err = replay.Check(context.Background(), ev, replay.Target{Handler: byTime, NoRequests: true,
		Reset: func(context.Context) error { clear(latest); return nil },
		State: func(context.Context) (any, error) { return fmt.Sprint(latest), nil },
	}, replay.KinesisSchedules(11, 6))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}

// A Kinesis run's Stats count what its schedule did: Repeated, the records
// delivered again; Reordered, those delivered after a later version of
// their item, as the handler saw them.
func TestKinesisStatsCountWhatTheHandlerSaw(t *testing.T) {
	ev := streamOf(10, "A", "B", "C")
	var total replay.Stats
	for _, s := range replay.KinesisSchedules(11, 20) {
		s.Duplicate, s.FailureRate, s.CrashBetweenRequests = false, 0, false // each record delivered as ordered, once
		var got []events.DynamoDBEventRecord
		h := func(_ context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			got = append(got, e.Records...)
			return events.DynamoDBEventResponse{}, nil
		}
		st, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: h}, s)
		if err != nil {
			t.Fatal(err)
		}
		reordered := 0
		for _, vs := range versions(got) {
			highest := 0
			for _, v := range vs {
				if v < highest {
					reordered++
				}
				highest = max(highest, v)
			}
		}
		if st.Repeated != len(got)-len(ev.Records) || st.Reordered != reordered {
			t.Fatalf("%s: Stats say %d repeated and %d reordered; the handler saw %d records of %d and %d after a later version",
				s.Name, st.Repeated, st.Reordered, len(got), len(ev.Records), reordered)
		}
		total.Repeated += st.Repeated
		total.Reordered += st.Reordered
	}
	if total.Repeated == 0 || total.Reordered == 0 {
		t.Fatalf("20 Kinesis schedules: %d repeated, %d reordered: want both", total.Repeated, total.Reordered)
	}
}
