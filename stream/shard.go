package stream

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// A shard is read by one reader, which reads ahead (up to a bound) and
// hands each record to one of ParallelizationFactor lanes, chosen by its
// partition key. Each lane hands its records to the handler one batch after
// another, with the retries, bisection and dead letters of deliver. Every
// record read is tracked in stream order until it is finished (handled or
// dead-lettered); the checkpoint is the newest record before which every
// record is finished, so it never passes one that is not.
type shardRun struct {
	r       *Runner
	h       Handler
	log     *slog.Logger
	shardID string
	key     KeyFunc
	ctx     context.Context
	limit   int // most records held at once (read and not yet past the checkpoint)

	// The Runner's lock order (DESIGN.md, Locks): cpMu, then mu, then the
	// Windows' own lock (StateAt under cpMu, never under mu); the
	// Runner's shardMu and pause.mu are each taken alone, with no other
	// lock held, and neither is held while taking another.
	mu      sync.Mutex
	cond    *sync.Cond // signalled when records arrive, finish, or ctx ends
	lanes   [][]events.DynamoDBEventRecord
	pending []*tracked // read, in stream order, up to the first unfinished one and beyond
	bySeq   map[string]*tracked
	done    string // everything up to this sequence number is finished
	closing bool   // the reader will add nothing more
	wg      sync.WaitGroup

	cpMu    sync.Mutex // serialises checkpoint writes
	written string
	// win is the shard's tumbling windows (RunWindows; nil: none): the
	// handler, and the state written with the checkpoint.
	win    *Windows
	kick   chan struct{}
	stopCP chan struct{}
	cpDone chan struct{}
	unwake func() bool // stops the wake-up on ctx's end

	health shardHealth // guarded by mu
}

type tracked struct {
	seq      string
	finished bool
	readAt   time.Time
	// created is when the record was created, as well as it is known: its
	// ApproximateCreationDateTime (rounded down to the second by DynamoDB,
	// to the minute by DynamoDB Local) or, when later, the start of the
	// last read that reached the shard's end without it (runShard).
	created time.Time
}

func (r *Runner) newShardRun(ctx context.Context, log *slog.Logger, h Handler, shardID string, from position) *shardRun {
	var win *Windows
	if r.windows != nil {
		win = &Windows{Size: r.cfg.TumblingWindow, Handler: r.windows, ShardID: shardID, StreamARN: r.cfg.StreamARN, Logger: log, RetryBackoff: r.cfg.RetryBackoff}
		if limit, _ := RetryLimit(r.cfg.MaxRetries); limit != Forever {
			// a final call that keeps failing is given up on as the
			// window's, before the records after it would be
			win.FinalAttempts = limit + 1
			win.OnGiveUp = func(ctx context.Context, g WindowGiveUp) error {
				dl := r.newDeadLetter(shardID, nil, g.Attempts, g.Err)
				dl.FirstSequenceNumber, dl.LastSequenceNumber = g.First, g.Last
				dl.Window, dl.WindowState = &g.Window, g.State
				if !r.putDeadLetter(ctx, log, dl) {
					return ctx.Err()
				}
				return nil
			}
		}
		if from.state != "" {
			if err := win.Restore(from.state); err != nil {
				log.Error("window state kept with the checkpoint cannot be read; the window starts again from nothing", "err", err)
			}
		}
		h = win.Handle
	} else if from.state != "" {
		log.Warn("the checkpoint holds a windowed consumer's state, which Run does not use (RunWindows does)", "state bytes", len(from.state))
	}
	pf := r.cfg.ParallelizationFactor
	sr := &shardRun{
		r: r, h: h, log: log, shardID: shardID, key: r.keyFunc(), ctx: ctx,
		limit: max(2*pf*r.cfg.BatchSize, 1000),
		lanes: make([][]events.DynamoDBEventRecord, pf), bySeq: map[string]*tracked{},
		done: from.seq, written: from.seq, win: win,
		kick: make(chan struct{}, 1), stopCP: make(chan struct{}), cpDone: make(chan struct{}),
	}
	sr.cond = sync.NewCond(&sr.mu)
	sr.health.lastProgress = r.now()
	r.shardMu.Lock()
	if r.active == nil {
		r.active = map[string]*shardRun{}
	}
	r.active[shardID] = sr
	r.shardMu.Unlock()
	sr.unwake = context.AfterFunc(ctx, func() {
		sr.mu.Lock()
		sr.cond.Broadcast()
		sr.mu.Unlock()
	})
	for i := range pf {
		sr.wg.Go(func() { sr.lane(i) })
	}
	go sr.checkpointer()
	return sr
}

