package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[errs.Code]int{
	errs.Invalid:          http.StatusBadRequest,
	errs.Unauthorized:     http.StatusUnauthorized,
	errs.Forbidden:        http.StatusForbidden,
	errs.NotFound:         http.StatusNotFound,
	errs.Conflict:         http.StatusConflict,
	errs.Unprocessable:    http.StatusUnprocessableEntity,
	errs.MethodNotAllowed: http.StatusMethodNotAllowed,
	errs.Unavailable:      http.StatusServiceUnavailable,
	errs.TooMany:          http.StatusTooManyRequests,
	errs.Internal:         http.StatusInternalServerError,
}

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string            `json:"type"`
	Title  string            `json:"title"`
	Status int               `json:"status"`
	Detail string            `json:"detail,omitempty"`
	Errors []errs.FieldError `json:"errors,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // stored text is HTML-escaped already; keep it readable
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	code := errs.CodeOf(err)
	if code == errs.Internal && ddb.Transient(err) {
		// DynamoDB throttled or failed past the retries: nothing was
		// written (a transaction is all or nothing), and trying again
		// later may succeed.
		code = errs.Unavailable
		err = &errs.Error{Code: errs.Unavailable, Message: "the database is busy; try again", Err: err}
	}
	status := statusOf[code]
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	var e *errs.Error
	if code == errs.Internal {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		p.Detail = "internal error"
	} else if errors.As(err, &e) {
		p.Detail = e.Message
		p.Errors = e.Fields
	}
	if status == http.StatusServiceUnavailable {
		log.Warn("request failed for now", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
	}
	if status < 500 {
		// What a caller did wrong, at info: the answer says it to the
		// caller, this line to whoever runs the service.
		log.Info("request refused", "method", r.Method, "path", r.URL.Path, "status", status, "detail", p.Detail, "fields", p.Errors)
	}
	if e != nil && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer") // RFC 6750 §3
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	if e != nil && len(e.Extra) > 0 && code != errs.Internal {
		doc := map[string]any{}
		for k, v := range e.Extra {
			doc[k] = v
		}
		b, _ := json.Marshal(p)
		_ = json.Unmarshal(b, &doc) // the standard members win over extensions
		_ = json.NewEncoder(w).Encode(doc)
		return
	}
	_ = json.NewEncoder(w).Encode(p)
}

// maxBody bounds a request body.
const maxBody = 64 << 10

// decode reads a JSON body strictly: unknown fields, wrong types, trailing
// data and oversize bodies are errors naming the field (its full path, such
// as criteria.priceMin or criteria.foo).
func decode(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		// Anything but white space after the value is an error; dec.More
		// alone would let a stray '}' or ']' through.
		var extra json.RawMessage
		if err := dec.Decode(&extra); errors.Is(err, io.EOF) {
			return nil
		}
		return errs.Field("body", "trailing data after the JSON value")
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return errs.Field(field, fmt.Sprintf("must be %s, got %s", jsonType(te.Type.Kind()), te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		var doc any
		if json.Unmarshal(data, &doc) == nil {
			if paths := unknownFields("", doc, reflect.TypeOf(v)); len(paths) > 0 {
				fs := make([]errs.FieldError, len(paths))
				for i, p := range paths {
					fs[i] = errs.FieldError{Field: p, Reason: "unknown field"}
				}
				return errs.Fields(fs)
			}
		}
		return errs.Field(name, "unknown field")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return errs.Field("body", "malformed JSON: "+err.Error())
	case errors.Is(err, io.EOF):
		return errs.Field("body", "a JSON object is required")
	}
	return errs.Field("body", err.Error())
}

// readBody reads r's whole body; one over maxBody is an error naming body.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, errs.Field("body", fmt.Sprintf("larger than %d bytes", maxBody))
		}
		// The client's fault, not the database's: a body cut off (the
		// connection ended before Content-Length bytes) or too slow (the
		// server's read deadline passed).
		return nil, errs.Field("body", "did not arrive in full: "+bodyReadReason(err))
	}
	return data, nil
}

// unknownFields lists, sorted, the paths of the object keys in doc that the
// Go type t has no field for (matching names as encoding/json does:
// exactly, else case-insensitively).
func unknownFields(prefix string, doc any, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	join := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	var out []string
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		for key, val := range obj {
			ft, ok := jsonField(t, key)
			if !ok {
				out = append(out, join(key))
				continue
			}
			out = append(out, unknownFields(join(key), val, ft)...)
		}
	case reflect.Map:
		if obj, ok := doc.(map[string]any); ok {
			for key, val := range obj {
				out = append(out, unknownFields(join(key), val, t.Elem())...)
			}
		}
	case reflect.Slice, reflect.Array:
		if arr, ok := doc.([]any); ok {
			for i, val := range arr {
				out = append(out, unknownFields(fmt.Sprintf("%s[%d]", prefix, i), val, t.Elem())...)
			}
		}
	}
	sort.Strings(out)
	return out
}

// jsonField finds the type of t's field that encoding/json decodes key into.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if et, ok := jsonField(ft, key); ok {
					return et, true
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}

func jsonType(kind reflect.Kind) string {
	switch kind {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a value of another type"
}

// bodyReadReason says why a body could not be read, in words for the
// client.
func bodyReadReason(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "it took longer than the server waits for a body"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the connection ended before the Content-Length bytes were sent"
	}
	return "the connection failed while it was sent"
}

// BodyTimeout is how long a request's body may take to arrive in full
// (the local writer's read deadline, ReadDeadline; in AWS API Gateway
// buffers bodies before the function runs).
const BodyTimeout = 10 * time.Second

// ReadDeadline gives every request to h d (BodyTimeout in the local
// writer) to send its body, so a body trickled a byte at a time cannot
// hold a connection open for ever: reading it past the deadline fails,
// answered as a 400 on body. Upgraded WebSocket connections are not
// routed through it.
func ReadDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d)) // unsupported (tests' recorders): none
		h.ServeHTTP(w, r)
	})
}
