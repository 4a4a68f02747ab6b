package projections

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Projector is the projector's stream handler.
type Projector struct {
	Store  *store.Store
	Logger *slog.Logger
}

// Handle derives the snapshots a batch asks for. Records are grouped by room
// so each room's state is read once per batch and its snapshots are written
// in one batch write. A record that cannot be decoded, or whose room could
// not be read or written, is reported in BatchItemFailures (the runner or
// Lambda retries from the lowest one); the other rooms are still done.
func (p *Projector) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	var resp events.DynamoDBEventResponse
	fail := func(seq string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
	}
	type work struct {
		at   map[string]bool
		seqs []string
	}
	rooms := map[string]*work{}
	var order []string
	for _, rec := range ev.Records {
		c, err := stream.Decode(rec)
		var t Trigger
		var ok bool
		if err == nil {
			t, ok, err = TriggerOf(c)
		}
		if err != nil {
			log.Error("projector: undecodable record", "seq", rec.Change.SequenceNumber, "eventID", rec.EventID, "err", err)
			fail(rec.Change.SequenceNumber)
			continue
		}
		if !ok {
			continue
		}
		w := rooms[t.RoomID]
		if w == nil {
			w = &work{at: map[string]bool{}}
			rooms[t.RoomID] = w
			order = append(order, t.RoomID)
		}
		w.at[t.At] = true
		w.seqs = append(w.seqs, rec.Change.SequenceNumber)
	}
	for _, roomID := range order {
		w := rooms[roomID]
		if err := p.project(ctx, roomID, w.at); err != nil {
			log.Error("projector: room failed", "room", roomID, "records", len(w.seqs), "err", err)
			for _, s := range w.seqs {
				fail(s)
			}
		}
	}
	return resp, nil
}

func (p *Projector) project(ctx context.Context, roomID string, at map[string]bool) error {
	st, err := p.Store.ReadRoomState(ctx, roomID)
	if err != nil {
		return err
	}
	var combined []room.CombinedVersion
	var compat []room.CompatibilityVersion
	for t := range at {
		cv, pv := Snapshot(st, t)
		if cv != nil {
			combined = append(combined, *cv)
		}
		if pv != nil {
			compat = append(compat, *pv)
		}
	}
	return p.Store.PutSnapshots(ctx, combined, compat)
}
