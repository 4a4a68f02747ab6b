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

// File is a Sink writing JSON lines to a file. It knows the eventIDs in
// the file, so an entry is written once: it reads them when it opens, and
// again whenever the file is not as it left it (another process appended,
// a write failed part-way), ending a line a failed write cut short.
// An append is synced to disk before it is acknowledged.
type File struct {
	path string
	mu   sync.Mutex
	seen map[string]bool
	size int64 // the file's size as this File last knew it
}

// OpenFile opens (or starts) the trail at path.
func OpenFile(path string) (*File, error) {
	f := &File{path: path}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// reload ends a last line cut short and reads the eventIDs back (f.mu
// held, or not shared yet).
func (f *File) reload() error {
	if b, err := os.ReadFile(f.path); err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
		if err := os.WriteFile(f.path, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	es, err := f.Entries()
	if err != nil {
		return err
	}
	f.seen = make(map[string]bool, len(es))
	for _, e := range es {
		f.seen[e.EventID] = true
	}
	f.size = 0
	if fi, err := os.Stat(f.path); err == nil {
		f.size = fi.Size()
	}
	return nil
}

// Append writes the entries not yet in the file.
func (f *File) Append(_ context.Context, es []Entry) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fi, err := os.Stat(f.path); err == nil && fi.Size() != f.size || err != nil && f.size != 0 {
		if err := f.reload(); err != nil { // someone else wrote it
			return 0, fmt.Errorf("read the trail: %w", err)
		}
	}
	var buf []byte
	var fresh []string
	batch := map[string]bool{} // a change twice in one batch: once
	for _, e := range es {
		if f.seen[e.EventID] || batch[e.EventID] {
			continue
		}
		batch[e.EventID] = true
		b, err := json.Marshal(e)
		if err != nil {
			return 0, err
		}
		buf = append(append(buf, b...), '\n')
		fresh = append(fresh, e.EventID)
	}
	if len(buf) == 0 {
		return len(es), nil
	}
	out, err := os.OpenFile(f.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open the trail: %w", err)
	}
	_, err = out.Write(buf)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// part of it may be written: the next Append reads back what is
		// (whole lines only) before it writes
		f.size = -1
		return 0, fmt.Errorf("write the trail: %w", err)
	}
	for _, id := range fresh {
		f.seen[id] = true
	}
	f.size += int64(len(buf))
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
	f.seen, f.size = map[string]bool{}, 0
	if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
