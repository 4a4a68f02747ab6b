package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Metrics is what a local program serves at /metrics: its DynamoDB
// requests on the table and the CPU time the process used; a consumer adds
// its runner's counters and its checkpoint and stream requests, counted
// apart.
type Metrics struct {
	Program            string        `json:"program"`
	Stream             *stream.Stats `json:"stream,omitempty"`
	DataRequests       ddb.Counts    `json:"dataRequests"`
	CheckpointRequests ddb.Counts    `json:"checkpointRequests"`
	StreamRequests     ddb.Counts    `json:"streamRequests"`
	CPUSeconds         float64       `json:"cpuSeconds"`
	// Quarantined counts reads that skipped a stored item they could not
	// decode (store.Quarantine); `projector quarantine` lists such items.
	Quarantined int64 `json:"quarantined"`
	// Faults are the failures DYNAMODB_FAULTS injected (nil without).
	Faults *ddb.FaultCounts `json:"faults,omitempty"`
}

type localMetrics struct {
	program                    string
	runner                     *stream.Runner // nil for the writer
	data, checkpoints, streams *ddb.Counter
	quarantine                 *store.Quarantine
	faults                     *ddb.Faults
}

func (m *localMetrics) read() Metrics {
	out := Metrics{Program: m.program, DataRequests: m.data.Counts(), CPUSeconds: CPUSeconds()}
	if m.quarantine != nil {
		out.Quarantined = m.quarantine.Count()
	}
	if m.faults != nil {
		fc := m.faults.Counts()
		out.Faults = &fc
	}
	if m.runner != nil {
		st := m.runner.Stats()
		out.Stream = &st
	}
	if m.checkpoints != nil {
		out.CheckpointRequests = m.checkpoints.Counts()
	}
	if m.streams != nil {
		out.StreamRequests = m.streams.Counts()
	}
	return out
}

// ServeAdmin serves a program's /metrics (its DynamoDB requests on the
// table, counted by clients.Requests, its CPU time and q's count) and
// /healthz on addr until ctx ends; "" serves nothing.
func ServeAdmin(ctx context.Context, log *slog.Logger, addr, program string, clients *ddb.Clients, q *store.Quarantine) error {
	if addr == "" {
		return nil
	}
	return serveAdmin(ctx, log, addr, &localMetrics{program: program, data: clients.Requests, quarantine: q, faults: clients.Faults()})
}

// CPUSeconds is the user and system CPU time this process has used.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// serveAdmin serves /metrics and /healthz on addr until ctx ends. It
// returns once the address is bound, or the reason it cannot be.
func serveAdmin(ctx context.Context, log *slog.Logger, addr string, m *localMetrics) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.read())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on ADMIN_ADDR %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin endpoint stopped", "err", err)
		}
	}()
	log.Info("admin endpoint listening", "addr", ln.Addr().String(), "paths", "/metrics /healthz")
	return nil
}
