package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/store"
)

// Requests with an Idempotency-Key (the IETF httpapi draft): a client that
// retries a creating or changing request after a timeout sends the same key
// again, and gets the first response again instead of a second effect.
const (
	// IdempotencyHeader names the header.
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is set on an answer that repeats a stored response.
	ReplayedHeader = "Idempotent-Replayed"
	// idempotencyKeep is how long a key is remembered.
	idempotencyKeep = 24 * time.Hour
	// DefaultIdempotencyHold is how long a running request holds its key
	// (past API Gateway's 29 s limit): a repeat meanwhile is a 409.
	DefaultIdempotencyHold = 30 * time.Second
	// maxIdempotencyKey bounds a key's length.
	maxIdempotencyKey = 255
	// maxStoredBody bounds a response kept for repeats (an item holds
	// 400 KB); a larger one is answered but not kept.
	maxStoredBody = 256 << 10
)

// Fingerprint is what makes two requests with one Idempotency-Key the
// same request: method, path, query and body.
func Fingerprint(method, path, query string, body []byte) string {
	h := sha256.New()
	_, _ = io.WriteString(h, method+" "+path+"?"+query+"\n")
	_, _ = h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// mutating says whether a method creates or changes something.
func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// idempotencyKey reads the Idempotency-Key header: "" when absent; a
// structured-field string ("…") or a bare token, 1-255 visible ASCII
// characters.
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values(IdempotencyHeader)
	if len(vs) == 0 {
		return "", nil
	}
	k := strings.TrimSpace(vs[0])
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	ok := len(vs) == 1 && k != "" && len(k) <= maxIdempotencyKey
	for i := 0; ok && i < len(k); i++ {
		ok = k[i] > 0x20 && k[i] < 0x7f
	}
	if !ok {
		return "", errs.Field(IdempotencyHeader, "must be one value of 1 to 255 visible ASCII characters (a UUID, say)")
	}
	return k, nil
}

// idempotent runs next (the request's validation and handler) at most once
// per caller and key: the first request with a key runs and its response
// is kept for 24 hours; the same request again (same method, path, query
// and body) gets that response again, marked Idempotent-Replayed, without
// running; another request with the key is a 422; the same one while the
// first is still running a 409 with Retry-After. A response that a retry
// may cure (5xx, 429) is not kept: the key is released, and the retry
// runs.
//
// A request runs as of when its key was first claimed: its clock stands
// still at that time and its ids come from the caller and the key. So a
// request run again after its first run was cut short (the writer crashed
// between its writes and recording the response; the hold ended) writes
// exactly what the first run wrote, which the store recognises as done
// (its own conditional puts and transactions), and answers the same. A run
// that failed (5xx) having surely written nothing (ddb.Writes) forgets
// the key instead: its retry runs as of its own time.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, key string, next func(*Server, http.ResponseWriter, *http.Request) error) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	fp := Fingerprint(r.Method, r.URL.EscapedPath(), r.URL.RawQuery, body)
	now := s.Now()
	hold := s.IdempotencyHold
	if hold <= 0 {
		hold = DefaultIdempotencyHold
	}
	state, claim, stored, until, err := s.Store.Requests.BeginRequest(r.Context(), identity(r.Context()).UserID, key, fp, now, hold, idempotencyKeep)
	if err != nil {
		return err
	}
	switch state {
	case store.RequestMismatch:
		return errs.New(errs.Unprocessable, "this Idempotency-Key was used for another request (another method, path, query or body): use a new key for a new request")
	case store.RequestStale:
		return errs.New(errs.Conflict, "a request with this Idempotency-Key was cut short at %s, longer ago than it may be run again as of then (%s): its outcome is unknown; check, then send a new request with a new key",
			until.UTC().Format(time.RFC3339), store.MaxAsOf)
	case store.RequestBusy:
		e := errs.New(errs.Conflict, "a request with this Idempotency-Key is still being processed: try again shortly")
		e.RetryAfter = time.Duration(math.Max(float64(until.Sub(now)), float64(time.Second)))
		return e
	case store.RequestDone:
		if stored.ContentType != "" {
			w.Header().Set("Content-Type", stored.ContentType)
		}
		if stored.Location != "" {
			w.Header().Set("Location", stored.Location)
		}
		w.Header().Set(ReplayedHeader, "true")
		w.WriteHeader(stored.Status)
		_, _ = io.WriteString(w, stored.Body)
		return nil
	}
	buf := &bufferedResponse{header: http.Header{}}
	run := r.WithContext(ddb.TrackWrites(r.Context()))
	if err := next(s.asOf(claim.StartedAt, identity(r.Context()).UserID, key), buf, run); err != nil {
		writeError(buf, s.log(), r, err)
	}
	if buf.status == 0 {
		buf.status = http.StatusOK
	}
	resp := store.StoredResponse{Status: buf.status, ContentType: buf.header.Get("Content-Type"), Location: buf.header.Get("Location"), Body: buf.body.String()}
	// Recorded even when the client has gone (its retry asks again).
	ctx := context.WithoutCancel(r.Context())
	switch {
	case buf.status == http.StatusTooManyRequests,
		buf.status >= 500 && !claim.Resumed && !ddb.Writes(run.Context()):
		// Nothing done; the retry runs afresh: a limit counts from now, and
		// a run that wrote nothing leaves no history to be consistent with
		// (run as of its first start, the retry would write in the past).
		if err := s.Store.Requests.AbortRequest(ctx, claim); err != nil {
			s.log().Warn("idempotency: could not forget a key (it is free again when its hold ends)", "key", key, "err", err)
		}
	case buf.status >= 500 || buf.body.Len() > maxStoredBody:
		// Maybe partly done (or continuing a run that was): the retry runs
		// as of the first start, so what this run wrote is its own.
		if err := s.Store.Requests.ReleaseRequest(ctx, claim); err != nil {
			s.log().Warn("idempotency: could not release a key (it is free again when its hold ends)", "key", key, "err", err)
		}
	default:
		if err := s.Store.Requests.EndRequest(ctx, claim, resp); err != nil {
			// Done but not recorded: a repeat after the hold runs again.
			s.log().Warn("idempotency: could not record a response", "key", key, "err", err)
		}
	}
	for k, vs := range buf.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(buf.status)
	_, _ = w.Write(buf.body.Bytes())
	return nil
}

// asOf is the server as a keyed request sees it: the clock stopped at at,
// and ids that are ULIDs of at whose random part is drawn from the caller,
// the key and the id's place in the request (the n-th id of a run is the
// n-th of every run).
func (s *Server) asOf(at time.Time, userID, key string) *Server {
	c := *s
	var n atomic.Int64
	c.Now = func() time.Time { return at }
	c.NewID = func() string {
		sum := sha256.Sum256([]byte(strconv.Itoa(len(userID)) + ":" + userID + "\x00" + key + "\x00" + strconv.FormatInt(n.Add(1), 10)))
		var id ulid.ULID
		_ = id.SetTime(ulid.Timestamp(at))
		_ = id.SetEntropy(sum[:10])
		return id.String()
	}
	return &c
}
