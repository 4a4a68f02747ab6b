package stream

import (
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Delivery of one lane's batches to the handler: retries, bisection on
// failure, and dead letters, under the Runner's Policy.

// deliver hands a batch to the handler until every record is either handled
// or dead-lettered, marking them finished as it goes. It returns false when
// ctx ended first. While the Runner is paused it starts no handler call.
func (sr *shardRun) deliver(batch []events.DynamoDBEventRecord) bool {
	r, ctx := sr.r, sr.ctx
	queue := []pendingBatch{{Pending: Pending{Records: batch}}}
	for len(queue) > 0 {
		p := &queue[0]
		if p.attempts > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(retryWait(r.cfg.RetryBackoff, p.attempts)):
			}
		}
		if !r.pause.enter(ctx) {
			return false
		}
		var ok bool
		queue, ok = sr.attempt(queue)
		r.pause.exit()
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
func (p *pendingBatch) deadLetterOf(r *Runner, shardID string, recs []events.DynamoDBEventRecord, cause error) DeadLetter {
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
	now := r.clock()
	if expired, rest := r.cfg.Policy().Expired(p.Records, sr.creationOf, now); expired != nil {
		// No call, but the records were read this late: IteratorAge says
		// so, as it does for a batch handed over.
		age := IteratorAge(expired[len(expired)-1:], now, sr.creationOf)
		r.counters.iteratorAge.Store(int64(age))
		sr.noteAge(age)
		dl := p.deadLetterOf(r, sr.shardID, expired, fmt.Errorf("%d record(s) older than MaxRecordAge %s", len(expired), r.cfg.MaxRecordAge))
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
	finished, dead, next := r.cfg.Policy().After(p.Pending, failedAt, true)
	sr.finish(finished)
	if failedAt < 0 {
		return queue[1:], true
	}
	// Before a retry, the checkpoint moves up to the failure, as Lambda's
	// does.
	sr.writeCheckpoint()
	log.Warn("batch failed", "records", len(p.Records)-failedAt, "attempt", p.attempts, "first", p.Records[failedAt].Change.SequenceNumber, "err", err)
	if dead != nil {
		if !r.putDeadLetter(ctx, log, p.deadLetterOf(r, sr.shardID, dead, err)) {
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
