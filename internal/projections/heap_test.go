package projections_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// arena hands out strings from shared 4 KB blocks, one after another: more
// sharing than the SDK's decoding arena (smithy-go's StringArena: one
// block of at most 4 KB per response, strings past it allocated alone), on
// purpose. A string kept keeps its whole block.
type arena struct{ block []byte }

func (a *arena) str(s string) string {
	if s == "" {
		return ""
	}
	if len(a.block)+len(s) > cap(a.block) {
		a.block = make([]byte, 0, max(4096, len(s)))
	}
	at := len(a.block)
	a.block = append(a.block, s...)
	return unsafe.String(&a.block[at], len(s))
}

// copyAV copies an attribute value into the arena, each string passed
// through rename.
func (a *arena) copyAV(v events.DynamoDBAttributeValue, rename func(string) string) events.DynamoDBAttributeValue {
	s := func(x string) string { return a.str(rename(x)) }
	switch v.DataType() {
	case events.DataTypeString:
		return events.NewStringAttribute(s(v.String()))
	case events.DataTypeNumber:
		return events.NewNumberAttribute(s(v.Number()))
	case events.DataTypeBoolean:
		return events.NewBooleanAttribute(v.Boolean())
	case events.DataTypeNull:
		return events.NewNullAttribute()
	case events.DataTypeBinary:
		return events.NewBinaryAttribute(append([]byte(nil), v.Binary()...))
	case events.DataTypeStringSet:
		var ss []string
		for _, x := range v.StringSet() {
			ss = append(ss, s(x))
		}
		return events.NewStringSetAttribute(ss)
	case events.DataTypeNumberSet:
		var ns []string
		for _, x := range v.NumberSet() {
			ns = append(ns, s(x))
		}
		return events.NewNumberSetAttribute(ns)
	case events.DataTypeList:
		var l []events.DynamoDBAttributeValue
		for _, x := range v.List() {
			l = append(l, a.copyAV(x, rename))
		}
		return events.NewListAttribute(l)
	case events.DataTypeMap:
		return events.NewMapAttribute(a.copyImage(v.Map(), rename))
	}
	return v
}

func (a *arena) copyImage(m map[string]events.DynamoDBAttributeValue, rename func(string) string) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[a.str(rename(k))] = a.copyAV(v, rename)
	}
	return out
}

// copyRecord is a record as a fresh GetRecords page would decode it, in
// round: its event id and sequence number are the round's (in the
// stream's order), its other strings passed through rename.
func (a *arena) copyRecord(r events.DynamoDBEventRecord, round int, rename func(string) string) events.DynamoDBEventRecord {
	r.EventID = a.str(fmt.Sprintf("%04d-%s", round, r.EventID))
	r.EventSourceArn = a.str(r.EventSourceArn)
	r.Change.SequenceNumber = a.str(fmt.Sprintf("%04d%s", round, r.Change.SequenceNumber))
	r.Change.Keys = a.copyImage(r.Change.Keys, rename)
	r.Change.NewImage = a.copyImage(r.Change.NewImage, rename)
	r.Change.OldImage = a.copyImage(r.Change.OldImage, rename)
	return r
}

