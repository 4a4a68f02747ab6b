package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// Publisher publishes events; it returns one error per event (nil = done).
type Publisher interface {
	Publish(ctx context.Context, evs []events.Event) []error
}

// Notifier is the handler.
type Notifier struct {
	Publisher Publisher
	// Effects, when set, also sends e-mails and writes in-app notifications.
	Effects *Effects
	// Chat, when set, pushes each new chat message to its room's
	// connections.
	Chat   *Chat
	Logger *slog.Logger
	// Concurrency bounds the partition keys of a batch handled at once
	// (default stream.DefaultConcurrency).
	Concurrency int
	// DeadLetters takes the records that can never be handled (they cannot
	// be decoded) at once, so they neither wait out the retries nor hold up
	// their key; nil: they fail like any other record.
	DeadLetters stream.DeadLetters
}

// internalAttrs are key and index attributes, not part of an event's data.
var internalAttrs = []string{"PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK", "itemType", "derived"}

// ToChange converts a record into the plain Change events.Map takes.
func ToChange(rec lambdaevents.DynamoDBEventRecord) (events.Change, error) {
	c, err := stream.Decode(rec)
	if err != nil {
		return events.Change{}, err
	}
	return plain(c)
}

// plain converts a decoded change into the plain Change events.Map takes.
func plain(c stream.Change) (events.Change, error) {
	old, err := plainImage(c.Old)
	if err != nil {
		return events.Change{}, err
	}
	cur, err := plainImage(c.New)
	if err != nil {
		return events.Change{}, err
	}
	return events.Change{
		EventID: c.EventID, SequenceNumber: c.SequenceNumber, Kind: events.Kind(c.Kind.String()),
		At: c.At, ItemType: c.ItemType(), Derived: c.Derived(), Old: old, New: cur,
	}, nil
}

func plainImage(img map[string]types.AttributeValue) (map[string]any, error) {
	if img == nil {
		return nil, nil
	}
	var m map[string]any
	if err := attributevalue.UnmarshalMap(img, &m); err != nil {
		return nil, err
	}
	for _, a := range internalAttrs {
		delete(m, a)
	}
	return m, nil
}

// record is one stream record, decoded once.
type record struct {
	change  stream.Change
	events  []events.Event
	subject subject
	effects bool          // it has collaboration side effects
	sent    *sent         // its side effects, under way once the reads are done
	message *chat.Message // a new chat message to broadcast
	closure *closure      // a search room's chat taken away from someone
	err     error
}

// owned is a value a group's record produced, for the batch's shared writes.
type owned[T any] struct {
	v      T
	index  int // the record's position in the batch
	group  int // its group's position in the Result
	record int // its position in the group
}

