package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynastream/dynastream/attr"
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

	// The Runner's lock order (docs/design.md §3): cpMu, then mu, then the
	// Windows' own lock (Snapshot under cpMu, never under mu); the
	// Runner's shardMu and gate.mu are each taken alone, with no other
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

func (r *Runner) newShardRun(ctx context.Context, log *slog.Logger, h Handler, shardID, checkpoint string) *shardRun {
	var win *Windows
	if r.windows != nil {
		win = &Windows{Size: r.TumblingWindow, Handler: r.windows, ShardID: shardID, StreamARN: r.StreamARN, Logger: log, RetryBackoff: r.RetryBackoff}
		if limit, _ := RetryLimit(r.MaxRetries); limit != Forever {
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
		seq, state, _ := strings.Cut(checkpoint, "\n")
		if state != "" {
			if err := win.Restore(state); err != nil {
				log.Error("window state kept with the checkpoint cannot be read; the window starts again from nothing", "err", err)
			}
		}
		checkpoint, h = seq, win.Handle
	} else if seq, state, ok := strings.Cut(checkpoint, "\n"); ok {
		log.Warn("the checkpoint holds a windowed consumer's state, which Run does not use (RunWindows does)", "state bytes", len(state))
		checkpoint = seq
	}
	pf := r.ParallelizationFactor
	sr := &shardRun{
		r: r, h: h, log: log, shardID: shardID, key: r.keyFunc(), ctx: ctx,
		limit: max(2*pf*r.BatchSize, 1000),
		lanes: make([][]events.DynamoDBEventRecord, pf), bySeq: map[string]*tracked{},
		done: checkpoint, written: checkpoint, win: win,
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
				sr.advance()
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
		if sr.r.Skip(rec) { // the loop guard
			t.finished, skipped = true, true
			sr.r.counters.skipped.Add(1)
			continue
		}
		sr.bySeq[t.seq] = t
		l := sr.laneOf(rec)
		sr.lanes[l] = append(sr.lanes[l], rec)
	}
	if skipped {
		sr.advance()
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
	sr.advance()
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
	sr.advance()
}

// advance must be called with mu held.
func (sr *shardRun) advance() {
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
		n := min(len(sr.lanes[i]), sr.r.BatchSize)
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

// checkpointer writes the checkpoint when it moved, at most once per
// CheckpointInterval and one write at a time: finishes that come meanwhile
// are folded into the next write. close writes the final position.
func (sr *shardRun) checkpointer() {
	defer close(sr.cpDone)
	var last time.Time
	for {
		select {
		case <-sr.stopCP:
			return
		case <-sr.kick:
		}
		if wait := sr.r.CheckpointInterval - time.Since(last); wait > 0 {
			select {
			case <-sr.stopCP:
				return
			case <-time.After(wait):
			}
		}
		sr.writeCheckpoint()
		last = time.Now()
	}
}

// writeCheckpoint writes the current position if it moved, retrying until
// it succeeds or ctx ends.
func (sr *shardRun) writeCheckpoint() bool {
	sr.cpMu.Lock()
	defer sr.cpMu.Unlock()
	backoff := sr.r.RetryBackoff
	for {
		sr.mu.Lock()
		target := sr.done
		sr.mu.Unlock()
		value := target
		if sr.win != nil && target != "" && target != shardEnd {
			// the window state moves without the position too (a final
			// call): compare what would be written
			value = target + "\n" + sr.win.Snapshot(target)
		}
		if target == "" || value == sr.written {
			return true
		}
		err := sr.r.Checkpoints.Put(context.WithoutCancel(sr.ctx), sr.r.Consumer, sr.shardID, value)
		if err == nil {
			sr.written = value
			sr.r.counters.checkpoints.Add(1)
			if sr.win != nil {
				sr.win.Forget(target)
			}
			continue // it may have moved meanwhile
		}
		sr.log.Error("checkpoint failed; retrying", "err", err)
		if sr.ctx.Err() != nil {
			return false
		}
		sr.r.sleep(sr.ctx, &backoff)
	}
}

// deliver hands a batch to the handler until every record is either handled
// or dead-lettered, marking them finished as it goes. It returns false when
// ctx ended first. While the Runner is paused it starts no handler call.
func (sr *shardRun) deliver(batch []events.DynamoDBEventRecord) bool {
	r, ctx := sr.r, sr.ctx
	queue := []pendingBatch{{Pending: Pending{Records: batch}}}
	for len(queue) > 0 {
		p := &queue[0]
		if p.attempts > 0 {
			backoff := r.RetryBackoff << min(p.attempts-1, 8)
			select {
			case <-ctx.Done():
				return false
			case <-time.After(min(backoff, 30*time.Second)):
			}
		}
		if !r.gate.enter(ctx) {
			return false
		}
		var ok bool
		queue, ok = sr.attempt(queue)
		r.gate.exit()
		if !ok {
			return false
		}
	}
	return true
}

// pendingBatch is records deliver still has to hand over, with the
// handler's failures on them (the Policy's count) and how often they were
// handed over (for the backoff and the dead letter).
type pendingBatch struct {
	Pending
	attempts int
	last     callOutcome // of the last call on these records
}

// deadLetter is a dead letter of some of p's records, with its last call.
func (p *pendingBatch) deadLetter(r *Runner, shardID string, recs []events.DynamoDBEventRecord, cause error) DeadLetter {
	dl := r.newDeadLetter(shardID, recs, p.attempts, cause)
	dl.RequestID, dl.FunctionError = p.last.requestID, p.last.functionError
	return dl
}

// attempt calls the handler on queue's first batch once and does what the
// Policy says of its answer (finish, retry, bisect, dead-letter), returning
// the queue left; false when ctx ended first.
func (sr *shardRun) attempt(queue []pendingBatch) ([]pendingBatch, bool) {
	r, ctx, log := sr.r, sr.ctx, sr.log
	p := &queue[0]
	now := r.Now()
	if expired, rest := r.Policy().Expired(p.Records, sr.created, now); expired != nil {
		// No call, but the records were read this late: IteratorAge says
		// so, as it does for a batch handed over.
		age := IteratorAge(expired[len(expired)-1:], now, sr.created)
		r.counters.iteratorAge.Store(int64(age))
		sr.noteAge(age)
		dl := p.deadLetter(r, sr.shardID, expired, fmt.Errorf("%d record(s) older than MaxRecordAge %s", len(expired), r.MaxRecordAge))
		dl.Condition = RecordAgeExceeded
		if !r.putDeadLetter(ctx, log, dl) {
			return queue, false
		}
		sr.noteDeadLettered(len(expired))
		sr.finish(expired)
		if p.Records = rest; len(rest) == 0 {
			sr.writeCheckpoint()
			return queue[1:], true
		}
	}
	p.attempts++
	failedAt, err := r.call(ctx, sr, p.Records, p.attempts, &p.last)
	if failedAt >= 0 && ctx.Err() != nil {
		return queue, false
	}
	finished, dead, next := r.Policy().After(p.Pending, failedAt, true)
	sr.finish(finished)
	if failedAt < 0 {
		return queue[1:], true
	}
	// Before a retry, the checkpoint moves up to the failure, as Lambda's
	// does.
	sr.writeCheckpoint()
	log.Warn("batch failed", "records", len(p.Records)-failedAt, "attempt", p.attempts, "first", p.Records[failedAt].Change.SequenceNumber, "err", err)
	if dead != nil {
		if !r.putDeadLetter(ctx, log, p.deadLetter(r, sr.shardID, dead, err)) {
			return queue, false
		}
		sr.noteDeadLettered(len(dead))
		sr.finish(dead)
		sr.writeCheckpoint()
		return queue[1:], true
	}
	rest := make([]pendingBatch, len(next))
	for i, n := range next {
		rest[i] = pendingBatch{Pending: n, last: p.last}
	}
	if len(next) == 1 { // the same records again: their calls go on counting
		rest[0].attempts = p.attempts
	}
	return append(rest, queue[1:]...), true
}

// fullRead is GetRecords' largest page: a read that fills it means more
// records are waiting.
const fullRead = 1000

// runShard reads one shard until it ends (true) or ctx is done (false).
func (r *Runner) runShard(ctx context.Context, log *slog.Logger, h Handler, shardID, checkpoint string) bool {
	sr := r.newShardRun(ctx, log, h, shardID, checkpoint)
	rd := &shardReader{r: r, sr: sr, log: log, shardID: shardID,
		lastRead: sr.done, from: types.ShardIteratorType(r.StartingPosition), backoff: r.RetryBackoff}
	for ctx.Err() == nil && !rd.ended {
		if !r.gate.wait(ctx) { // paused: read nothing
			break
		}
		if rd.iter == nil {
			if step := rd.renewIterator(ctx); step == readAgain {
				continue
			} else if step == readStop {
				break
			}
		}
		if !rd.spaceRead(ctx) {
			break
		}
		readStart := r.Now()
		out, step := rd.getRecords(ctx)
		if step == readAgain {
			continue
		} else if step == readStop {
			break
		}
		if r.gate.isPaused() {
			// Paused while the read was under way: take nothing in. The
			// same iterator reads these records again on resume (or, if it
			// has expired by then, one renewed after lastRead).
			continue
		}
		took := rd.take(ctx, out.Records)
		rd.advance(out, readStart) // past the read, even when take stopped
		if !took {
			break
		}
		if !rd.flushIfDue() {
			break
		}
		rd.pace(ctx, len(out.Records))
	}
	if rd.ended && len(rd.buf) > 0 { // records read before the iterator was renewed
		rd.flush()
	}
	allDone := sr.close()
	if ctx.Err() != nil || !rd.ended || !allDone {
		return false
	}
	if sr.win != nil && !sr.closeWindow() {
		return false
	}
	if err := r.Checkpoints.Put(context.WithoutCancel(ctx), r.Consumer, shardID, shardEnd); err != nil {
		log.Error("checkpoint shard end failed", "err", err)
	}
	log.Info("shard drained")
	return true
}

// shardReader is runShard's reading of one shard: where it is, and the
// records gathered for the batch window. Its steps are runShard's loop,
// one read at a time: renewIterator, getRecords, take, advance,
// flushIfDue, pace.
type shardReader struct {
	r       *Runner
	sr      *shardRun
	log     *slog.Logger
	shardID string
	// lastRead is the position of the newest record read; from is where
	// to start while it is "".
	lastRead string
	from     types.ShardIteratorType
	iter     *string
	backoff  time.Duration
	ended    bool // the shard is closed and read to its end
	// buf is gathered for the batch window; kept counts the records of it
	// the filter keeps, and firstBuffered is when the first of them came.
	buf           []gathered
	kept          int
	firstBuffered time.Time
	// tipReadAt is the start of the last read that reached the shard's end.
	tipReadAt time.Time
	// lastCall is when the last GetRecords call was made (wall clock: it
	// paces real calls).
	lastCall time.Time
}

// spaceRead waits until a GetRecords call keeps the shard's reads within
// ReadsPerSecond: its calls start a tenth more than 1/ReadsPerSecond
// apart, so that calls that reach DynamoDB a little unevenly still keep
// to the rate. False: ctx ended.
func (rd *shardReader) spaceRead(ctx context.Context) bool {
	if n := rd.r.ReadsPerSecond; n > 0 && !rd.lastCall.IsZero() {
		gap := time.Second / time.Duration(n)
		if wait := gap + gap/10 - time.Since(rd.lastCall); wait > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
			}
		}
	}
	rd.lastCall = time.Now()
	return true
}

// readStep is what runShard's loop does after one of its steps.
type readStep int

const (
	readOn    readStep = iota // go on with the step after
	readAgain                 // read again from the top of the loop
	readStop                  // leave the loop
)

// renewIterator takes a shard iterator at the reader's position. A
// checkpoint older than the stream's retention restarts at TRIM_HORIZON
// (said, as records were lost); a failure is retried after a pause; a
// closed shard with nothing after the position has ended.
func (rd *shardReader) renewIterator(ctx context.Context) readStep {
	r := rd.r
	iter, err := r.iterator(ctx, rd.shardID, rd.lastRead, rd.from)
	if err != nil {
		var trimmed *types.TrimmedDataAccessException
		if errors.As(err, &trimmed) && rd.lastRead != "" {
			rd.log.Error("checkpoint is older than the stream's 24 h retention; records were lost before this consumer read them; resuming at TRIM_HORIZON", "checkpoint", rd.lastRead)
			rd.lastRead, rd.from = "", types.ShardIteratorTypeTrimHorizon
			return readAgain
		}
		rd.log.Error("get shard iterator failed; retrying", "err", err)
		rd.sr.noteReadError(err, r.now())
		r.sleep(ctx, &rd.backoff)
		return readAgain
	}
	if iter == nil { // a closed shard with nothing after the position
		rd.ended = true
		return readStop
	}
	rd.iter = iter
	return readOn
}

// getRecords reads the shard once. An expired iterator is renewed; one
// that points before the oldest record is renewed after lastRead (or at
// TRIM_HORIZON when nothing was read); any other failure is retried after
// a pause. A success resets the pause.
func (rd *shardReader) getRecords(ctx context.Context) (*dynamodbstreams.GetRecordsOutput, readStep) {
	r := rd.r
	out, err := r.API.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: rd.iter, Limit: aws.Int32(fullRead)}, noRetryOfLimits)
	if err == nil {
		rd.backoff = r.RetryBackoff
		r.counters.polls.Add(1)
		return out, readOn
	}
	var limited *types.LimitExceededException
	if errors.As(err, &limited) {
		// The shard's reads are over their rate: another call within the
		// second would be refused too (the SDK's quick retries were), so
		// the reader waits it out. Not an error: said at Info.
		rd.log.Info("get records refused for its rate; reading again in a second", "err", err)
		select {
		case <-ctx.Done():
			return nil, readStop
		case <-time.After(time.Second):
		}
		return nil, readAgain
	}
	var expired *types.ExpiredIteratorException
	if errors.As(err, &expired) {
		rd.log.Info("shard iterator expired; renewing", "after", rd.lastRead)
		rd.iter = nil
		return nil, readAgain
	}
	var trimmed *types.TrimmedDataAccessException
	if errors.As(err, &trimmed) {
		// The iterator points before the oldest record the shard still
		// has; retrying it can never succeed. Renew it: after lastRead
		// (GetShardIterator reports a loss if that is trimmed too), or,
		// when nothing was read yet, at TRIM_HORIZON, which is not older
		// than where a TRIM_HORIZON or LATEST iterator pointed. DynamoDB
		// Local does this to an iterator taken on an empty shard once
		// another table's write has used the sequence number it points at.
		if rd.lastRead == "" {
			// nothing read, nothing lost: a fresh DynamoDB Local's first
			// write does this, on every run
			rd.log.Info("shard iterator taken on an empty shard is behind its first record (harmless: nothing was read yet); renewing at TRIM_HORIZON", "err", err)
			rd.from = types.ShardIteratorTypeTrimHorizon
		} else {
			rd.log.Warn("shard iterator points before the oldest record; renewing", "after", rd.lastRead, "err", err)
		}
		rd.iter = nil
		r.sleep(ctx, &rd.backoff)
		return nil, readAgain
	}
	if ctx.Err() != nil {
		return nil, readStop
	}
	rd.log.Error("get records failed; retrying", "err", err)
	rd.sr.noteReadError(err, r.now())
	r.sleep(ctx, &rd.backoff)
	return nil, readAgain
}

