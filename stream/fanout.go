package stream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/filter"
)

// Fanout runs several consumers on one reader: one event source mapping
// (or one Runner), whose batches each Branch gets its share of. A DynamoDB
// stream shard should have at most two readers at a time, so a third
// consumer of a table joins one of them as a branch instead of adding a
// reader.
//
// Each branch is a consumer of its own:
//   - its own Filter and Skip: it is handed only the records they keep, in
//     stream order;
//   - its own failure handling: a call that fails as a whole (an error, a
//     panic) on several records is split, as Lambda bisects a batch: the
//     branch is handed the first half alone, down to one record, so that
//     one poison record never takes its neighbours with it. A failure
//     pinned on one record (reported by the handler, or a call of that
//     record alone) is an attempt: the record is handed again within the
//     same call of the Fanout, after RetryDelay (doubled each time, at
//     most 30 s), and after MaxAttempts failed calls on it the branch
//     gives up on it into its own DeadLetters and goes on with the
//     records after it. A branch's failure never reaches the reader: it
//     uses up none of the reader's retries (Lambda's
//     MaximumRetryAttempts), so the reader never gives up on a batch, for
//     every branch, that no branch gave up on; and since attempts are
//     counted within one call only, a new Fanout (a crash, a Lambda cold
//     start, another execution environment) counts the same. Only when
//     the call's context ends (or a wait would outlast its deadline), or
//     a dead letter cannot be put, does the Fanout report the lowest
//     record a branch has not finished, so the reader hands that record
//     and those after it again. A dependency that is down longer than a
//     record's waits (300 ms by default) therefore dead-letters every
//     record it meets: size RetryDelay and MaxAttempts to the outages you
//     ride out, or let the handler report the record failed only once it
//     knows it is the record's fault;
//   - it does not repeat what it finished: a record a branch finished is
//     not handed to it again when the batch comes back (a crash, another
//     consumer's failure in the same function), so a branch never makes
//     the others repeat their effects;
//   - its own counts (Stats).
//
// A branch's Filter and Skip narrow what the reader hands the Fanout; they
// cannot widen it (a reader that skips derived records skips them for
// every branch). A branch's retries hold the other branches' next batch up
// for their waits (100 ms and 200 ms by default), as the reader's own
// retries would, and count toward a Lambda function's timeout.
//
// What a branch finished is remembered in memory, per record, until every
// branch has finished the record, and at most MaxRemembered records
// (then forgotten at once). A record can therefore come again to a branch
// that had finished it after a restart (a Lambda cold start, or a retry
// that Lambda sends to another execution environment) or past
// MaxRemembered: delivery stays at least once, as every consumer's must
// be.
type Fanout struct {
	Branches []Branch
	// MaxRemembered bounds the records remembered (default 100,000).
	MaxRemembered int
	// RetryDelay is the wait before a branch's next call on a record it
	// failed, doubled at each failure of the record up to 30 s (default
	// 100 ms; negative: none).
	RetryDelay time.Duration
	// Now is the clock of the dead letters' FailedAt (default time.Now),
	// and Sleep waits out a RetryDelay, returning early with the context's
	// error (default: a timer).
	Now    func() time.Time
	Sleep  func(context.Context, time.Duration) error
	Logger *slog.Logger

	mu    sync.Mutex
	state map[string]*fanState // by eventID
	stats []BranchStats
}

// Branch is one consumer of a Fanout.
type Branch struct {
	// Name names the branch in its dead letters (DeadLetter.Consumer) and
	// its stats. Required, unique.
	Name    string
	Handler Handler
	// Filter and Skip choose its records, as Config.Filter and
	// Config.Skip do a Runner's (a zero Filter keeps every record; a nil
	// Skip is SkipDerived).
	Filter filter.Criteria
	Skip   SkipFunc
	// MaxAttempts is how many failed calls pinned on one record the branch
	// makes, within one call of the Fanout, before it gives up on it
	// (default 3). The calls of a split batch count none.
	MaxAttempts int
	// DeadLetters receives the records it gave up on, one dead letter per
	// record (required).
	DeadLetters DeadLetters
}

// BranchStats are a branch's counts since the Fanout started.
type BranchStats struct {
	Name string `json:"name"`
	// Calls of its handler, and of those the ones that failed.
	Calls       int64 `json:"calls"`
	FailedCalls int64 `json:"failedCalls"`
	// Records it finished (handled, or dead-lettered), records its filter
	// or skip left out, records not handed to it again because it had
	// finished them, and records it gave up on.
	Handled      int64 `json:"handled"`
	FilteredOut  int64 `json:"filteredOut"`
	NotRepeated  int64 `json:"notRepeated"`
	DeadLettered int64 `json:"deadLettered"`
}