// Lane is the lane (0 to lanes-1) of a record whose key is key, when a
// shard's records are spread over lanes by key: the Runner's rule, which the
// replay kit follows too.
func Lane(key string, lanes int) int {
	if lanes <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(lanes))
}

// laneOf picks a record's lane by its key.
func (sr *shardRun) laneOf(rec events.DynamoDBEventRecord) int {
	if len(sr.lanes) == 1 {
		return 0
	}
	return Lane(sr.key(rec), len(sr.lanes))
}

// gathered is a record the reader gathered for the batch window: when it
// was created, as well as the reader knows it (tracked.created), and
// whether the mapping's filter keeps it.
type gathered struct {
	rec     events.DynamoDBEventRecord
	created time.Time
	kept    bool
}

// add hands records to their lanes, in stream order, waiting while the
// shard holds its limit. Records Filter filters out and records Skip skips
// are finished at once, in their place in the order. It returns false
// when ctx ended first.
func (sr *shardRun) add(recs []gathered) bool {
	now := sr.r.now()
	sr.mu.Lock()
	defer sr.mu.Unlock()
	skipped := false
	for _, g := range recs {
		rec := g.rec
		for len(sr.pending) >= sr.limit && sr.ctx.Err() == nil {
			if skipped { // finished records may free the room
				sr.advanceDone()
				skipped = false
				continue
			}
			sr.cond.Wait()
		}
		if sr.ctx.Err() != nil {
			return false
		}
		if len(sr.pending) == 0 { // records start waiting: the clock of Stuck starts
			sr.health.lastProgress = now
		}
		t := &tracked{seq: rec.Change.SequenceNumber, readAt: now, created: g.created}
		sr.pending = append(sr.pending, t)
		if !g.kept { // the mapping's filter
			t.finished, skipped = true, true
			sr.r.counters.filteredOut.Add(1)
			continue
		}
		if sr.r.cfg.Skip(rec) { // the loop guard
			t.finished, skipped = true, true
			sr.r.counters.skipped.Add(1)
			continue
		}
		sr.bySeq[t.seq] = t
		l := sr.laneOf(rec)
		sr.lanes[l] = append(sr.lanes[l], rec)
	}
	if skipped {
		sr.advanceDone()
	}
	sr.cond.Broadcast()
	return true
}

// addFinished tracks a record that is already finished (dead-lettered by
// the reader because it could not be converted).
func (sr *shardRun) addFinished(seq string) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	t := &tracked{seq: seq, finished: true, readAt: sr.r.now()}
	sr.pending = append(sr.pending, t)
	sr.advanceDone()
}

// finish marks records finished and moves the checkpoint over every
// finished record at the head of the stream order.
func (sr *shardRun) finish(recs []events.DynamoDBEventRecord) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, rec := range recs {
		if t, ok := sr.bySeq[rec.Change.SequenceNumber]; ok {
			t.finished = true
			delete(sr.bySeq, t.seq)
		}
	}
	sr.advanceDone()
}

