package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/dynastream/dynastream/emf"
	"github.com/dynastream/dynastream/stream"
)

// The event source mapping's metrics, as Lambda names them (namespace
// AWS/Lambda, with the mapping's MetricsConfig EventCount on: "Event source
// mapping metrics",
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
// Mapping writes a Runner's counters under these names; IteratorAge is
// every call's (EMF.Observe).
const (
	MetricIteratorAge                 = "IteratorAge"
	MetricPolled                      = "PolledEventCount"
	MetricFilteredOut                 = "FilteredOutEventCount"
	MetricInvoked                     = "InvokedEventCount"
	MetricFailedInvoke                = "FailedInvokeEventCount"
	MetricDropped                     = "DroppedEventCount"
	MetricOnFailureDelivered          = "OnFailureDestinationDeliveredEventCount"
	MetricDestinationDeliveryFailures = "DestinationDeliveryFailures"
)

// Mapping writes a stream.Runner's counters as the event source mapping's
// metrics, through an EMF (dimensions service and consumer): each Flush
// writes one line with what changed since the last — PolledEventCount
// (records read; 0 when the reads since found nothing, as Lambda emits
// for an empty poll), FilteredOutEventCount (Config.Filter),
// InvokedEventCount (records handed to the handler, again on each retry),
// FailedInvokeEventCount (those a call did not finish),
// OnFailureDestinationDeliveredEventCount (records the dead-letter sink,
// the Runner's on-failure destination, took), DroppedEventCount (records
// given up on that no destination took, which Lambda counts apart from
// those it delivered: always 0 for a Runner, whose shard waits until its
// sink takes them) and DestinationDeliveryFailures (the sink's refusals).
//
// What carries over to a dashboard or an alarm written for a mapping is
// the metric names and their meaning; the namespace and the dimensions
// are the EMF's (EMF.Namespace, service and consumer), not AWS/Lambda
// with the mapping's UUID, so point the alarm at them.
type Mapping struct {
	EMF      *EMF
	Consumer string
	Runner   *stream.Runner

	mu   sync.Mutex
	last stream.Stats
}

// Flush writes the counts since the last Flush (nothing when nothing was
// read or done, not even an empty poll).
func (m *Mapping) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Runner.Stats()
	d := func(a, b int64) float64 { return float64(a - b) }
	last := m.last
	if now.Polls == last.Polls && now.RecordsRead == last.RecordsRead && now.InvokedEvents == last.InvokedEvents &&
		now.DeadLettered == last.DeadLettered && now.DestinationFailures == last.DestinationFailures {
		return nil
	}
	m.last = now
	l := m.EMF.logger(m.Consumer)
	s := l.NewSet("consumer", m.Consumer).
		Add(MetricPolled, emf.Count, d(now.RecordsRead, last.RecordsRead)).
		Add(MetricFilteredOut, emf.Count, d(now.FilteredOut, last.FilteredOut)).
		Add(MetricInvoked, emf.Count, d(now.InvokedEvents, last.InvokedEvents)).
		Add(MetricFailedInvoke, emf.Count, d(now.FailedInvokeEvents, last.FailedInvokeEvents)).
		Add(MetricDropped, emf.Count, 0).
		Add(MetricOnFailureDelivered, emf.Count, d(now.DeadLettered, last.DeadLettered)).
		Add(MetricDestinationDeliveryFailures, emf.Count, d(now.DestinationFailures, last.DestinationFailures))
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