// take converts a read's records and gathers them for the batch window. A
// record that cannot be converted cannot be handled: it is dead-lettered
// (as it came) rather than dropped, after the records before it went to
// their lanes, so the shard's order holds. False: the shard run is
// closing.
func (rd *shardReader) take(ctx context.Context, recs []types.Record) bool {
	r := rd.r
	r.counters.recordsRead.Add(int64(len(recs)))
	if !r.fineTimes.Load() {
		for _, rec := range recs {
			if t := aws.ToTime(rec.Dynamodb.ApproximateCreationDateTime); !t.IsZero() && !t.Equal(t.Truncate(time.Minute)) {
				r.fineTimes.Store(true) // DynamoDB's creation times, to the second
				break
			}
		}
	}
	for _, rec := range recs {
		lr, err := attr.LambdaRecord(rec, r.StreamARN)
		if err != nil {
			if !rd.flush() {
				return false
			}
			seq := aws.ToString(rec.Dynamodb.SequenceNumber)
			if !r.deadLetter(ctx, rd.log, rd.shardID, nil, 0, fmt.Errorf("convert record %s: %w", seq, err), attr.RawRecord(rec)) {
				return false
			}
			rd.sr.noteDeadLettered(1)
			rd.sr.addFinished(seq)
			continue
		}
		// Lambda filters as it builds a batch: BatchSize and the batching
		// window count the records the filter keeps.
		keep := r.Filter.Match(lr)
		if keep {
			if rd.kept == 0 {
				rd.firstBuffered = r.Now()
			}
			rd.kept++
		}
		rd.buf = append(rd.buf, gathered{rec: lr, created: rd.created(lr.Change.ApproximateCreationDateTime.Time), kept: keep})
	}
	return true
}