// fanState is what the branches did with one record: done[b] once
// branch b finished it.
type fanState struct {
	done []bool
}

const (
	defaultBranchAttempts = 3
	defaultMaxRemembered  = 100_000
	defaultFanRetryDelay  = 100 * time.Millisecond
)

// Handler is the Fanout as one Handler: for a Runner, for LambdaHandler or
// consumer.Start. It checks the branches first.
func (f *Fanout) Handler() (Handler, error) {
	names := map[string]bool{}
	for i, b := range f.Branches {
		switch {
		case b.Name == "":
			return nil, fmt.Errorf("stream: fan-out branch %d has no name", i)
		case names[b.Name]:
			return nil, fmt.Errorf("stream: two fan-out branches are named %q", b.Name)
		case b.Handler == nil:
			return nil, fmt.Errorf("stream: fan-out branch %q has no handler", b.Name)
		case b.DeadLetters == nil:
			return nil, fmt.Errorf("stream: fan-out branch %q has no dead letters", b.Name)
		}
		names[b.Name] = true
	}
	if len(f.Branches) == 0 {
		return nil, fmt.Errorf("stream: a fan-out needs a branch")
	}
	f.mu.Lock()
	f.stats = make([]BranchStats, len(f.Branches))
	for i, b := range f.Branches {
		f.stats[i].Name = b.Name
	}
	f.state = map[string]*fanState{}
	f.mu.Unlock()
	return f.handle, nil
}

// Stats returns each branch's counts, in the order of Branches.
func (f *Fanout) Stats() []BranchStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]BranchStats(nil), f.stats...)
}

func (f *Fanout) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	recs := ev.Records
	// pending[b] are the indexes in recs branch b must still be handed
	pending := make([][]int, len(f.Branches))
	f.mu.Lock()
	limit := f.MaxRemembered
	if limit <= 0 {
		limit = defaultMaxRemembered
	}
	if len(f.state) >= limit {
		f.state = map[string]*fanState{} // forgotten at once, between batches
	}
	for i, r := range recs {
		st := f.stateOf(r.EventID)
		for b, br := range f.Branches {
			switch {
			case st.done[b]:
				f.stats[b].NotRepeated++
			case !keeps(br, r):
				st.done[b] = true
				f.stats[b].FilteredOut++
			default:
				pending[b] = append(pending[b], i)
			}
		}
	}
	f.mu.Unlock()

	// the lowest index each branch has not finished (len(recs): none)
	lowest := make([]int, len(f.Branches))
	var wg sync.WaitGroup
	for b := range f.Branches {
		lowest[b] = len(recs)
		if len(pending[b]) == 0 {
			continue
		}
		wg.Go(func() { lowest[b] = f.run(ctx, b, recs, pending[b]) })
	}
	wg.Wait()

	failedAt := len(recs)
	f.mu.Lock()
	for b := range f.Branches {
		failedAt = min(failedAt, lowest[b])
	}
	// a record every branch finished is not needed any more
	for _, r := range recs {
		if st, ok := f.state[r.EventID]; ok && all(st.done) {
			delete(f.state, r.EventID)
		}
	}
	f.mu.Unlock()
	if failedAt == len(recs) {
		return events.DynamoDBEventResponse{}, nil
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: recs[failedAt].Change.SequenceNumber}}}, nil
}

// run hands branch b its records (indexes idx into recs) and returns the
// lowest index it did not finish, len(recs) if it finished them all.
//
// A call that fails as a whole (an error, a panic) on more than one
// record blames none of them: the branch is handed the first half alone,
// at once, and so on down to one record, as Lambda bisects a batch. A
// failure pinned on one record (a failure the handler reported, or a call
// of that record alone) counts an attempt on it, in this call of the
// Fanout only; the record is handed again (with those after it) after a
// wait, doubled at each failure up to maxRetryWait, and at MaxAttempts
// it is dead-lettered and the branch is handed the records after it at
// once. run returns early, with the record unfinished, only when ctx ends
// (or a wait would outlast its deadline) or a dead letter cannot be put.
func (f *Fanout) run(ctx context.Context, b int, recs []events.DynamoDBEventRecord, idx []int) int {
	first := f.RetryDelay
	if first == 0 {
		first = defaultFanRetryDelay
	}
	limit := f.Branches[b].MaxAttempts
	if limit <= 0 {
		limit = defaultBranchAttempts
	}
	attempts := map[int]int{} // by index in recs
	width := len(idx)         // records handed per call
	for len(idx) > 0 {
		n := min(width, len(idx))
		at, err := f.runOnce(ctx, b, recs, idx[:n])
		switch {
		case err == nil: // the n records finished
			idx, width = idx[n:], len(idx)-n
			continue
		case ctx.Err() != nil: // stopping: not the record's fault
			return idx[max(at, 0)]
		case at < 0 && n > 1: // a whole call failed: halve it
			width = n / 2
			continue
		}
		at = max(at, 0)
		i := idx[at]
		attempts[i]++
		if attempts[i] >= limit {
			if !f.giveUp(ctx, b, recs[i], attempts[i], err) {
				return i // the reader hands it again
			}
			idx = idx[at+1:]
			width = len(idx)
			continue
		}
		if !f.sleep(ctx, retryWait(first, attempts[i])) {
			return i
		}
		idx = idx[at:]
		width = max(width-at, 1)
	}
	return len(recs)
}

