package projections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/internal/ddbtest"

	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// batch10k builds a 10,000-record batch of criteria INSERTs over 100 rooms of
// 5 members each, as Lambda's JSON, and the state the projector would read
// for each room.
func batch10k(b *testing.B) ([]byte, map[string]room.State) {
	const rooms, members, records = 100, 5, 10000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := events.NewStringAttribute
	n := events.NewNumberAttribute
	l := func(vs ...string) events.DynamoDBAttributeValue {
		out := make([]events.DynamoDBAttributeValue, len(vs))
		for i, v := range vs {
			out[i] = s(v)
		}
		return events.NewListAttribute(out)
	}
	states := map[string]room.State{}
	var ev events.DynamoDBEvent
	for i := 0; i < records; i++ {
		roomID := fmt.Sprintf("room-%03d", i%rooms)
		user := fmt.Sprintf("user-%d", (i/rooms)%members)
		ts := store.Timestamp(start.Add(time.Duration(i) * time.Millisecond))
		price := 1000 + float64(i%40)*50
		img := map[string]events.DynamoDBAttributeValue{
			"PK": s(store.RoomPK(roomID)), "SK": s(store.CriteriaKey(roomID, user, ts).SK), "itemType": s(store.TypeCriteria),
			"roomId": s(roomID), "userId": s(user), "timestamp": s(ts), "source": s("manual"),
			"criteria": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
				"locations": l("Zurich", "Basel", fmt.Sprintf("loc-%d", i%7)),
				"priceMin":  n(strconv.FormatFloat(price, 'f', -1, 64)), "priceMax": n(strconv.FormatFloat(price+1500, 'f', -1, 64)),
				"roomsMin": n("2"), "roomsMax": n("4"), "areaMin": n(strconv.Itoa(50 + i%30)), "features": l("balcony", fmt.Sprintf("f-%d", i%5)),
			}),
			"weights": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"price": n(strconv.Itoa(i % 6))}),
		}
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			EventID: fmt.Sprintf("ev-%d", i), EventName: "INSERT", EventSource: "aws:dynamodb",
			Change: events.DynamoDBStreamRecord{SequenceNumber: fmt.Sprintf("%021d", i), Keys: map[string]events.DynamoDBAttributeValue{"PK": img["PK"], "SK": img["SK"]}, NewImage: img, StreamViewType: "NEW_AND_OLD_IMAGES"},
		})
		st := states[roomID]
		st.Exists = true
		st.Room = room.Room{RoomID: roomID, Context: room.Context{CombineMode: room.ModeMixed}}
		if len(st.Members) < members {
			st.Members = append(st.Members, room.Member{RoomID: roomID, UserID: fmt.Sprintf("user-%d", len(st.Members)), JoinedAt: "2025-01-01T00:00:00.000Z"})
		}
		st.Criteria = append(st.Criteria, room.StoredCriteria{SK: img["SK"].String(), CriteriaVersion: room.CriteriaVersion{
			RoomID: roomID, UserID: user, Timestamp: ts,
			Criteria: room.Criteria{Locations: []string{"Zurich", "Basel"}, PriceMin: &price, Features: []string{"balcony"}},
		}})
		states[roomID] = st
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return raw, states
}

