package stream

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// Health statuses, from the best to the worst. A Runner's status is its
// worst shard's, except that a paused Runner is Paused (nothing it does not
// do can be stuck).
const (
	// Idle: every record read is finished and the last read found nothing
	// new; the consumer is caught up.
	Idle = "idle"
	// OK: records are being read and handled.
	OK = "ok"
	// Paused: Pause was called; nothing is read and no handler runs until
	// Resume.
	Paused = "paused"
	// Stuck: records are waiting and the checkpoint has not moved for
	// StuckAfter (a poison record retried Forever, a hung handler), or the
	// shard (or the stream's description) could not be read for that long.
	Stuck = "stuck"
	// Standby: another Runner of the same consumer holds its lease; this
	// one handles nothing until that one stops or its lease expires.
	Standby = "standby"
)

// Health is what a Runner knows about its progress, as Runner.Health
// reports it. It is a snapshot: it is consistent per shard, not across
// shards.
type Health struct {
	Consumer string `json:"consumer"`
	// Status is Idle, OK, Paused, Stuck or Standby; Reason says why for
	// Stuck, Paused and Standby.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// PausedSince is when Pause was called (zero when running).
	PausedSince time.Time `json:"pausedSince,omitzero"`
	// StuckAfter is the threshold Status is judged by.
	StuckAfter time.Duration `json:"stuckAfterNs"`
	// Shards are the shards being read now (a drained shard leaves the
	// list), by shard id.
	Shards []ShardHealth `json:"shards"`
	Stats  Stats         `json:"stats"`
	// DeadLettersWaiting counts dead letters the sink (the on-failure
	// destination) refused and the Runner is still offering it (their
	// shards wait, so nothing is lost), DeadLetterSinkFailingSince is when
	// the oldest was first refused, and DeadLetterSinkError the latest
	// refusal. Status is Stuck once that is StuckAfter ago.
	DeadLettersWaiting         int       `json:"deadLettersWaiting,omitempty"`
	DeadLetterSinkFailingSince time.Time `json:"deadLetterSinkFailingSince,omitzero"`
	DeadLetterSinkError        string    `json:"deadLetterSinkError,omitempty"`
}