// created is when a record whose ApproximateCreationDateTime is approx
// was created, as well as the reader knows it (tracked.created). DynamoDB
// rounds approx down to the second, and that is what Lambda counts a
// record's age from: the Runner takes it as it is. DynamoDB Local rounds
// it down to the minute, which alone would make a record read at once up
// to 60 s old; while every creation time read is a whole minute, the
// Runner takes the later of approx and the start of the last read that
// reached the shard's end without the record, but never more than the
// minute approx stands for: a read cut short by GetRecords' 1 MB looks
// like the shard's end, and must not make a backlog look new.
func (rd *shardReader) created(approx time.Time) time.Time {
	if rd.r.fineTimes.Load() || approx.IsZero() {
		return approx
	}
	limit := approx.Add(time.Minute - time.Nanosecond)
	if rd.tipReadAt.Before(limit) {
		limit = rd.tipReadAt
	}
	return later(approx, limit)
}

// advance moves the reader past a read: its position, the next iterator,
// whether the shard has ended, and when the shard's end was last reached.
func (rd *shardReader) advance(out *dynamodbstreams.GetRecordsOutput, readStart time.Time) {
	if len(out.Records) < fullRead {
		// A read that returned fewer records than asked for reached the
		// shard's end (always so on DynamoDB Local; as a rule on
		// DynamoDB): what comes next was created after it started.
		rd.tipReadAt = readStart
	}
	if len(out.Records) > 0 {
		rd.lastRead = aws.ToString(out.Records[len(out.Records)-1].Dynamodb.SequenceNumber)
	}
	rd.sr.noteRead(rd.lastRead, len(out.Records))
	rd.iter = out.NextShardIterator
	rd.ended = rd.iter == nil
}

