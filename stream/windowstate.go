package stream

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The windows' state: what is open after each record (windowMark), kept
// by position so a failed call leaves it as it was, forgotten as the
// checkpoint moves, and written to and read from the checkpoint
// (StateAt, Restore).

// openWindow is a window that has records and no final call yet.
type openWindow struct {
	Start time.Time         `json:"start"`
	State map[string]string `json:"state,omitempty"` // never changed once set: marks share it
	First string            `json:"first,omitempty"`
	Last  string            `json:"last,omitempty"`
}

// windowMark is the windows' state after a record: the windows open there
// (by start), the newest creation time of the records handed over, and
// the windows whose final call was made lately.
type windowMark struct {
	at     int64        // the record's position (pos)
	Seq    string       `json:"seq"`
	Open   []openWindow `json:"open,omitempty"`
	Newest time.Time    `json:"newest,omitzero"`
	Closed []time.Time  `json:"closed,omitempty"`
	// One window, as a Runner before several windows kept it.
	Start time.Time         `json:"start,omitzero"`
	State map[string]string `json:"state,omitempty"`
	Final bool              `json:"final,omitempty"`
}

// clone is m with its own lists (the states are shared: never changed).
func (m windowMark) clone() windowMark {
	m.Open, m.Closed = slices.Clone(m.Open), slices.Clone(m.Closed)
	return m
}

// find is the index of the open window starting at start, or -1.
func (m *windowMark) find(start time.Time) int {
	return slices.IndexFunc(m.Open, func(o openWindow) bool { return o.Start.Equal(start) })
}

// closed notes a window's final call: it is no longer open, and a record
// of it that comes later is late.
func (m *windowMark) closed(start time.Time) {
	if i := m.find(start); i >= 0 {
		m.Open = slices.Delete(m.Open, i, i+1)
	}
	m.Closed = append(m.Closed, start)
	if len(m.Closed) > maxClosed {
		m.Closed = slices.Delete(m.Closed, 0, len(m.Closed)-maxClosed)
	}
}

// maxClosed bounds the windows a mark remembers as closed: enough to tell
// a late record of any window the grace still concerns.
const maxClosed = 16

// maxMarks bounds the positions Windows remembers.
const maxMarks = 4096

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

// before is a copy of the mark of the greatest position before at (the
// zero mark: no window open).
func (w *Windows) before(at int64) windowMark {
	i, _ := slices.BinarySearchFunc(w.after, at, byPosition)
	if i == 0 {
		return windowMark{}
	}
	return w.after[i-1].clone()
}

// mark records the state after a position, replacing what was there.
func (w *Windows) mark(m windowMark) {
	m = m.clone()
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

// Forget drops what Windows keeps for positions before the record seq
// (a checkpoint: no batch is handed over again from before it), keeping
// the state after it. The Runner calls it after each checkpoint write, so
// that what it keeps is bounded by the records in flight, not by maxMarks
// states of up to MaxWindowState each.
func (w *Windows) Forget(seq string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := -1 // the last mark at or before seq
	for i := len(w.after) - 1; i >= 0; i-- {
		if CompareSequenceNumbers(w.after[i].Seq, seq) <= 0 {
			keep = i
			break
		}
	}
	if keep > 0 {
		w.after = slices.Delete(w.after, 0, keep)
	}
}

// stateSize is the open windows' state, keys and values together.
func stateSize(open []openWindow) int {
	n := 0
	for _, o := range open {
		n += o.size()
	}
	return n
}

// size is the window's state, keys and values together.
func (o openWindow) size() int {
	n := 0
	for k, v := range o.State {
		n += len(k) + len(v)
	}
	return n
}

// StateAt is the windows' state after the record seq of the shard (or,
// for a record no call had, after the last one before it in the shard),
// as text to keep with the checkpoint; Restore reads it back as the state
// before the records that follow.
func (w *Windows) StateAt(seq string) string {
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

// Restore sets the windows' state after a position from a StateAt (or
// from one window's, as a Runner kept it before): the state every record
// handed over next starts from.
func (w *Windows) Restore(snapshot string) error {
	var m windowMark
	if err := json.Unmarshal([]byte(snapshot), &m); err != nil {
		return fmt.Errorf("stream: window state: %w", err)
	}
	if !m.Start.IsZero() { // one window
		if m.Final {
			m.Closed = append(m.Closed, m.Start)
		} else {
			m.Open = append(m.Open, openWindow{Start: m.Start, State: m.State})
		}
		m.Start, m.State, m.Final = time.Time{}, nil, false
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