// The projector's handler keeps nothing of a record once it is done with
// it (issue 52): a stream of every kind it derives from (rooms, criteria,
// members, listings, a room's cascade delete, recipes and cooking, comments
// with reactions, its own derived items) goes through the handler against
// DynamoDB Local again and again, 20,000 records and more. Every round's
// records are new changes (their own event ids and sequence numbers) and
// its reactions are on new comments; the rooms, recipes and users are the
// same. Each round is decoded afresh into shared 4 KB blocks, so a
// record's string kept would keep its block. The live heap grows by no
// more than the handler's bounded memory (its set of comments with counts,
// a copy of each id): the growth is the least-squares slope of the live
// heap after each round.
// AWS documents nothing here: a function's memory is the function's; its
// Max Memory Used is what a leak would grow (Lambda's CloudWatch metrics,
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
//
// It calls DynamoDB Local directly, not through the package's Limiter: the
// Limiter runs in this process, and its counts per partition key (every
// round's keys are new) would be measured as the handler's.
func TestProjectorHeapStaysFlat(t *testing.T) {
	const newComments = 20 // a round
	c, table, arn := ddbtest.TableDirect(t)
	st := store.New(c.DB, table)
	ctx := context.Background()
	runScenario(t, st)
	runKitchen(t, st)
	at := time.Now().UTC().Add(-time.Hour)
	if err := st.Collab.CreateResource(ctx, collab.Resource{ResourceType: collab.Quest, ResourceID: "q1", Title: "t", OwnerID: "alice", CreatedAt: store.Timestamp(at)}); err != nil {
		t.Fatal(err)
	}
	for i := range newComments + 4 { // 4 comments with two reactions
		id := fmt.Sprintf("heapc%d", i%newComments)
		if i < newComments {
			if err := st.Collab.CreateComment(ctx, collab.Comment{CommentID: id, ResourceType: collab.Quest, ResourceID: "q1", UserID: "alice", Text: "x", CreatedAt: store.Timestamp(at)}); err != nil {
				t.Fatal(err)
			}
		}
		at = at.Add(time.Second)
		if _, err := st.Collab.AddReaction(ctx, collab.Reaction{CommentID: id, ResourceType: collab.Quest, ResourceID: "q1", UserID: fmt.Sprint("u", i), Emoji: "👍", CreatedAt: store.Timestamp(at)}); err != nil {
			t.Fatal(err)
		}
	}
	p := &projections.Projector{Store: st, Logger: slog.New(slog.DiscardHandler)}
	// The stream as the projector meets it: the writes, then its own
	// derived items (which it reads and leaves).
	ev, err := replay.Capture(ctx, c.Streams, arn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if ev, err = replay.Capture(ctx, c.Streams, arn); err != nil {
		t.Fatal(err)
	}
	const batchSize = 100 // the template's, and Lambda's default
	rounds := 0
	deliver := func(n int) { // n deliveries of the whole stream
		for range n {
			rounds++
			// this round's comments are new ones: the reactions count
			// afresh and the set of comments with counts grows
			prefix := fmt.Sprintf("heapc%04d-", rounds)
			rename := func(s string) string { return strings.ReplaceAll(s, "heapc", prefix) }
			for from := 0; from < len(ev.Records); from += batchSize {
				var a arena
				var batch events.DynamoDBEvent
				for _, r := range ev.Records[from:min(from+batchSize, len(ev.Records))] {
					batch.Records = append(batch.Records, a.copyRecord(r, rounds, rename))
				}
				resp, err := p.Handle(ctx, batch)
				if err != nil || len(resp.BatchItemFailures) > 0 {
					t.Fatalf("round %d: %v %+v", rounds, err, resp.BatchItemFailures)
				}
			}
		}
	}
	per := len(ev.Records)
	warmRounds := 2
	measured := max(30, (20_000+per-1)/per)
	deliver(warmRounds)
	warm := ddbtest.LiveHeap()
	// the live heap after every round, and its least-squares growth
	var sr, sh, srr, srh float64
	for i := range measured {
		deliver(1)
		r, h := float64(i+1), float64(ddbtest.LiveHeap())
		sr, sh, srr, srh = sr+r, sh+h, srr+r*r, srh+r*h
	}
	n := float64(measured)
	perRound := (n*srh - sr*sh) / (n*srr - sr*sr)
	runtime.KeepAlive(p) // what it holds is what is measured
	runtime.KeepAlive(&ev)
	t.Logf("%d records a round; live heap after %d rounds %d bytes, then %+d bytes a round over %d more (%d records)",
		per, warmRounds, warm, int64(perRound), measured, measured*per)
	// The set of comments with counts holds a copy of each new id, under
	// 150 bytes with its share of the map; 4 KB a round is noise. With
	// issue 52's leak put back (each id keeping its block) it grew 25 KB a
	// round.
	if bound := float64(newComments*150 + 4<<10); perRound > bound {
		t.Errorf("the live heap grew %.0f bytes a round of %d records (bound %.0f): the handler keeps what it is done with", perRound, per, bound)
	}
	counts, err := st.Collab.ReactionCounts(ctx, []string{fmt.Sprintf("heapc%04d-0", rounds)})
	if err != nil || counts[fmt.Sprintf("heapc%04d-0", rounds)]["👍"] != 2 {
		t.Errorf("the last round's counts %v, %v: want 2 👍 on its first comment", counts, err)
	}
}