// flushIfDue hands what was gathered to the lanes when the shard ended,
// the batch is full or the batch window has passed (counting the records
// the filter keeps), or when none gathered is kept, or the shard's limit
// is gathered. False: the shard run is closing.
func (rd *shardReader) flushIfDue() bool {
	r := rd.r
	if len(rd.buf) > 0 && (rd.ended || rd.kept == 0 || rd.kept >= r.BatchSize || len(rd.buf) >= rd.sr.limit ||
		r.Now().Sub(rd.firstBuffered) >= r.BatchWindow) {
		return rd.flush()
	}
	return true
}

// flush hands what was gathered to the lanes. False: the shard run is
// closing.
func (rd *shardReader) flush() bool {
	if len(rd.buf) == 0 {
		return true
	}
	ok := rd.sr.add(rd.buf)
	rd.buf, rd.kept = nil, 0
	return ok
}

// pace waits before the next read. Read again at once after a full read
// (a backlog); after an empty one, wait for the poll interval; after one
// in between, wait until what was read is finished, a poll interval at
// most: reading ahead must not turn into reading the shard in a loop while
// the handler works, and a consumer that keeps up reads again as soon as
// it is done, as it did one batch at a time.
func (rd *shardReader) pace(ctx context.Context, read int) {
	r := rd.r
	switch {
	case rd.ended || read >= fullRead:
	case len(rd.buf) > 0 || read == 0:
		if len(rd.buf) == 0 {
			rd.sr.windowDue()
		}
		wait := r.PollInterval
		if len(rd.buf) > 0 {
			wait = min(wait, r.BatchWindow-r.Now().Sub(rd.firstBuffered))
		}
		select {
		case <-ctx.Done():
		case <-time.After(max(wait, time.Millisecond)):
		}
	default:
		rd.sr.waitFinished(r.PollInterval)
	}
}

