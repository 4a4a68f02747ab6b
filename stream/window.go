package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// MaxWindowState is the most state a call may answer with, its keys
	// and values together.
	MaxWindowState = 1 << 20
	// MaxCheckpointWindowState is the most state a Runner's windowed call
	// may answer with: the state is kept with the checkpoint, and
	// TableCheckpoints keeps it in one DynamoDB item (at most 400 KB).
	MaxCheckpointWindowState = 350 << 10
)

// WindowOf is the tumbling window of the given size holding t: windows
// are aligned to the Unix epoch, as the event source mapping's.
func WindowOf(t time.Time, size time.Duration) events.Window {
	sec := int64(size / time.Second)
	start := t.Unix() - ((t.Unix()%sec)+sec)%sec
	return events.Window{Start: events.RFC3339EpochTime{Time: time.Unix(start, 0).UTC()}, End: events.RFC3339EpochTime{Time: time.Unix(start+sec, 0).UTC()}}
}

// Windows runs a WindowHandler over one shard's records, delivered in
// shard order in batches by a Runner or the replay kit, as the event
// source mapping runs a function with TumblingWindowInSeconds: it cuts
// each batch into calls of one window each (by the records'
// ApproximateCreationDateTime), hands every call the state the window's
// previous call answered with, and makes the window's final call when the
// first record of a later window comes, when the shard's last record (End)
// is done, or on Close and Due.
//
// A failed call — an error, or any batch item failure — changes neither the
// state nor the position: Handle reports the call's first record failed, so
// the records of the window's earlier calls stay done and the retry starts
// where the failed call did, with the state that call had. State is kept
// per record position ("the state after record k"), so a batch redelivered
// from any earlier position, after a crash or a bisection, starts from the
// state that position had: a windowed aggregate comes out exact under
// retries, crashes and re-batching. Snapshot and Restore carry it across a
// restart with the checkpoint.
type Windows struct {
	Size      time.Duration
	Handler   WindowHandler
	ShardID   string
	StreamARN string
	// End, when set, is the sequence number of the shard's last record:
	// once the call that holds it succeeds, the window's final call is made
	// in the same Handle (the replay kit's end of a lane).
	End string
	// MaxState bounds the state a call may answer with (default, and at
	// most, MaxWindowState); a call answering with more fails.
	MaxState int

	mu    sync.Mutex
	after []windowMark // by position, ascending
	// pos numbers the records in the order they were first handed over
	// (a shard's order); next is the next number.
	pos  map[string]int64
	next int64
}

// windowMark is the window state after a record: the window open there,
// its state, and whether its final call was made.
type windowMark struct {
	at    int64             // the record's position (pos)
	Seq   string            `json:"seq"`
	Start time.Time         `json:"start,omitzero"`
	State map[string]string `json:"state,omitempty"`
	Final bool              `json:"final,omitempty"`
}

// dueGrace is how long after a window's end Due waits for a late record
// (one created before the window's end that the stream shows later).
const dueGrace = 5 * time.Second

// maxMarks bounds the positions Windows remembers.
const maxMarks = 4096

// ErrWindowState is the error of a call that answered with more state
// than Windows.MaxState.
var ErrWindowState = errors.New("stream: window state too large")

// position numbers a record on first sight.
func (w *Windows) position(seq string) int64 {
	if p, ok := w.pos[seq]; ok {
		return p
	}
	if w.pos == nil {
		w.pos = map[string]int64{}
	}
	if len(w.pos) > 64*maxMarks { // forget the oldest half
		for s, p := range w.pos {
			if p < w.next-32*maxMarks {
				delete(w.pos, s)
			}
		}
	}
	w.next++
	w.pos[seq] = w.next
	return w.next
}

func byPosition(m windowMark, at int64) int {
	switch {
	case m.at < at:
		return -1
	case m.at > at:
		return 1
	}
	return 0
}

// before is the mark of the greatest position before at (the zero mark:
// no window open).
func (w *Windows) before(at int64) windowMark {
	i, _ := slices.BinarySearchFunc(w.after, at, byPosition)
	if i == 0 {
		return windowMark{}
	}
	return w.after[i-1]
}

