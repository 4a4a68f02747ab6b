package projections

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddb"
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
	// Concurrency bounds the rooms (and other keys) of a batch projected at
	// once (default stream.DefaultConcurrency).
	Concurrency int

	// DeadLetters takes the records that can never be handled (they cannot
	// be decoded) at once, so they neither wait out the retries nor hold up
	// their room; nil: they fail like any other record.
	DeadLetters stream.DeadLetters

	// DrainEvery spaces a recipe's drains: a drain asked for sooner than
	// DrainEvery after this projector's last one of the recipe is owed
	// (projectDrains), so a hot recipe's partition takes at most one drain
	// per DrainEvery per projector rather than one per call (0: a drain in
	// every call that asks). Its totals then lag its pending items by up to
	// DrainEvery. Now is its clock (nil: time.Now).
	DrainEvery time.Duration
	Now        func() time.Time
	lastDrain  map[string]time.Time
	lastMu     sync.Mutex

	// counted remembers comments whose counts map exists (it is never
	// deleted), so their next count tries the cheaper update first.
	counted seenSet

	cadence    *store.Store // Store naming DrainApp (drainStores)
	drains     *store.Store // cadence with drainAttempts
	drainsOnce sync.Once
	owed       atomic.Int64 // drains owed (Owed)
}

// DrainApp is the application id that the projector's drains, their
// nudges and the top-10 checks they ask for name in their requests'
// User-Agent (app/drain, store.Store.WithOptions): requests whose rate the
// polls set, not the changes (a drain per recipe per DrainEvery, a check
// per call that raised a week), which a report tells apart from the rest
// (make load -aws-limits; CloudTrail's userAgent on AWS).
const DrainApp = "drain"

// drainStores are Store naming DrainApp (cadence), and the same making
// its requests at most drainAttempts times (drains).
func (p *Projector) drainStores() (cadence, drains *store.Store) {
	p.drainsOnce.Do(func() {
		p.cadence = p.Store.WithOptions(func(o *dynamodb.Options) { o.AppID = DrainApp })
		p.drains = p.cadence.WithOptions(func(o *dynamodb.Options) { o.RetryMaxAttempts = drainAttempts })
	})
	return p.cadence, p.drains
}

// Owed is how many drains this projector owed so far: drains that met
// their recipe's partition over its throughput and were asked again
// (projectDrains).
func (p *Projector) Owed() int64 { return p.owed.Load() }

// seenSet is a bounded set of strings, safe for concurrent use: a hint,
// never a source of truth (it forgets everything when full). It keeps a
// copy of each string: one taken from a stream record shares the SDK's
// decoding arena (smithy-go's StringArena, 4 KB blocks), and keeping it
// would keep its whole block: 100,000 of them held 400 MB (issue 52).
type seenSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// seenSetMax bounds a seenSet: at most about 1 MB of ids. The comments
// being reacted to are mostly recent ones; one forgotten costs a try of
// the dearer update, nothing else.
const seenSetMax = 10_000

func (s *seenSet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

func (s *seenSet) add(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		return
	}
	if s.m == nil || len(s.m) >= seenSetMax {
		s.m = map[string]struct{}{}
	}
	s.m[strings.Clone(k)] = struct{}{}
}

// meaning is what one record asks of the projector, decoded once.
type meaning struct {
	err     error // undecodable: the record fails
	count   *CountChange
	effects *Effects
	cooking *CookingChange
	drain   *Drain
	// The source change's id and time, for a count's marker.
	eventID string
	at      time.Time
}

// key groups a batch's records: a room's records by the room (its items'
// partition), every other record by its partition key.
func (m meaning) key(r events.DynamoDBEventRecord) string {
	if m.effects != nil {
		return store.RoomPK(m.effects.RoomID)
	}
	if m.cooking != nil {
		return m.cooking.key()
	}
	if m.drain != nil {
		// with the recipe's own records: its drains and counts in order,
		// not racing each other for its item
		return store.RecipePK(m.drain.RecipeID)
	}
	return stream.PartitionKey(store.AttrPK)(r)
}

func decode(r events.DynamoDBEventRecord) meaning {
	c, err := stream.Decode(r)
	if err != nil {
		return meaning{err: err}
	}
	if d, ok, err := DrainOf(c); ok || err != nil {
		if err != nil {
			return meaning{err: err}
		}
		return meaning{drain: &d}
	}
	cc, ok, err := CountChangeOf(c)
	if err != nil {
		return meaning{err: err}
	}
	if ok {
		return meaning{count: &cc, eventID: c.EventID, at: c.At}
	}
	e, ok, err := EffectsOf(c)
	if err != nil {
		return meaning{err: err}
	}
	if ok {
		return meaning{effects: &e}
	}
	ck, ok, err := CookingOf(c)
	if err != nil {
		return meaning{err: err}
	}
	if ok {
		return meaning{cooking: &ck}
	}
	return meaning{}
}

