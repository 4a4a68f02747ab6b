//go:build !lambda.norpc

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/internal/store"
)

// A journal keeps the pages of verify's and rebuild's scan as they are
// read, one JSON line each (the items drift uses, in DynamoDB JSON, and
// where each segment goes on), so that a scan cut off — a crash, Ctrl-C, a
// lost connection — goes on where it was when the command runs again. It
// is deleted once the scan is complete.

// journalHeader is a journal's first line: the scan it belongs to.
type journalHeader struct {
	Journal  string `json:"journal"`
	Table    string `json:"table"`
	Segments int    `json:"segments"`
}

const journalKind = "projector-scan/1"

// journalPage is a store.ScanPage as a line.
type journalPage struct {
	Segment int                                        `json:"segment"`
	Read    int                                        `json:"read"`
	After   map[string]string                          `json:"after,omitempty"`
	Items   []map[string]events.DynamoDBAttributeValue `json:"items,omitempty"`
}

// journal appends pages to a file.
type journal struct {
	path string
	f    *os.File
	w    *bufio.Writer
}

// openJournal reads the pages of an earlier run of the same scan at path
// (none when there is no file, it belongs to another scan, or fresh: it is
// then started anew), and opens it for the pages to come.
func openJournal(path, table string, segments int, fresh bool) (*journal, []store.ScanPage, error) {
	want := journalHeader{Journal: journalKind, Table: table, Segments: segments}
	var pages []store.ScanPage
	if !fresh {
		var err error
		if pages, err = readJournal(path, want); err != nil {
			return nil, nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if pages == nil {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	j := &journal{path: path, f: f, w: bufio.NewWriter(f)}
	if pages == nil {
		if err := j.line(want); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return j, pages, nil
}

// readJournal returns the pages of path's scan if it is want's (nil
// otherwise). A last line cut off by a crash is left out.
func readJournal(path string, want journalHeader) ([]store.ScanPage, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	if !sc.Scan() {
		return nil, nil
	}
	var h journalHeader
	if json.Unmarshal(sc.Bytes(), &h) != nil || h != want {
		return nil, nil
	}
	pages := []store.ScanPage{}
	for sc.Scan() {
		var jp journalPage
		if err := attr.UnmarshalJSON(sc.Bytes(), &jp); err != nil {
			break // the line a crash cut off; the pages before it stand
		}
		p := store.ScanPage{Segment: jp.Segment, Read: jp.Read, After: jp.After}
		for _, it := range jp.Items {
			item, err := attr.FromLambdaMap(it)
			if err != nil {
				return nil, fmt.Errorf("journal %s: %w", path, err)
			}
			p.Items = append(p.Items, item)
		}
		pages = append(pages, p)
	}
	return pages, sc.Err()
}

// add appends a page: it is the operating system's when add returns, so a
// killed process loses none (a machine that loses power may lose the
// last pages: the scan then reads them again).
func (j *journal) add(p store.ScanPage) error {
	jp := journalPage{Segment: p.Segment, Read: p.Read, After: p.After}
	for _, it := range p.Items {
		m, err := attr.ToLambdaMap(it)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		jp.Items = append(jp.Items, m)
	}
	return j.line(jp)
}

func (j *journal) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := j.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// close closes the file; done removes it too (the scan is complete).
func (j *journal) close(done bool) error {
	err := j.f.Close()
	if done {
		err = errors.Join(err, os.Remove(j.path))
	}
	return err
}

// end closes the journal of a scan that ended with scanErr: removed when
// the scan is complete, kept for the next run otherwise.
func (j *journal) end(log *slog.Logger, scanErr error) {
	if err := j.close(scanErr == nil); err != nil {
		log.Warn("journal not closed or removed", "journal", j.path, "err", err)
	}
	if scanErr != nil {
		log.Info("the scan's journal stays: run again to go on where it stopped", "journal", j.path)
	}
}