// mark records the state after a position, replacing what was there.
func (w *Windows) mark(m windowMark) {
	m.State = clonedState(m.State)
	i, found := slices.BinarySearchFunc(w.after, m.at, byPosition)
	if found {
		w.after[i] = m
		return
	}
	w.after = slices.Insert(w.after, i, m)
	if len(w.after) > maxMarks {
		w.after = slices.Delete(w.after, 0, len(w.after)-maxMarks)
	}
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
	lastCall := 0 // where the last call's records start
	for i := 0; i < len(recs); {
		lastCall = i
		win := WindowOf(recs[i].Change.ApproximateCreationDateTime.Time, w.Size)
		j := i + 1
		for j < len(recs) && WindowOf(recs[j].Change.ApproximateCreationDateTime.Time, w.Size) == win {
			j++
		}
		fail := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: recs[i].Change.SequenceNumber}}}
		if !cur.Start.IsZero() && !cur.Start.Equal(win.Start.Time) && !cur.Final {
			if err := w.final(ctx, cur, false); err != nil {
				NoteFailure(ctx, recs[i].Change.SequenceNumber, fmt.Errorf("the final call of the window from %s: %w", cur.Start.Format(time.RFC3339), err))
				return fail, nil
			}
			cur.Final = true
			w.mark(cur)
		}
		switch {
		case cur.Start.IsZero() || !cur.Start.Equal(win.Start.Time):
			cur = windowMark{Start: win.Start.Time} // a new window
		case cur.Final:
			// a record that came after its window's final call: the window
			// goes on with its state and gets another final call, with the
			// whole (an aggregate written by window is then complete)
			cur.Final = false
		}
		state, err := w.call(ctx, recs[i:j], win, cur.State, false, false)
		if err != nil {
			NoteFailure(ctx, recs[i].Change.SequenceNumber, err)
			return fail, nil
		}
		cur.State, cur.Seq, cur.at = state, recs[j-1].Change.SequenceNumber, w.pos[recs[j-1].Change.SequenceNumber]
		w.mark(cur)
		i = j
	}
	if w.End != "" && cur.Seq == w.End && !cur.Final {
		if err := w.final(ctx, cur, false); err != nil {
			// the last call's records again, from the state before them
			first := recs[lastCall].Change.SequenceNumber
			NoteFailure(ctx, first, fmt.Errorf("the final call of the window from %s: %w", cur.Start.Format(time.RFC3339), err))
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: first}}}, nil
		}
		cur.Final = true
		w.mark(cur)
	}
	return events.DynamoDBEventResponse{}, nil
}

// final makes window m's final call.
func (w *Windows) final(ctx context.Context, m windowMark, early bool) error {
	_, err := w.call(ctx, nil, events.Window{Start: events.RFC3339EpochTime{Time: m.Start}, End: events.RFC3339EpochTime{Time: m.Start.Add(w.Size)}}, m.State, true, early)
	return err
}

// call makes one call of the handler and returns the state it answered
// with; any failure is the call's.
func (w *Windows) call(ctx context.Context, recs []events.DynamoDBEventRecord, win events.Window, state map[string]string, final, early bool) (map[string]string, error) {
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
	size := 0
	for k, v := range resp.State {
		size += len(k) + len(v)
	}
	limit := MaxWindowState
	if w.MaxState > 0 {
		limit = min(w.MaxState, MaxWindowState)
	}
	if size > limit {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrWindowState, size, limit)
	}
	return resp.State, nil
}

// Close makes the final call of the window open at the shard's end, with
// IsWindowTerminatedEarly when the window has not ended by now (a shard
// that closed before it): what a Runner does when a shard ends.
func (w *Windows) Close(ctx context.Context, now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.after) == 0 {
		return nil
	}
	cur := w.after[len(w.after)-1]
	if cur.Start.IsZero() || cur.Final {
		return nil
	}
	if err := w.final(ctx, cur, now.Before(cur.Start.Add(w.Size))); err != nil {
		return err
	}
	cur.Final = true
	w.mark(cur)
	return nil
}

// Due makes the final call of the window open after the last record
// handled when that window has ended by now, as the mapping closes a
// window at its end when no later record comes; call it only while no
// batch is being handled. It reports whether it made one.
func (w *Windows) Due(ctx context.Context, now time.Time) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.after) == 0 {
		return false, nil
	}
	cur := w.after[len(w.after)-1]
	if cur.Start.IsZero() || cur.Final || now.Before(cur.Start.Add(w.Size+dueGrace)) {
		return false, nil
	}
	if err := w.final(ctx, cur, false); err != nil {
		return false, err
	}
	cur.Final = true
	w.mark(cur)
	return true, nil
}

// Snapshot is the window state after the record seq of the shard (or, for
// a record no call had, after the last one before it in the shard), as
// text to keep with the checkpoint; Restore reads it back as the state
// before the records that follow.
func (w *Windows) Snapshot(seq string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m windowMark
	for i := len(w.after) - 1; i >= 0; i-- {
		if CompareSequenceNumbers(w.after[i].Seq, seq) <= 0 {
			m = w.after[i]
			break
		}
	}
	m.Seq = seq
	b, _ := json.Marshal(m)
	return string(b)
}

// Restore sets the window state after a position from a Snapshot: the
// state every record handed over next starts from.
func (w *Windows) Restore(snapshot string) error {
	var m windowMark
	if err := json.Unmarshal([]byte(snapshot), &m); err != nil {
		return fmt.Errorf("stream: window state: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m.at = w.position(m.Seq)
	w.mark(m)
	return nil
}

func clonedState(s map[string]string) map[string]string {
	if s == nil {
		return nil
	}
	out := make(map[string]string, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
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