// derivedWrite is one derived item and the record that asked for it.
type derivedWrite struct {
	item  map[string]types.AttributeValue
	group int // index in the batch's Result
	rec   int // index of the record in its group
}

// batch is one handler call's shared state.
type batch struct {
	p       *Projector
	meaning map[string]meaning // by sequence number
	rooms   map[string]room.Room
	roomErr error // the rooms could not be read: every room group fails

	mu     sync.Mutex
	writes []derivedWrite
	raised []raisedWeeks // recipes whose weekly counts this batch raised
}

// Handle applies a batch's effects. The records are grouped by room (other
// records by partition key) and the groups are projected concurrently, each
// in stream order (stream.Keyed): a room's snapshots are computed from one
// read of its state, however many of its records the batch holds. Reads
// and writes that several rooms can share are shared: the batch's Room
// items come in one BatchGetItem, and all the derived items in shared
// BatchWriteItem calls. A record that cannot be decoded, or whose room
// could not be read or written, stops its group there and is reported in
// BatchItemFailures (Lambda or the runner delivers again from the lowest);
// the other groups are done.
func (p *Projector) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	log := p.logger()
	b := &batch{p: p, meaning: make(map[string]meaning, len(ev.Records))}
	var roomIDs []string
	for _, r := range ev.Records {
		m := decode(r)
		b.meaning[r.Change.SequenceNumber] = m
		if m.effects != nil && !m.effects.DeleteRoom {
			roomIDs = append(roomIDs, m.effects.RoomID)
		}
	}
	if len(roomIDs) > 0 {
		b.rooms, b.roomErr = p.Store.Rooms.GetRooms(ctx, roomIDs)
	}
	k := stream.Keyed{Concurrency: p.Concurrency, DeadLetters: p.DeadLetters, Consumer: "projector", Key: func(r events.DynamoDBEventRecord) string {
		return b.meaning[r.Change.SequenceNumber].key(r)
	}}
	// Suggestions are computed from core items only, so they need nothing
	// the groups write: they are refreshed while the groups run, not after
	// them (they would lengthen every batch by four round trips).
	groups := k.Groups(ev.Records)
	suggested := make(chan []failure, 1)
	go func() { suggested <- b.suggestAll(ctx, b.suggestions(groups)) }()
	// A DynamoDB error that fails the same way every time (a validation)
	// dead-letters its record at once; the rest are retried.
	res := k.RunGroups(ctx, groups, func(ctx context.Context, g stream.Group) (int, error) {
		done, err := b.project(ctx, g)
		return done, ddb.MarkPermanent(err)
	})
	// The derived items' batch writes and the top-10 checks (which read
	// only what the groups' transactions wrote) go on at once too.
	flushed := make(chan []failure, 1)
	go func() { flushed <- b.flush(ctx) }()
	fails := b.topTens(ctx)
	fails = append(fails, <-flushed...)
	fails = append(fails, <-suggested...)
	for _, f := range fails {
		res.Fail(f.group, f.rec, f.err)
	}
	for _, dl := range res.DeadLettered() {
		log.Error("projector: record dead-lettered (it can never be handled)", "seq", dl.FirstSequenceNumber, "err", dl.Error)
	}
	for _, o := range res.Failures() {
		log.Error("projector: records failed", "key", o.Key, "seq", o.Records[o.Done].Change.SequenceNumber,
			"waiting", len(o.Records)-o.Done, "err", o.Err)
	}
	return res.Response(), nil
}

