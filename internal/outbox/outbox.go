package outbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/dynastream/dynastream/internal/events"
)

// Outbox appends events to Path.
type Outbox struct {
	Path string
	mu   sync.Mutex
}

// Publish implements notify.Publisher: all events or none.
func (o *Outbox) Publish(_ context.Context, evs []events.Event) []error {
	errsOut := make([]error, len(evs))
	err := o.write(evs)
	if err != nil {
		for i := range errsOut {
			errsOut[i] = err
		}
	}
	return errsOut
}

func (o *Outbox) write(evs []events.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var buf []byte
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("outbox: encode %s: %w", e.ID, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o755); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	f, err := os.OpenFile(o.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("outbox: write %s: %w", o.Path, err)
	}
	return nil
}

// Read returns the events in an outbox file, in the order written.
func Read(path string) ([]events.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	defer f.Close()
	var out []events.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("outbox: %s line %d: %w", path, line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
