package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/dynastream/dynastream/emf"
	"github.com/dynastream/dynastream/stream"
)

// The event source mapping's metrics, as Lambda names them (namespace
// AWS/Lambda, with the mapping's MetricsConfig EventCount on). Mapping
// writes a Runner's counters under these names, so a dashboard or an alarm
// written for a mapping reads the Runner the same way; IteratorAge is
// every call's (EMF.Observe).
const (
	MetricIteratorAge        = "IteratorAge"
	MetricPolled             = "PolledEventCount"
	MetricFilteredOut        = "FilteredOutEventCount"
	MetricInvoked            = "InvokedEventCount"
	MetricFailedInvoke       = "FailedInvokeEventCount"
	MetricDropped            = "DroppedEventCount"
	MetricOnFailureDelivered = "OnFailureDestinationDeliveredEventCount"
)

// Mapping writes a stream.Runner's counters as the event source mapping's
// metrics, through an EMF (dimensions service and consumer): each Flush
// writes one line with what changed since the last — PolledEventCount
// (records read), FilteredOutEventCount (Config.Filter), InvokedEventCount
// (records handed to the handler, again on each retry),
// FailedInvokeEventCount (those a call did not finish),
// DroppedEventCount (records given up on, for their retries or their age)
// and OnFailureDestinationDeliveredEventCount (those the dead-letter sink,
// the Runner's on-failure destination, took: the same records, as every
// dropped record goes there).
type Mapping struct {
	EMF      *EMF
	Consumer string
	Runner   *stream.Runner

	mu   sync.Mutex
	last stream.Stats
}

// Flush writes the counts since the last Flush (nothing when none moved).
func (m *Mapping) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Runner.Stats()
	d := func(a, b int64) float64 { return float64(a - b) }
	last := m.last
	if now.RecordsRead == last.RecordsRead && now.InvokedEvents == last.InvokedEvents && now.DeadLettered == last.DeadLettered {
		return nil
	}
	m.last = now
	l := m.EMF.logger(m.Consumer)
	s := l.NewSet("consumer", m.Consumer).
		Add(MetricPolled, emf.Count, d(now.RecordsRead, last.RecordsRead)).
		Add(MetricFilteredOut, emf.Count, d(now.FilteredOut, last.FilteredOut)).
		Add(MetricInvoked, emf.Count, d(now.InvokedEvents, last.InvokedEvents)).
		Add(MetricFailedInvoke, emf.Count, d(now.FailedInvokeEvents, last.FailedInvokeEvents)).
		Add(MetricDropped, emf.Count, d(now.DeadLettered, last.DeadLettered)).
		Add(MetricOnFailureDelivered, emf.Count, d(now.DeadLettered, last.DeadLettered))
	return l.Flush(s)
}

// Run flushes every interval (default a minute, CloudWatch's resolution)
// until ctx ends, and once more then.
func (m *Mapping) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = m.Flush()
			return
		case <-t.C:
			_ = m.Flush()
		}
	}
}