// ShardHealth is one shard's part of Health.
type ShardHealth struct {
	ShardID string `json:"shardId"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	// Checkpoint is the sequence number everything up to which is finished
	// (handled or dead-lettered); the stored checkpoint follows it.
	Checkpoint string `json:"checkpoint,omitempty"`
	// LastRead is the newest sequence number read from the shard.
	LastRead string `json:"lastRead,omitempty"`
	// Waiting counts records read and not yet finished.
	Waiting int `json:"waiting"`
	// OldestWaiting is how long the oldest of them has been waiting since
	// it was read: the consumer's own lag, exact wherever it runs.
	OldestWaiting time.Duration `json:"oldestWaitingNs"`
	// IteratorAge is the newest record's age when the latest batch was
	// handed to the handler, as Lambda's IteratorAge metric (see the
	// package documentation for how the age is known).
	IteratorAge time.Duration `json:"iteratorAgeNs"`
	// LastSuccess is when a handler call last succeeded on this shard.
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	// LastProgress is when the checkpoint last moved (or records started
	// waiting, or the runner resumed): what Stuck is judged by.
	LastProgress time.Time `json:"lastProgress,omitzero"`
	// ConsecutiveFailures counts handler calls that failed since the last
	// one that succeeded; LastError is the latest failure's reason.
	ConsecutiveFailures int    `json:"consecutiveFailures"`
	LastError           string `json:"lastError,omitempty"`
	// ReadFailingSince is when reading the shard began to fail (zero when
	// the last read succeeded), ReadError why.
	ReadFailingSince time.Time `json:"readFailingSince,omitzero"`
	ReadError        string    `json:"readError,omitempty"`
	// DeadLettered counts this shard's records sent to the dead-letter sink.
	DeadLettered int64 `json:"deadLettered"`
}

// DefaultStuckAfter is Config.StuckAfter's default.
const DefaultStuckAfter = time.Minute

// shardHealth is a shard run's progress; guarded by the shard run's mu.
type shardHealth struct {
	lastRead                  string
	caughtUp                  bool // the last read found nothing new
	iteratorAge               time.Duration
	lastSuccess, lastProgress time.Time
	failures                  int
	lastError                 string
	readFailingSince          time.Time
	readError                 string
	deadLettered              int64
}

// errText shortens an error for a health report.
func errText(err error) string {
	s := err.Error()
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

func (sr *shardRun) noteRead(lastRead string, n int) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if lastRead != "" {
		sr.health.lastRead = lastRead
	}
	sr.health.caughtUp = n == 0
	sr.health.readFailingSince, sr.health.readError = time.Time{}, ""
}

func (sr *shardRun) noteReadError(err error, now time.Time) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.health.readFailingSince.IsZero() {
		sr.health.readFailingSince = now
	}
	sr.health.readError = errText(err)
}

// noteAge notes the iterator age of records read but not handed over.
func (sr *shardRun) noteAge(age time.Duration) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.health.iteratorAge = age
}

func (sr *shardRun) noteCall(age time.Duration, err error, now time.Time) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.health.iteratorAge = age
	if err == nil {
		sr.health.failures, sr.health.lastSuccess = 0, now
		return
	}
	sr.health.failures++
	sr.health.lastError = errText(err)
}

func (sr *shardRun) noteDeadLettered(n int) {
	sr.mu.Lock()
	sr.health.deadLettered += int64(n)
	sr.mu.Unlock()
}

// report is the shard's health; now and stuckAfter judge its status.
func (sr *shardRun) report(now time.Time, stuckAfter time.Duration, paused bool) ShardHealth {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	h := sr.health
	out := ShardHealth{
		ShardID: sr.shardID, Checkpoint: sr.done, LastRead: h.lastRead, Waiting: len(sr.pending),
		IteratorAge: h.iteratorAge, LastSuccess: h.lastSuccess, LastProgress: h.lastProgress,
		ConsecutiveFailures: h.failures, LastError: h.lastError,
		ReadFailingSince: h.readFailingSince, ReadError: h.readError, DeadLettered: h.deadLettered,
	}
	for _, t := range sr.pending {
		if !t.finished {
			out.OldestWaiting = now.Sub(t.readAt)
			break
		}
	}
	switch {
	case paused:
		out.Status = Paused
	case !h.readFailingSince.IsZero() && now.Sub(h.readFailingSince) >= stuckAfter:
		out.Status = Stuck
		out.Reason = fmt.Sprintf("the shard could not be read for %s: %s", now.Sub(h.readFailingSince).Round(time.Second), h.readError)
	case out.Waiting > 0 && now.Sub(h.lastProgress) >= stuckAfter:
		out.Status = Stuck
		out.Reason = fmt.Sprintf("%d record(s) waiting and the checkpoint has not moved for %s", out.Waiting, now.Sub(h.lastProgress).Round(time.Second))
		if h.failures > 0 {
			out.Reason += fmt.Sprintf(" (%d consecutive failed calls, the latest: %s)", h.failures, h.lastError)
		} else {
			out.Reason += " (a handler call has not returned)"
		}
	case out.Waiting == 0 && h.caughtUp:
		out.Status = Idle
	default:
		out.Status = OK
	}
	return out
}

// Health reports the Runner's progress and whether it is stuck. It is safe
// to call at any time, before Run too.
func (r *Runner) Health() Health {
	clock, stuckAfter, _, consumer := r.settings()
	now := clock()
	r.pause.mu.Lock()
	paused, since := r.pause.paused, r.pause.since
	r.pause.mu.Unlock()
	h := Health{Consumer: consumer, StuckAfter: stuckAfter, Stats: r.Stats(), Shards: []ShardHealth{}}
	if paused {
		h.PausedSince = since
	}
	for _, sr := range r.shardRuns() {
		h.Shards = append(h.Shards, sr.report(now, stuckAfter, paused))
	}
	sort.Slice(h.Shards, func(i, j int) bool { return h.Shards[i].ShardID < h.Shards[j].ShardID })
	rank := map[string]int{Idle: 0, OK: 1, Stuck: 2}
	h.Status = Idle
	for _, s := range h.Shards {
		if rank[s.Status] > rank[h.Status] {
			h.Status, h.Reason = s.Status, s.Reason
			if s.Status == Stuck {
				h.Reason = "shard " + s.ShardID + ": " + s.Reason
			}
		}
	}
	r.shardMu.Lock()
	failingSince, describeErr := r.describeFailingSince, r.describeErr
	standby, holder := r.standby, r.holder
	r.shardMu.Unlock()
	switch {
	case standby:
		h.Status, h.Reason = Standby, "another runner of this consumer holds its lease: "+holder.Owner.String()+" until "+holder.Until.UTC().Format(time.RFC3339)
	case paused:
		h.Status, h.Reason = Paused, "paused since "+since.UTC().Format(time.RFC3339)
	case h.Status != Stuck && !failingSince.IsZero() && now.Sub(failingSince) >= stuckAfter:
		h.Status = Stuck
		h.Reason = fmt.Sprintf("the stream could not be described for %s: %s", now.Sub(failingSince).Round(time.Second), describeErr)
	}
	h.DeadLettersWaiting, h.DeadLetterSinkFailingSince, h.DeadLetterSinkError = r.sink.report()
	if h.DeadLettersWaiting > 0 && now.Sub(h.DeadLetterSinkFailingSince) >= stuckAfter && !standby && !paused {
		h.Status = Stuck
		h.Reason = fmt.Sprintf("the dead-letter sink has refused %d dead letter(s) for %s (their shards wait): %s",
			h.DeadLettersWaiting, now.Sub(h.DeadLetterSinkFailingSince).Round(time.Second), h.DeadLetterSinkError)
	}
	return h
}

// shardRuns lists the shard runs under way.
func (r *Runner) shardRuns() []*shardRun {
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	out := make([]*shardRun, 0, len(r.active))
	for _, sr := range r.active {
		out = append(out, sr)
	}
	return out
}

// now is the Runner's clock; shard runs call it only after Run set it up,
// others through settings.
func (r *Runner) now() time.Time { return r.clock() }

// settings reads what Health, Pause and Resume need, which Run may be
// setting up at the same time (before Run: the caller's, or defaults).
func (r *Runner) settings() (now func() time.Time, stuckAfter time.Duration, log *slog.Logger, consumer string) {
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	now, stuckAfter, log, consumer = r.clock, r.cfg.StuckAfter, r.logger, r.cfg.Consumer
	if now == nil { // before a run: the caller's
		now, stuckAfter, log, consumer = r.Now, r.Config.StuckAfter, r.Logger, r.Config.Consumer
	}
	if now == nil {
		now = time.Now
	}
	if stuckAfter <= 0 {
		stuckAfter = DefaultStuckAfter
	}
	if log == nil {
		log = slog.Default()
	}
	return now, stuckAfter, log, consumer
}

// sinkHealth is the dead-letter sink's part of Health: dead letters it
// refused that are waiting to be taken, each with when it was first
// refused.
type sinkHealth struct {
	mu      sync.Mutex
	next    int
	waiting map[int]time.Time
	lastErr string
}

// refused notes a refusal of the dead letter id (0: its first, which
// starts its wait and returns its id).
func (s *sinkHealth) refused(id int, now time.Time, err error) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == 0 {
		s.next++
		id = s.next
		if s.waiting == nil {
			s.waiting = map[int]time.Time{}
		}
		s.waiting[id] = now
	}
	s.lastErr = errText(err)
	return id
}

// done notes that the dead letter id was taken (or is no longer waited
// for: the run ended, and its records are read again after a restart).
func (s *sinkHealth) done(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, id)
	if len(s.waiting) == 0 {
		s.lastErr = ""
	}
}

// report is how many wait, since when the oldest of them, and why.
func (s *sinkHealth) report() (waiting int, since time.Time, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.waiting {
		if since.IsZero() || t.Before(since) {
			since = t
		}
	}
	return len(s.waiting), since, s.lastErr
}