func (p *Projector) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// project handles one group's records in order: reaction counts one by one
// (exactly once each), a room's snapshots and activities together, a deleted
// room's cascade. Derived items are handed to flush, which writes the
// batch's at once.
func (b *batch) project(ctx context.Context, g stream.Group) (int, error) {
	for i := 0; i < len(g.Records); {
		r := g.Records[i]
		m := b.meaning[r.Change.SequenceNumber]
		switch {
		case m.err != nil:
			return i, stream.Permanent(m.err)
		case m.count != nil:
			_, err := b.p.Store.Collab.CountReaction(ctx, m.count.CommentID, m.count.Emoji, m.count.Delta, m.eventID, m.at, countMarkerTTL, b.p.counted.has(m.count.CommentID))
			if err != nil {
				return i, fmt.Errorf("reaction count of comment %s: %w", m.count.CommentID, err)
			}
			b.p.counted.add(m.count.CommentID)
			i++
		case m.cooking != nil:
			// The group's cooking records up to the next other one are
			// applied together (one recipe's, or one user's).
			var recs []*CookingChange
			j := i
			for ; j < len(g.Records); j++ {
				mj := b.meaning[g.Records[j].Change.SequenceNumber]
				if mj.cooking == nil {
					break
				}
				recs = append(recs, mj.cooking)
			}
			if err := b.projectCooking(ctx, recs, g.Index, g.Offset+i); err != nil {
				return i, err
			}
			i = j
		case m.drain != nil:
			// A pending item's records: one drain for the run of them.
			var ds []*Drain
			j := i
			for ; j < len(g.Records); j++ {
				mj := b.meaning[g.Records[j].Change.SequenceNumber]
				if mj.drain == nil {
					break
				}
				ds = append(ds, mj.drain)
			}
			if err := b.projectDrains(ctx, ds, g.Index, g.Offset+i); err != nil {
				return i, err
			}
			i = j
		case m.effects == nil:
			i++
		case m.effects.DeleteRoom:
			n, err := b.p.Store.Rooms.DeleteRoomCascade(ctx, m.effects.RoomID)
			if err != nil {
				return i, fmt.Errorf("cascade of room %s: %w", m.effects.RoomID, err)
			}
			b.p.logger().Info("projector: room deleted", "room", m.effects.RoomID, "itemsDeleted", n)
			i++
		default:
			// The room's records up to the next undecodable record or
			// deletion are projected together.
			j := i
			for j < len(g.Records) {
				mj := b.meaning[g.Records[j].Change.SequenceNumber]
				if mj.err != nil || mj.count != nil || mj.effects != nil && mj.effects.DeleteRoom {
					break
				}
				j++
			}
			if err := b.projectRoom(ctx, g.Index, g.Offset, g.Records, i, j); err != nil {
				return i, err
			}
			i = j
		}
	}
	return len(g.Records), nil
}

// projectRoom derives what records[from:to] of one room ask for: the
// snapshots as of their timestamps and their activity entries; nothing
// when the room is gone.
func (b *batch) projectRoom(ctx context.Context, gi, off int, recs []events.DynamoDBEventRecord, from, to int) error {
	if b.roomErr != nil {
		return b.roomErr
	}
	var roomID string
	at := map[string]int{} // snapshot timestamp → first record asking for it
	var lo, hi string
	type act struct {
		a   room.Activity
		rec int
	}
	var acts []act
	var known []room.StoredCriteria
	for i := from; i < to; i++ {
		e := b.meaning[recs[i].Change.SequenceNumber].effects
		if e == nil {
			continue
		}
		roomID = e.RoomID
		if e.Version != nil {
			known = append(known, *e.Version)
		}
		if t := e.SnapshotAt; t != "" {
			if _, ok := at[t]; !ok {
				at[t] = i
			}
			if lo == "" || t < lo {
				lo = t
			}
			hi = max(hi, t)
		}
		for _, a := range e.Activities {
			acts = append(acts, act{a, i})
		}
	}
	r, exists := b.rooms[roomID]
	if roomID == "" || !exists {
		return nil // gone: its cascade removes what is left
	}
	var out []derivedWrite
	add := func(d store.Derived, rec int) error {
		items, err := store.DerivedItems(d)
		for _, it := range items {
			out = append(out, derivedWrite{item: it, group: gi, rec: off + rec})
		}
		return err
	}
	if len(at) > 0 {
		st, err := b.p.Store.Rooms.SnapshotState(ctx, r, lo, hi, known...)
		if err != nil {
			return fmt.Errorf("read room %s: %w", roomID, err)
		}
		ts := slices.Collect(maps.Keys(at))
		for i, s := range Snapshots(st, ts) {
			var d store.Derived
			if s.Combined != nil {
				d.Combined = append(d.Combined, *s.Combined)
			}
			if s.Compatibility != nil {
				d.Compatibility = append(d.Compatibility, *s.Compatibility)
				d.Activities = append(d.Activities, compatibilityActivity(*s.Compatibility))
			}
			if err := add(d, at[ts[i]]); err != nil {
				return err
			}
		}
	}
	for _, a := range acts {
		if err := add(store.Derived{Activities: []room.Activity{a.a}}, a.rec); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.writes = append(b.writes, out...)
	b.mu.Unlock()
	return nil
}

// flush writes the batch's derived items in shared BatchWriteItem calls
// (Store.PutEach). When a call fails, each group with an item in it fails
// at the earliest record that asked for one (its later records come again,
// and rewrite the same items: their keys come from the records). An item
// asked for twice — a record delivered twice in one batch — is written once.
func (b *batch) flush(ctx context.Context) []failure {
	items := make([]map[string]types.AttributeValue, len(b.writes))
	for i, w := range b.writes {
		items[i] = w.item
	}
	var fails []failure
	for i, err := range b.p.Store.PutEach(ctx, items) {
		if err != nil {
			fails = append(fails, failure{b.writes[i].group, b.writes[i].rec, fmt.Errorf("write derived items: %w", err)})
		}
	}
	return fails
}

// failure is a record that work shared by several groups, done after or
// beside stream.Keyed.Run, could not finish: Handle passes it to
// Result.Fail, which stops the record's group there.
type failure struct {
	group, rec int
	err        error
}
