package stream

import (
	"context"
	"time"
)

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
		if wait := sr.r.cfg.CheckpointInterval - time.Since(last); wait > 0 {
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
	backoff := sr.r.cfg.RetryBackoff
	for {
		sr.mu.Lock()
		target := sr.done
		sr.mu.Unlock()
		value := target
		if sr.win != nil && target != "" && target != shardEnd {
			// the window state moves without the position too (a final
			// call): compare what would be written
			value = position{seq: target, state: sr.win.StateAt(target)}.String()
		}
		if target == "" || value == sr.written {
			return true
		}
		err := sr.r.Checkpoints.Put(context.WithoutCancel(sr.ctx), sr.r.cfg.Consumer, sr.shardID, value)
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
