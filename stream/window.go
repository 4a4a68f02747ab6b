package stream

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// WindowHandler is a consumer of tumbling windows: the signature Lambda
// calls when the event source mapping has TumblingWindowInSeconds. Each
// call gets records of one window of one shard and the state the previous
// call of that window answered with; the window's final call
// (IsFinalInvokeForWindow) gets no records and the window's whole state —
// write the aggregate there, idempotently (keyed by shard and window), as
// it can come again.
type WindowHandler func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error)

// Limits of tumbling windows, as Lambda's.
const (
	// MaxTumblingWindow is TumblingWindowInSeconds' largest value.
	MaxTumblingWindow = 900 * time.Second
	// MaxWindowState is the most state a shard's windows hold, keys and
	// values together ("the maximum allowed size for state is 1 MB per
	// shard": Lambda, "Using tumbling windows").
	MaxWindowState = 1 << 20
)

// WindowOf is the tumbling window of the given size holding t: windows
// are aligned to the Unix epoch, as the event source mapping's.
func WindowOf(t time.Time, size time.Duration) events.Window {
	sec := int64(size / time.Second)
	start := t.Unix() - ((t.Unix()%sec)+sec)%sec
	return events.Window{Start: events.RFC3339EpochTime{Time: time.Unix(start, 0).UTC()}, End: events.RFC3339EpochTime{Time: time.Unix(start+sec, 0).UTC()}}
}

// WindowGrace is how long a window stays open after its end for records
// created before its end that the stream shows late: a window's final call
// is made once the newest record handed over (or, with no record coming,
// the clock) is that far past the window's end.
const WindowGrace = 5 * time.Second

// Windows runs a WindowHandler over one shard's records, delivered in
// shard order in batches by a Runner or the replay kit, as the event
// source mapping runs a function with TumblingWindowInSeconds: it cuts
// each batch into calls of one window each (by the records'
// ApproximateCreationDateTime), hands every call the state its window's
// previous call answered with, and makes each window's final call, with
// the window's whole state, once the stream has passed the window's end by
// WindowGrace (the newest record's creation time, or Due's clock), when
// the shard's last record (End) is done, or on Close.
//
// Windows are kept apart: records of two windows interleaved in the stream
// (created near a boundary) each go into their own window's state, and
// each window gets one final call. A record of a window whose final call
// was made comes too late: as on Lambda, whose state for a window is gone
// after its final call, the window starts again with fresh state and gets
// another final call with that part only (an aggregate written by window
// is then overwritten with the part: Windows logs a warning, and
// LateRecords counts them).
//
// State over MaxState (all open windows' together) ends a window early, as
// Lambda does ("If it exceeds that size, Lambda terminates the window
// early"): the window with the most state, until the rest fit (with one
// window open, the one that answered with it). Its final call comes at
// once with that state and IsWindowTerminatedEarly, and its next records
// start it again with fresh state.
//
// A failed call — an error, or any batch item failure — changes neither the
// state nor the position: Handle reports the call's first record failed, so
// the records of earlier calls stay done and the retry starts where the
// failed call did, with the state that call had. A final call that fails
// holds the records after it the same way, and is made again first at
// their next delivery; it is counted against its own window: after
// FinalAttempts, OnGiveUp is told (the Runner dead-letters the window) and
// the records after it go on. State is kept per record position ("the
// state after record k"), so a batch redelivered from any earlier
// position, after a crash or a bisection, starts from the state that
// position had: a windowed aggregate comes out exact under retries,
// crashes and re-batching. StateAt and Restore carry it across a restart
// with the checkpoint.
type Windows struct {
	Size      time.Duration
	Handler   WindowHandler
	ShardID   string
	StreamARN string
	// End, when set, is the sequence number of the shard's last record:
	// once the call that holds it succeeds, the open windows' final calls
	// are made in the same Handle (the replay kit's end of a lane).
	End string
	// MaxState bounds the state the shard's open windows hold together
	// (default, and at most, MaxWindowState).
	MaxState int
	// FinalAttempts is how often a window's final call is made before
	// Windows gives up on it (0: never).
	FinalAttempts int
	// OnGiveUp is told of a window whose final call failed FinalAttempts
	// times; once it returns nil the window is dropped. Nil: Windows never
	// gives up.
	OnGiveUp func(ctx context.Context, g WindowGiveUp) error
	// Logger, when set, is told of records that come after their window's
	// final call.
	Logger *slog.Logger
	// RetryBackoff is the first pause before Due makes a failed final call
	// again; it doubles up to 30 s (default 100 ms). A final call made
	// while records are handed over is retried with them, at the Runner's
	// pace.
	RetryBackoff time.Duration

	mu    sync.Mutex
	after []windowMark // by position, ascending
	// pos numbers the records in the order they were first handed over
	// (a shard's order); next is the next number.
	pos  map[string]int64
	next int64
	// finalFails counts the failed final calls of a window, by its start,
	// and retryAt is when Due may make one again.
	finalFails map[time.Time]int
	retryAt    map[time.Time]time.Time
	late       int
}

