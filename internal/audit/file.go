package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// File is a Sink writing JSON lines to a file. It remembers the eventIDs
// in the file (read when it opens), so an entry is written once even
// across restarts.
type File struct {
	path string
	mu   sync.Mutex
	seen map[string]bool
}

// OpenFile opens (or starts) the trail at path. A last line cut short (a
// crash while writing) is ended, so the next entry starts a line of its
// own; Entries leaves the cut one out.
func OpenFile(path string) (*File, error) {
	f := &File{path: path, seen: map[string]bool{}}
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	es, err := f.Entries()
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		f.seen[e.EventID] = true
	}
	return f, nil
}

// Append writes the entries not yet in the file.
func (f *File) Append(_ context.Context, es []Entry) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out, err := os.OpenFile(f.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open the trail: %w", err)
	}
	w := bufio.NewWriter(out)
	var fresh []string
	batch := map[string]bool{} // a change twice in one batch: once
	for _, e := range es {
		if f.seen[e.EventID] || batch[e.EventID] {
			continue
		}
		batch[e.EventID] = true
		b, err := json.Marshal(e)
		if err != nil {
			out.Close()
			return 0, err
		}
		w.Write(append(b, '\n'))
		fresh = append(fresh, e.EventID)
	}
	err = w.Flush()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// a line may be half-written: what was read back decides (a
		// reopened File reads whole lines only)
		return 0, fmt.Errorf("write the trail: %w", err)
	}
	for _, id := range fresh {
		f.seen[id] = true
	}
	return len(es), nil
}

// Entries reads the trail back, in file order; a line that does not
// decode (cut short by a crash) is left out.
func (f *File) Entries() ([]Entry, error) {
	in, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer in.Close()
	var out []Entry
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.EventID != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// Reset empties the trail (tests: the replay kit's Reset).
func (f *File) Reset() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = map[string]bool{}
	if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
