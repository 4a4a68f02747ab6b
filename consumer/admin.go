package consumer

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/dynastream/dynastream/stream"
)

// AdminOptions configure Admin.
type AdminOptions struct {
	// PauseWait is how long POST /pause waits for the handler calls under
	// way (default 30s); when they outlast it, the runner is paused all
	// the same and the answer is 202.
	PauseWait time.Duration
}

// Admin is the admin handler of a runner:
//
//   - GET /healthz: 200 with {"status": …} while the runner is idle,
//     running or paused (as the operator meant it), 503 with the reason
//     when it is stuck (stream.Health): for a load balancer or a process
//     supervisor;
//   - GET /status: the runner's stream.Health;
//   - POST /pause and POST /resume: stop handing out batches (the
//     checkpoints stay where they are) and go on.
//
// Pause and resume answer this machine only (a loopback remote address,
// whatever address the server listens on: 403 otherwise) and never a
// cross-site browser request (403, net/http's CrossOriginProtection), so a
// web page the operator visits cannot pause the consumer. Serve it on a
// loopback address (127.0.0.1:port) in any case.
func Admin(r *stream.Runner, o AdminOptions) http.Handler {
	wait := o.PauseWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		h := r.Health()
		code := http.StatusOK
		if h.Status == stream.Stuck {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, struct {
			Status string `json:"status"`
			Reason string `json:"reason,omitempty"`
		}{h.Status, h.Reason})
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, r.Health())
	})
	control := http.NewServeMux()
	control.HandleFunc("POST /pause", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), wait)
		defer cancel()
		if err := r.Pause(ctx); err != nil {
			// Paused all the same; the call under way ends later.
			writeJSON(w, http.StatusAccepted, map[string]any{"message": err.Error(), "health": r.Health()})
			return
		}
		writeJSON(w, http.StatusOK, r.Health())
	})
	control.HandleFunc("POST /resume", func(w http.ResponseWriter, _ *http.Request) {
		r.Resume()
		writeJSON(w, http.StatusOK, r.Health())
	})
	guarded := fromLoopback(http.NewCrossOriginProtection().Handler(control))
	mux.Handle("POST /pause", guarded)
	mux.Handle("POST /resume", guarded)
	return mux
}

// fromLoopback refuses (403) a request that does not come from this
// machine.
func fromLoopback(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": "Forbidden", "status": http.StatusForbidden,
				"detail": "pause and resume are taken from this machine only"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