// WindowGiveUp is a window whose final call Windows gave up on: the
// window, its state, its records' range in the shard, and the last error.
type WindowGiveUp struct {
	Window   events.Window
	State    map[string]string
	First    string // the sequence number of the window's first record
	Last     string // and of its last
	Attempts int
	Err      error
}

// LateRecords counts the records that came after their window's final
// call (each started the window again with fresh state).
func (w *Windows) LateRecords() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.late
}

// Handle is Windows as a Handler: the Runner's, or the replay kit's.
func (w *Windows) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	recs := ev.Records
	if len(recs) == 0 {
		return events.DynamoDBEventResponse{}, nil
	}
	for _, r := range recs {
		w.position(r.Change.SequenceNumber)
	}
	start := w.pos[recs[0].Change.SequenceNumber]
	cur := w.before(start)
	// the marks from here on are an earlier delivery's, redone now: a
	// record given up on since must not stay counted in them
	i, _ := slices.BinarySearchFunc(w.after, start, byPosition)
	w.after = w.after[:i]
	failAt := func(k int, err error) (events.DynamoDBEventResponse, error) {
		seq := recs[k].Change.SequenceNumber
		NoteFailure(ctx, seq, err)
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: seq}}}, nil
	}
	lastRun := 0 // where the last call's records start
	for i := 0; i < len(recs); {
		lastRun = i
		win := WindowOf(ApproximateCreation(recs[i]), w.Size)
		j := i + 1
		for j < len(recs) && WindowOf(ApproximateCreation(recs[j]), w.Size) == win {
			j++
		}
		// the windows the stream has passed by the grace get their final
		// call before the records after them
		if err := w.finalsDue(ctx, &cur, later(cur.Newest, ApproximateCreation(recs[i]))); err != nil {
			return failAt(i, err)
		}
		k := cur.find(win.Start.Time)
		o := openWindow{Start: win.Start.Time, First: recs[i].Change.SequenceNumber}
		if k >= 0 {
			o = cur.Open[k]
		}
		state, err := w.invoke(ctx, recs[i:j], win, o.State, false, false)
		if err != nil {
			return failAt(i, err)
		}
		if k < 0 && slices.ContainsFunc(cur.Closed, win.Start.Time.Equal) {
			w.late += j - i // (again, if these records are handed over again)
			if w.Logger != nil {
				w.Logger.Warn("records came after their window's final call; the window starts again with fresh state, as Lambda's does, and gets another final call with these records only",
					"window", win.Start.Format(time.RFC3339), "records", j-i, "first", recs[i].Change.SequenceNumber)
			}
		}
		o.State, o.Last = clonedState(state), recs[j-1].Change.SequenceNumber
		next := cur.clone()
		for _, r := range recs[i:j] {
			next.Newest = later(next.Newest, ApproximateCreation(r))
		}
		if k >= 0 {
			next.Open[k] = o
		} else {
			next.Open = append(next.Open, o)
			slices.SortFunc(next.Open, func(a, b openWindow) int { return a.Start.Compare(b.Start) })
		}
		for stateSize(next.Open) > w.maxState() {
			// over the limit: the window with the most state ends early,
			// at once, with the state it has (its next records start it
			// afresh), until the rest fit
			big := slices.MaxFunc(next.Open, func(a, b openWindow) int {
				if c := a.size() - b.size(); c != 0 {
					return c
				}
				return b.Start.Compare(a.Start) // the older, of two as large
			})
			if err := w.finalCall(ctx, big, true); err != nil {
				return failAt(i, err)
			}
			next.Open = slices.DeleteFunc(next.Open, func(x openWindow) bool { return x.Start.Equal(big.Start) })
		}
		cur = next
		cur.Seq, cur.at = recs[j-1].Change.SequenceNumber, w.pos[recs[j-1].Change.SequenceNumber]
		w.mark(cur)
		i = j
	}
	if w.End != "" && cur.Seq == w.End {
		if err := w.finals(ctx, &cur, func(openWindow) (bool, bool) { return true, false }); err != nil {
			// the last call's records again, from the state before them
			return failAt(lastRun, err)
		}
	}
	return events.DynamoDBEventResponse{}, nil
}

// finalsDue makes the final calls of the open windows whose end newest
// has passed by WindowGrace.
func (w *Windows) finalsDue(ctx context.Context, cur *windowMark, newest time.Time) error {
	return w.finals(ctx, cur, func(o openWindow) (bool, bool) {
		return !newest.Before(o.Start.Add(w.Size + WindowGrace)), false
	})
}