// Handle maps each record to its domain events and side effects. Records
// are grouped by partition key and the groups run concurrently, each in
// stream order, stopping at its first failure (stream.Keyed). What several
// records can share is shared, and runs beside the groups: the reads the
// side effects need (resources, comments, collaborators, people) are made
// once for the batch, and then its e-mails and in-app notifications are
// under way, all together (mailing), each e-mail at most once; a record
// with side effects waits at its step for the reads and for its own, the
// others go on. Each record's events are handed to the batch's publishing
// once its step is done and go out in shared Publish calls, one key's in
// stream order, without waiting for the batch's slowest group; once a
// key's event has failed, its later records stop (publishing.go). A record
// whose decoding, reads, e-mails, notifications or events failed stops its
// group there and is reported as a batch item failure.
func (n *Notifier) Handle(ctx context.Context, ev lambdaevents.DynamoDBEvent) (lambdaevents.DynamoDBEventResponse, error) {
	log := n.Logger
	if log == nil {
		log = slog.Default()
	}
	recs := make(map[string]*record, len(ev.Records))
	var effected []*record
	for _, r := range ev.Records {
		x := &record{}
		recs[r.Change.SequenceNumber] = x
		x.change, x.err = stream.Decode(r)
		var c events.Change
		if x.err == nil {
			c, x.err = plain(x.change)
		}
		if x.err == nil {
			x.events, x.err = events.Map(c)
		}
		if x.err == nil && n.Effects != nil {
			x.subject, x.effects, x.err = subjectOf(x.change)
		}
		if x.err == nil && n.Chat != nil && isMessage(x.change) {
			var m chat.Message
			if m, x.err = message(x.change); x.err == nil {
				x.message = &m
			}
		}
		if x.err == nil && n.Chat != nil {
			x.closure, x.err = closureOf(x.change)
		}
		if x.err != nil {
			continue
		}
		if x.effects {
			effected = append(effected, x)
		}
	}
	// The side effects' reads, then their e-mails and notifications, run
	// beside the groups: only a record with side effects waits for them.
	var fx *effectsRun
	if len(effected) > 0 {
		fx = n.Effects.start(ctx, effected)
		defer fx.close()
	}
	pub := n.startPublishing(ctx, log)
	defer pub.stop() // finish stops it; this, on a path that does not get there

	k := stream.Keyed{Key: stream.PartitionKey(store.AttrPK), Concurrency: n.Concurrency, DeadLetters: n.DeadLetters, Consumer: "notifier"}
	index := make(map[string]int, len(ev.Records))
	for i, r := range ev.Records {
		index[r.Change.SequenceNumber] = i
	}
	res := k.Run(ctx, ev.Records, func(ctx context.Context, g stream.Group) (int, error) {
		gi, off := g.Index, g.Offset
		// stop ends the group at record i. A record Keyed will dead-letter
		// (a permanent error) waits for its key's earlier events: if one
		// failed, its record comes again, and this one with it, to be
		// dead-lettered then, once.
		stop := func(i int, err error) (int, error) {
			if stream.IsPermanent(err) {
				if perr := pub.settle(gi); perr != nil {
					return i, perr
				}
			}
			return i, err
		}
		pushed, pushErr := 0, error(nil) // the group's records before pushed have been broadcast
		for i, r := range g.Records {
			x := recs[r.Change.SequenceNumber]
			// an earlier record of the key failed to publish: this one
			// comes again after it, so it does nothing now (no push, no
			// close, no event out before the earlier one's)
			if err := pub.failure(gi); err != nil {
				return i, err
			}
			if x.err != nil {
				return stop(i, stream.Permanent(x.err))
			}
			if x.effects {
				if err := fx.wait(); err != nil {
					return i, err
				}
				mailErr, noteErr := x.sent.wait()
				if mailErr != nil {
					return stop(i, ddb.MarkPermanent(fmt.Errorf("side effects: %w", mailErr)))
				}
				if noteErr != nil {
					// not marked permanent: a call's error is every item's
					// of that call, other records' too; the retry writes
					// them again
					return i, fmt.Errorf("write notifications: %w", noteErr)
				}
			}
			if x.message != nil && i >= pushed {
				// Pushed only once the key's earlier events are out: when
				// one failed, this record comes again after it.
				if err := pub.settle(gi); err != nil {
					return i, err
				}
				// This record and the group's new messages right after
				// it are pushed together (one room: the group's key).
				var msgs []chat.Message
				for j := i; j < len(g.Records); j++ {
					xj := recs[g.Records[j].Change.SequenceNumber]
					if xj.err != nil || xj.message == nil || xj.effects {
						break
					}
					msgs = append(msgs, *xj.message)
				}
				done, err := n.Chat.broadcast(ctx, msgs)
				pushed = i + done
				pushErr = err
			}
			if x.message != nil && i >= pushed {
				return stop(i, pushErr)
			}
			if x.closure != nil {
				if err := pub.settle(gi); err != nil {
					return i, err
				}
				if err := n.Chat.close(ctx, *x.closure); err != nil {
					return stop(i, err)
				}
			}
			at := index[r.Change.SequenceNumber]
			evs := make([]owned[events.Event], len(x.events))
			for j, e := range x.events {
				evs[j] = owned[events.Event]{e, at, gi, off + i}
			}
			pub.add(evs...)
		}
		return len(g.Records), nil
	})
	pub.finish(res)
	for _, dl := range res.DeadLettered() {
		log.Error("notifier: record dead-lettered (it can never be handled)", "seq", dl.FirstSequenceNumber, "err", dl.Error)
	}
	for _, o := range res.Failures() {
		log.Error("notifier: records failed", "key", o.Key, "seq", o.Records[o.Done].Change.SequenceNumber,
			"eventID", o.Records[o.Done].EventID, "waiting", len(o.Records)-o.Done, "err", o.Err)
	}
	return res.Response(), nil
}

// ItemTypes returns, sorted, every item type whose changes the notifier acts
// on: the types events.Map announces and those with side effects (invites,
// comments and reactions e-mailed and notified, chat messages pushed). A
// record of any other type is acknowledged with nothing done, so the
// notifier's filter (Filter) drops the others before they cost an
// invocation.
func ItemTypes() []string {
	out := append(events.Announced(), store.TypeInvite, store.TypeComment, store.TypeReaction, store.TypeMessage)
	slices.Sort(out)
	return slices.Compact(out)
}

// Filter is the notifier's event source mapping filter: records whose item
// (the new image's, or for a removal the old image's) is of one of
// ItemTypes. infra/template.yaml's FilterCriteria is this value (its test
// compares them), the local runner applies it, and so does the Lambda
// function, as a defence.
func Filter() filter.Criteria {
	types, err := json.Marshal(ItemTypes())
	if err != nil {
		panic(err)
	}
	return filter.MustCriteria(
		fmt.Sprintf(`{"dynamodb":{"NewImage":{%q:{"S":%s}}}}`, store.AttrItemType, types),
		fmt.Sprintf(`{"dynamodb":{"OldImage":{%q:{"S":%s}}}}`, store.AttrItemType, types),
	)
}