// created is when rec was created, as well as the runner knows it (see
// tracked.created).
func (sr *shardRun) created(rec events.DynamoDBEventRecord) time.Time {
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
	if !sr.r.gate.enter(sr.ctx) { // paused: no call
		return
	}
	made, err := sr.win.Due(sr.ctx, sr.r.Now())
	sr.r.gate.exit()
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
	backoff := sr.r.RetryBackoff
	for {
		err := sr.win.Close(sr.ctx, sr.r.Now())
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

// noRetryOfLimits has the SDK hand a GetRecords call refused for its rate
// (LimitExceededException) back at once rather than retry it within the
// same second, where it is refused again; the reader waits instead.
func noRetryOfLimits(o *dynamodbstreams.Options) {
	if o.Retryer != nil {
		o.Retryer = limitsNotRetried{o.Retryer}
	}
}

// limitsNotRetried is a retryer that does not retry LimitExceededException.
type limitsNotRetried struct{ aws.Retryer }

// GetAttemptToken passes the wrapped retryer's own on (aws.RetryerV2:
// the adaptive mode's client-side rate limit is kept).
func (r limitsNotRetried) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.Retryer.GetInitialToken(), nil
}

func (r limitsNotRetried) IsErrorRetryable(err error) bool {
	var limited *types.LimitExceededException
	return !errors.As(err, &limited) && r.Retryer.IsErrorRetryable(err)
}
