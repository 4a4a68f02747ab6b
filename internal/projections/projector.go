package projections

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// countMarkerTTL is how long a reaction-count marker is kept: far longer
// than the stream's 24 h retention, so no redelivery outlives its marker.
const countMarkerTTL = 7 * 24 * time.Hour

// Projector is the projector's stream handler.
type Projector struct {
	Store  *store.Store
	Logger *slog.Logger
}

// roomWork gathers a batch's effects on one room.
type roomWork struct {
	at         map[string]bool
	activities []room.Activity
	cascade    bool
	seqs       []string
}

// Handle applies a batch's effects. Records are grouped by room, so each
// room's state is read once per batch and its derived items are written in
// one batch write; rooms that are gone get no derived items, and deleted
// rooms are cascaded last. A record that cannot be decoded, or whose room
// could not be read or written, is reported in BatchItemFailures (the
// runner or Lambda retries from the lowest one); the other rooms are still
// done.
func (p *Projector) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	var resp events.DynamoDBEventResponse
	fail := func(seq string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
	}
	rooms := map[string]*roomWork{}
	var order []string
	for _, rec := range ev.Records {
		c, err := stream.Decode(rec)
		var e Effects
		var ok bool
		if err == nil {
			var cc CountChange
			if cc, ok, err = CountChangeOf(c); ok && err == nil {
				// Exactly once per source change, one transaction (O(1)).
				if _, err := p.Store.CountReaction(ctx, cc.CommentID, cc.Emoji, cc.Delta, c.EventID, c.At.Add(countMarkerTTL)); err != nil {
					log.Error("projector: reaction count failed", "seq", rec.Change.SequenceNumber, "comment", cc.CommentID, "err", err)
					fail(rec.Change.SequenceNumber)
				}
				continue
			}
		}
		if err == nil {
			e, ok, err = EffectsOf(c)
		}
		if err != nil {
			log.Error("projector: undecodable record", "seq", rec.Change.SequenceNumber, "eventID", rec.EventID, "err", err)
			fail(rec.Change.SequenceNumber)
			continue
		}
		if !ok {
			continue
		}
		w := rooms[e.RoomID]
		if w == nil {
			w = &roomWork{at: map[string]bool{}}
			rooms[e.RoomID] = w
			order = append(order, e.RoomID)
		}
		if e.SnapshotAt != "" {
			w.at[e.SnapshotAt] = true
		}
		w.activities = append(w.activities, e.Activities...)
		w.cascade = w.cascade || e.DeleteRoom
		w.seqs = append(w.seqs, rec.Change.SequenceNumber)
	}
	failRoom := func(roomID string, w *roomWork, err error) {
		log.Error("projector: room failed", "room", roomID, "records", len(w.seqs), "err", err)
		for _, s := range w.seqs {
			fail(s)
		}
	}
	for _, roomID := range order {
		if w := rooms[roomID]; !w.cascade {
			if err := p.project(ctx, roomID, w); err != nil {
				failRoom(roomID, w, err)
			}
		}
	}
	for _, roomID := range order {
		if w := rooms[roomID]; w.cascade {
			n, err := p.Store.DeleteRoomCascade(ctx, roomID)
			if err != nil {
				failRoom(roomID, w, err)
				continue
			}
			log.Info("projector: room deleted", "room", roomID, "itemsDeleted", n)
		}
	}
	return resp, nil
}

// project writes a room's derived items: the snapshots asked for and the
// activity entries, nothing when the room is gone.
func (p *Projector) project(ctx context.Context, roomID string, w *roomWork) error {
	var d store.Derived
	if len(w.at) == 0 {
		exists, err := p.Store.RoomExists(ctx, roomID)
		if err != nil || !exists {
			return err
		}
	} else {
		st, err := p.Store.ReadRoomState(ctx, roomID)
		if err != nil || !st.Exists {
			return err
		}
		for t := range w.at {
			cv, pv := Snapshot(st, t)
			if cv != nil {
				d.Combined = append(d.Combined, *cv)
			}
			if pv != nil {
				d.Compatibility = append(d.Compatibility, *pv)
				d.Activities = append(d.Activities, compatibilityActivity(*pv))
			}
		}
	}
	// A batch may carry a record twice: one write per entry.
	seen := map[string]bool{}
	for _, a := range w.activities {
		if k := a.CreatedAt + "#" + a.ActivityID; !seen[k] {
			seen[k] = true
			d.Activities = append(d.Activities, a)
		}
	}
	return p.Store.PutDerived(ctx, d)
}
