package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/devguard"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// Metrics is what a local program serves at /metrics: its DynamoDB
// requests on the table and the CPU time the process used; a consumer adds
// its runner's counters and its checkpoint and stream requests, counted
// apart.
type Metrics struct {
	Program string        `json:"program"`
	Stream  *stream.Stats `json:"stream,omitempty"`
	// Health is a consumer's runner's (GET /status has it alone).
	Health             *stream.Health `json:"health,omitempty"`
	DataRequests       ddb.Counts     `json:"dataRequests"`
	CheckpointRequests ddb.Counts     `json:"checkpointRequests"`
	StreamRequests     ddb.Counts     `json:"streamRequests"`
	CPUSeconds         float64        `json:"cpuSeconds"`
	// Memory is the Go heap and the process's resident set, now.
	Memory Memory `json:"memory"`
	// Quarantined counts reads that skipped a stored item they could not
	// decode (store.Quarantine); `projector quarantine` lists such items.
	Quarantined int64 `json:"quarantined"`
	// Faults are the failures DYNAMODB_FAULTS injected (nil without).
	Faults *ddb.FaultCounts `json:"faults,omitempty"`
	// Branches are the consumers sharing this one's reader (a
	// stream.Fanout), each with its counts.
	Branches []stream.BranchStats `json:"branches,omitempty"`
}

type localMetrics struct {
	program                    string
	runner                     *stream.Runner // nil for the writer
	data, checkpoints, streams *ddb.Counter
	quarantine                 *store.Quarantine
	faults                     *ddb.Faults
	branches                   func() []stream.BranchStats
}

func (m *localMetrics) read() Metrics {
	out := Metrics{Program: m.program, DataRequests: m.data.Counts(), CPUSeconds: CPUSeconds(), Memory: ReadMemory()}
	if m.quarantine != nil {
		out.Quarantined = m.quarantine.Count()
	}
	if m.faults != nil {
		fc := m.faults.Counts()
		out.Faults = &fc
	}
	if m.runner != nil {
		st, h := m.runner.Stats(), m.runner.Health()
		out.Stream, out.Health = &st, &h
	}
	if m.checkpoints != nil {
		out.CheckpointRequests = m.checkpoints.Counts()
	}
	if m.branches != nil {
		out.Branches = m.branches()
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

// serveAdmin serves /metrics and /healthz on addr until ctx ends, and for a
// consumer /status, POST /pause and POST /resume. It returns once the
// address is bound, or the reason it cannot be.
func serveAdmin(ctx context.Context, log *slog.Logger, addr string, m *localMetrics) error {
	mux, paths := adminMux(m)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on ADMIN_ADDR %s: %w", addr, err)
	}
	// pause and resume answer this machine only (consumer.Admin), and
	// never a web page: devguard refuses a rebound Host and a cross-site
	// POST.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{Handler: devguard.Guard{Port: port, Hosts: AllowedHosts()}.Wrap(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin endpoint stopped", "err", err)
		}
	}()
	log.Info("admin endpoint listening", "addr", ln.Addr().String(), "paths", paths)
	return nil
}

// adminMux routes the admin endpoint; paths lists them for the log.
func adminMux(m *localMetrics) (mux *http.ServeMux, paths string) {
	mux = http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, m.read())
	})
	// the table's capacity by partition key (DYNAMODB_CAPACITY): large,
	// so apart from /metrics, which make load reads every second
	mux.HandleFunc("GET /metrics/keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, m.data.KeyCounts())
	})
	paths = "/metrics /metrics/keys /healthz" + profiles(mux)
	if m.runner == nil {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		})
	} else {
		paths += " /status, POST /pause /resume"
		// the runner's routes are the public consumer.Admin's
		adm := consumer.Admin(m.runner, consumer.AdminOptions{PauseWait: PauseWait})
		for _, p := range []string{"/healthz", "/status", "/pause", "/resume"} {
			mux.Handle(p, adm)
		}
	}
	return mux, paths
}

// fromLoopback refuses (403) a request that does not come from this
// machine: the admin endpoint's profiles show the program's goroutines,
// command line and CPU (and its allocations, when profiling is on).
func fromLoopback(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			writeJSON(w, http.StatusForbidden, map[string]any{"title": "Forbidden", "status": http.StatusForbidden,
				"detail": "profiles are taken from this machine only"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// PauseWait is how long POST /pause and SIGUSR1 wait for the handler calls
// under way before answering.
const PauseWait = 30 * time.Second

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// watchHealth logs when the runner becomes stuck (an error, with the
// reason) and when it is no longer, checking every interval until ctx ends:
// a consumer that stops making progress says so in its log, not only on
// /healthz.
func watchHealth(ctx context.Context, log *slog.Logger, r *stream.Runner, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	stuck := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h := r.Health()
		switch {
		case h.Status == stream.Stuck && !stuck:
			log.Error("consumer stuck", "reason", h.Reason, "stuckAfter", h.StuckAfter.String())
		case h.Status != stream.Stuck && stuck:
			log.Info("consumer no longer stuck", "status", h.Status)
		}
		stuck = h.Status == stream.Stuck
	}
}

// pauseOnSignals pauses r on SIGUSR1 and resumes it on SIGUSR2 until ctx
// ends (on a platform without them, Windows, it does nothing: use POST
// /pause and /resume).
func pauseOnSignals(ctx context.Context, log *slog.Logger, r *stream.Runner) {
	pause, resume, ok := pauseSignals()
	if !ok {
		return
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, pause, resume)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				if sig == resume {
					r.Resume()
					continue
				}
				go func() {
					pctx, cancel := context.WithTimeout(ctx, PauseWait)
					defer cancel()
					if err := r.Pause(pctx); err != nil {
						log.Warn("paused; a handler call is still under way", "err", err)
					}
				}()
			}
		}
	}()
}