// BenchmarkDecodeBatch10k is the floor: only unmarshalling the Lambda JSON.
func BenchmarkDecodeBatch10k(b *testing.B) {
	raw, _ := batch10k(b)
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkProjectBatch10k decodes the same batch and runs the pure
// projection on it: decode each record, find its trigger, and compute the
// room's combined criteria and compatibility as of it (from the state the
// handler would have read, one read per room, and one sweep of it for the
// room's records, as the handler does) — with the batch decoded by
// aws-lambda-go (json.Unmarshal) and by stream.DecodeLambdaEvent, what the
// Lambda entry points use.
func BenchmarkProjectBatch10k(b *testing.B) {
	raw, states := batch10k(b)
	decoders := []struct {
		name   string
		decode func([]byte) (events.DynamoDBEvent, error)
	}{
		{"aws-lambda-go", func(raw []byte) (events.DynamoDBEvent, error) {
			var ev events.DynamoDBEvent
			err := json.Unmarshal(raw, &ev)
			return ev, err
		}},
		{"DecodeLambdaEvent", func(raw []byte) (events.DynamoDBEvent, error) {
			ev, bad, err := stream.DecodeLambdaEvent(raw)
			if err == nil && len(bad) > 0 {
				err = bad[0].Err
			}
			return ev, err
		}},
	}
	for _, dec := range decoders {
		b.Run(dec.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				ev, err := dec.decode(raw)
				if err != nil {
					b.Fatal(err)
				}
				// As the handler does: each record's meaning, then each
				// room's snapshots at the timestamps its records ask for.
				ats := map[string][]string{}
				for _, rec := range ev.Records {
					c, err := stream.Decode(rec)
					if err != nil {
						b.Fatal(err)
					}
					e, ok, err := projections.EffectsOf(c)
					if err != nil || !ok {
						b.Fatal("no effects", err)
					}
					ats[e.RoomID] = append(ats[e.RoomID], e.SnapshotAt)
				}
				snapshots := 0
				for roomID, ts := range ats {
					for _, s := range projections.Snapshots(states[roomID], ts) {
						if s.Combined != nil {
							snapshots++
						}
						if s.Compatibility != nil {
							snapshots++
						}
					}
				}
				if snapshots == 0 {
					b.Fatal("nothing derived")
				}
			}
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkProjectRoomHistory projects one new criteria version of a room
// of three members whose history holds 10 or 10,000 versions, against
// DynamoDB Local: what it costs must follow the members, not the history
// (requests/op and ns/op alike).
func BenchmarkProjectRoomHistory(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("versions=%d", n), func(b *testing.B) {
			c, table, _ := ddbtest.Table(b)
			st := store.New(c.DB, table)
			ctx := context.Background()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			members := []string{"alice", "bob", "carol"}
			if _, err := st.Rooms.CreateRoom(ctx, room.Room{RoomID: "r", Name: "r", CreatedByUserID: "alice", CreatedAt: store.Timestamp(start), SearchType: room.SearchRent, Context: room.Context{CombineMode: room.ModeMixed}}); err != nil {
				b.Fatal(err)
			}
			for _, u := range members[1:] {
				if err := st.Rooms.AddMember(ctx, room.Member{RoomID: "r", UserID: u, Role: room.RoleMember, JoinedAt: store.Timestamp(start)}); err != nil {
					b.Fatal(err)
				}
			}
			var items []map[string]types.AttributeValue
			for i := range n {
				u := members[i%len(members)]
				price := float64(1000 + i%50*10)
				cv := room.CriteriaVersion{RoomID: "r", UserID: u, Timestamp: store.Timestamp(start.Add(time.Duration(i+1) * time.Second)), Source: room.SourceManual,
					Criteria: room.Criteria{Locations: []string{"Zurich", fmt.Sprintf("loc-%d", i%7)}, PriceMin: &price}}
				it, err := attributevalue.MarshalMap(cv)
				if err != nil {
					b.Fatal(err)
				}
				k := store.CriteriaKey("r", u, cv.Timestamp)
				it[store.AttrPK], it[store.AttrSK] = &types.AttributeValueMemberS{Value: k.PK}, &types.AttributeValueMemberS{Value: k.SK}
				it[store.AttrItemType] = &types.AttributeValueMemberS{Value: store.TypeCriteria}
				items = append(items, it)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := range 8 {
				wg.Go(func() {
					for s := w * 25; s < len(items); s += 8 * 25 {
						if err := st.BatchPut(ctx, items[s:min(s+25, len(items))]); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			newest, err := attr.ToLambdaMap(items[len(items)-1])
			if err != nil {
				b.Fatal(err)
			}
			ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{
				EventID: "bench-newest", EventName: "INSERT", EventSource: "aws:dynamodb",
				Change: events.DynamoDBStreamRecord{SequenceNumber: "000000000000000000001", NewImage: newest,
					Keys: map[string]events.DynamoDBAttributeValue{"PK": newest["PK"], "SK": newest["SK"]}, StreamViewType: "NEW_AND_OLD_IMAGES"},
			}}}
			p := &projections.Projector{Store: st, Logger: slog.New(slog.DiscardHandler)}
			before := c.Requests.Counts().Calls
			b.ResetTimer()
			for b.Loop() {
				resp, err := p.Handle(ctx, ev)
				if err != nil || len(resp.BatchItemFailures) > 0 {
					b.Fatalf("Handle: %v %+v", err, resp)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(c.Requests.Counts().Calls-before)/float64(b.N), "requests/op")
			if _, err := st.Rooms.LatestCompatibility(ctx, "r"); err != nil {
				b.Fatalf("nothing derived: %v", err)
			}
		})
	}
}
