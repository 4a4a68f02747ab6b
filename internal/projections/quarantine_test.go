package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
	"github.com/dynastream/dynastream/stream"
)

// The scenario: someone else writes a Criteria item whose criteria
// is a string. Its own record is dead-lettered at once (not retried), the
// item is quarantined — skipped by every read, counted, listed by
// ScanQuarantine — and the room's later changes derive as if it were not
// there, in the same call, with no batch item failure.
func TestBadStoredItemNeverBlocksItsRoom(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	s := &scenario{st: st, now: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), t: t}
	s.room("r", room.ModeAll, "alice")
	s.join("r", "bob")
	s.put("r", "alice", room.Criteria{Locations: []string{"Zurich"}}, room.Weights{})
	s.put("r", "bob", room.Criteria{Locations: []string{"Zurich"}}, room.Weights{})
	bobGood := store.CriteriaKey("r", "bob", store.Timestamp(s.now)).SK
	badTS := s.tick()
	bad := store.CriteriaKey("r", "bob", badTS)
	_, err := c.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: bad.PK}, "SK": &types.AttributeValueMemberS{Value: bad.SK},
		"itemType": &types.AttributeValueMemberS{Value: store.TypeCriteria},
		"roomId":   &types.AttributeValueMemberS{Value: "r"}, "userId": &types.AttributeValueMemberS{Value: "bob"},
		"timestamp": &types.AttributeValueMemberS{Value: badTS},
		"criteria":  &types.AttributeValueMemberS{Value: "Zurich, 3 rooms"}, // a map in every valid item
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.put("r", "alice", room.Criteria{Locations: []string{"Zurich", "Bern"}}, room.Weights{})
	last := store.Timestamp(s.now)

	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	var dls stream.MemoryDeadLetters
	p := &projections.Projector{Store: st, DeadLetters: &dls}
	for _, size := range []int{len(ev.Records), 1} { // one batch, then one record at a time (a replay)
		for from := 0; from < len(ev.Records); from += size {
			part := ev
			part.Records = ev.Records[from:min(from+size, len(ev.Records))]
			resp, err := p.Handle(ctx, part)
			if err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("batch of %d from %d: %v %+v, want no failure", size, from, err, resp.BatchItemFailures)
			}
		}
	}
	all := dls.All()
	if len(all) != 2 { // once per pass
		t.Fatalf("%d dead letters, want the bad record once per pass: %+v", len(all), all)
	}
	if got := all[0].Event.Records[0].Change.Keys["SK"].String(); got != bad.SK || all[0].Attempts != 1 {
		t.Errorf("dead letter for %s after %d attempts, want %s at once", got, all[0].Attempts, bad.SK)
	}
	cp, err := st.Rooms.LatestCompatibility(ctx, "r")
	if err != nil {
		t.Fatalf("the room did not derive: %v", err)
	}
	if cp.Timestamp != last {
		t.Errorf("newest compatibility at %s, want %s (alice's last change)", cp.Timestamp, last)
	}
	for _, ref := range cp.CriteriaRefs {
		if ref == bad.SK {
			t.Errorf("compatibility cites the bad item: %v", cp.CriteriaRefs)
		}
	}
	if len(cp.CriteriaRefs) != 2 || cp.CriteriaRefs[1] != bobGood || len(cp.Pairs) != 1 {
		t.Errorf("compatibility refs %v pairs %v: want alice's and bob's last good versions", cp.CriteriaRefs, cp.Pairs)
	}
	if st.Quarantine.Count() == 0 {
		t.Error("the bad item was never counted")
	}
	var found []store.BadItem
	n, err := st.ScanQuarantine(ctx, 2, func(b store.BadItem) { found = append(found, b) })
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Key != bad || found[0].ItemType != store.TypeCriteria || found[0].Reason == "" {
		t.Errorf("scan of %d items found %+v, want only %v", n, found, bad)
	}
}