// runOnce calls branch b once with the records idx and marks the ones it
// finished: those before the lowest its handler reports failed, all of
// them when the call succeeds. It returns nil, or the call's failure and
// the position in idx of the record it is pinned on (-1: the whole call
// failed, no record is to blame).
func (f *Fanout) runOnce(ctx context.Context, b int, recs []events.DynamoDBEventRecord, idx []int) (int, error) {
	br := f.Branches[b]
	mine := make([]events.DynamoDBEventRecord, len(idx))
	for j, i := range idx {
		mine[j] = recs[i]
	}
	resp, err := safeCall(ctx, br.Handler, events.DynamoDBEvent{Records: mine})
	failed := len(mine) // position in mine of the lowest failure
	whole := err != nil
	if err == nil && len(resp.BatchItemFailures) > 0 {
		// an unknown item identifier fails the whole batch, as Lambda's
		failed, err = lowestFailure(mine, resp)
		whole = err != nil
		if err == nil {
			err = fmt.Errorf("handler reported %d failed item(s)", len(resp.BatchItemFailures))
		}
	}
	if whole {
		failed = 0
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats[b].Calls++
	for _, r := range mine[:failed] {
		f.stateOf(r.EventID).done[b] = true
	}
	f.stats[b].Handled += int64(failed)
	if err == nil {
		return failed, nil
	}
	f.stats[b].FailedCalls++
	if whole {
		return -1, err
	}
	return failed, err
}

// giveUp puts r into branch b's dead letters and marks it finished; false
// if the dead letter could not be put.
func (f *Fanout) giveUp(ctx context.Context, b int, r events.DynamoDBEventRecord, attempts int, cause error) bool {
	br := f.Branches[b]
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	dl := DeadLetter{Consumer: br.Name, StreamARN: r.EventSourceArn, FirstSequenceNumber: r.Change.SequenceNumber,
		LastSequenceNumber: r.Change.SequenceNumber, Attempts: attempts, Error: cause.Error(), FailedAt: now().UTC(),
		Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}}, Condition: RetryAttemptsExhausted}
	if err := br.DeadLetters.Put(ctx, dl); err != nil {
		f.logger().Error("stream: fan-out branch could not dead-letter a record; the reader hands it again", "branch", br.Name, "seq", r.Change.SequenceNumber, "err", err)
		return false
	}
	f.logger().Error("stream: fan-out branch gave up on a record (dead-lettered)", "branch", br.Name, "seq", r.Change.SequenceNumber, "attempts", attempts, "err", cause)
	f.mu.Lock()
	f.stateOf(r.EventID).done[b] = true
	f.stats[b].DeadLettered++
	f.stats[b].Handled++
	f.mu.Unlock()
	return true
}

// sleep waits d (none when d is negative) and reports whether the call
// goes on: false when ctx ends first, or would end before d has passed
// (the reader then hands the record again, rather than the call time out).
func (f *Fanout) sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	if f.Sleep != nil {
		return f.Sleep(ctx, d) == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// stateOf is a record's state, made if new (f.mu held).
func (f *Fanout) stateOf(eventID string) *fanState {
	st, ok := f.state[eventID]
	if !ok {
		st = &fanState{done: make([]bool, len(f.Branches))}
		f.state[eventID] = st
	}
	return st
}

func keeps(b Branch, r events.DynamoDBEventRecord) bool {
	skip := b.Skip
	if skip == nil {
		skip = SkipDerived
	}
	return !skip(r) && (len(b.Filter) == 0 || b.Filter.Match(r))
}

func all(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

func (f *Fanout) logger() *slog.Logger {
	if f.Logger != nil {
		return f.Logger
	}
	return slog.Default()
}