// advanceDone moves done (the checkpoint's position) over the finished
// records at the front of pending. It must be called with mu held.
func (sr *shardRun) advanceDone() {
	n := 0
	for n < len(sr.pending) && sr.pending[n].finished {
		n++
	}
	if n == 0 {
		return
	}
	sr.done = sr.pending[n-1].seq
	sr.health.lastProgress = sr.r.now()
	clear(sr.pending[:n])
	sr.pending = sr.pending[n:]
	sr.cond.Broadcast()
	select {
	case sr.kick <- struct{}{}:
	default:
	}
}

// lane hands one lane's records to the handler, a batch at a time, until
// the shard closes and the lane is empty, or ctx ends.
func (sr *shardRun) lane(i int) {
	for {
		sr.mu.Lock()
		for len(sr.lanes[i]) == 0 && !sr.closing && sr.ctx.Err() == nil {
			sr.cond.Wait()
		}
		if sr.ctx.Err() != nil || len(sr.lanes[i]) == 0 {
			sr.mu.Unlock()
			return
		}
		n := min(len(sr.lanes[i]), sr.r.cfg.BatchSize)
		batch := sr.lanes[i][:n:n]
		sr.lanes[i] = sr.lanes[i][n:]
		sr.mu.Unlock()
		if !sr.deliver(batch) {
			return
		}
	}
}

// waitFinished waits until every record read is finished, or for d at
// most, or until ctx ends.
func (sr *shardRun) waitFinished(d time.Duration) {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, func() {
		sr.mu.Lock()
		sr.cond.Broadcast()
		sr.mu.Unlock()
	})
	defer t.Stop()
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for len(sr.pending) > 0 && sr.ctx.Err() == nil && time.Now().Before(deadline) {
		sr.cond.Wait()
	}
}

// close says no more records will come and waits for the lanes to finish
// what they hold (or for ctx to end). It returns whether every record read
// is finished.
func (sr *shardRun) close() bool {
	sr.mu.Lock()
	sr.closing = true
	sr.cond.Broadcast()
	sr.mu.Unlock()
	sr.wg.Wait()
	sr.unwake()
	sr.r.shardMu.Lock()
	if sr.r.active[sr.shardID] == sr {
		delete(sr.r.active, sr.shardID)
	}
	sr.r.shardMu.Unlock()
	close(sr.stopCP)
	<-sr.cpDone
	sr.writeCheckpoint() // the final position, whatever ctx says
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return len(sr.pending) == 0
}

// creationOf is when rec was created, as well as the runner knows it (see
// tracked.created).
func (sr *shardRun) creationOf(rec events.DynamoDBEventRecord) time.Time {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if t, ok := sr.bySeq[rec.Change.SequenceNumber]; ok && !t.created.IsZero() {
		return t.created
	}
	return rec.Change.ApproximateCreationDateTime.Time
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// windowDue makes the final call of a window that has ended by the clock
// while nothing later came, when every record read is finished (no call
// is under way then).
func (sr *shardRun) windowDue() {
	if sr.win == nil {
		return
	}
	sr.mu.Lock()
	idle := len(sr.pending) == 0
	sr.mu.Unlock()
	if !idle {
		return
	}
	if !sr.r.pause.enter(sr.ctx) { // paused: no call
		return
	}
	made, err := sr.win.Due(sr.ctx, sr.r.clock())
	sr.r.pause.exit()
	if err != nil {
		sr.log.Error("final call of an ended window failed; retrying at the next poll", "err", err)
	}
	if made { // the window's state is final now: keep that with the checkpoint
		sr.writeCheckpoint()
	}
}

// closeWindow makes the final call of the window open at the shard's end,
// retrying until it succeeds or ctx ends (false).
func (sr *shardRun) closeWindow() bool {
	backoff := sr.r.cfg.RetryBackoff
	for {
		err := sr.win.Close(sr.ctx, sr.r.clock())
		if err == nil {
			return true
		}
		sr.log.Error("final call of the window at the shard's end failed; retrying", "err", err)
		if sr.ctx.Err() != nil {
			return false
		}
		sr.r.sleep(sr.ctx, &backoff)
	}
}