// finals makes the final call of every open window that due says is due
// (and whether it ends early), oldest first, marking each at cur's
// position once made; it stops at the first that fails.
func (w *Windows) finals(ctx context.Context, cur *windowMark, due func(openWindow) (bool, bool)) error {
	for _, o := range slices.Clone(cur.Open) {
		ok, early := due(o)
		if !ok {
			continue
		}
		if err := w.finalCall(ctx, o, early); err != nil {
			return err
		}
		cur.closed(o.Start)
		w.mark(*cur)
	}
	return nil
}

// finalCall makes window o's final call, counting its failures against
// the window: after FinalAttempts, OnGiveUp is told, and once it has been
// the call is done with (nil).
func (w *Windows) finalCall(ctx context.Context, o openWindow, early bool) error {
	win := events.Window{Start: events.RFC3339EpochTime{Time: o.Start}, End: events.RFC3339EpochTime{Time: o.Start.Add(w.Size)}}
	_, err := w.invoke(ctx, nil, win, o.State, true, early)
	if err == nil {
		delete(w.finalFails, o.Start)
		delete(w.retryAt, o.Start)
		return nil
	}
	err = fmt.Errorf("the final call of the window from %s: %w", o.Start.Format(time.RFC3339), err)
	if w.finalFails == nil {
		w.finalFails = map[time.Time]int{}
	}
	w.finalFails[o.Start]++
	n := w.finalFails[o.Start]
	if w.FinalAttempts <= 0 || n < w.FinalAttempts || w.OnGiveUp == nil {
		return err
	}
	if gerr := w.OnGiveUp(ctx, WindowGiveUp{Window: win, State: clonedState(o.State), First: o.First, Last: o.Last, Attempts: n, Err: err}); gerr != nil {
		return fmt.Errorf("%w; giving it up failed: %w", err, gerr)
	}
	delete(w.finalFails, o.Start)
	delete(w.retryAt, o.Start)
	return nil
}

func (w *Windows) maxState() int {
	if w.MaxState > 0 {
		return min(w.MaxState, MaxWindowState)
	}
	return MaxWindowState
}

// invoke makes one call of the window handler and returns the state it
// answered with; any failure is the call's.
func (w *Windows) invoke(ctx context.Context, recs []events.DynamoDBEventRecord, win events.Window, state map[string]string, final, early bool) (map[string]string, error) {
	ev := events.DynamoDBTimeWindowEvent{DynamoDBEvent: events.DynamoDBEvent{Records: recs}}
	ev.Window, ev.State, ev.ShardID, ev.EventSourceARN = win, clonedState(state), w.ShardID, w.StreamARN
	ev.IsFinalInvokeForWindow, ev.IsWindowTerminatedEarly = final, early
	if ev.Records == nil {
		ev.Records = []events.DynamoDBEventRecord{}
	}
	resp, err := safeWindowCall(ctx, w.Handler, ev)
	if err != nil {
		return nil, err
	}
	if n := len(resp.BatchItemFailures); n > 0 {
		return nil, fmt.Errorf("the window handler reported %d failed item(s): its call fails whole", n)
	}
	return resp.State, nil
}

// Close makes the final call of every window open at the shard's end,
// with IsWindowTerminatedEarly for one that has not ended by now (a shard
// that closed before it): what a Runner does when a shard ends.
func (w *Windows) Close(ctx context.Context, now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.after) == 0 {
		return nil
	}
	cur := w.after[len(w.after)-1].clone()
	return w.finals(ctx, &cur, func(o openWindow) (bool, bool) { return true, now.Before(o.Start.Add(w.Size)) })
}

// Due makes the final call of every window open after the last record
// handled that has ended by now, by WindowGrace, as the mapping closes a
// window at its end when no later record comes; call it only while no
// batch is being handled. It reports whether it made one.
func (w *Windows) Due(ctx context.Context, now time.Time) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.after) == 0 {
		return false, nil
	}
	cur := w.after[len(w.after)-1].clone()
	open := len(cur.Open)
	var failed *time.Time
	err := w.finals(ctx, &cur, func(o openWindow) (bool, bool) {
		if now.Before(o.Start.Add(w.Size+WindowGrace)) || now.Before(w.retryAt[o.Start]) {
			return false, false
		}
		failed = &o.Start
		return true, false
	})
	if err != nil && failed != nil && w.finalFails[*failed] > 0 { // not given up on: pace the next try
		backoff := w.RetryBackoff
		if backoff <= 0 {
			backoff = 100 * time.Millisecond
		}
		if w.retryAt == nil {
			w.retryAt = map[time.Time]time.Time{}
		}
		w.retryAt[*failed] = now.Add(retryWait(backoff, w.finalFails[*failed]))
	}
	return len(cur.Open) < open, err
}

// safeWindowCall turns a window handler's panic into an error.
func safeWindowCall(ctx context.Context, h WindowHandler, ev events.DynamoDBTimeWindowEvent) (resp events.DynamoDBTimeWindowEventResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("window handler panicked: %v", p)
		}
	}()
	return h(ctx, ev)
}
