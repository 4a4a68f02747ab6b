package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/dynastream/dynastream/internal/errs"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[errs.Code]int{
	errs.Invalid:      http.StatusBadRequest,
	errs.Unauthorized: http.StatusUnauthorized,
	errs.Forbidden:    http.StatusForbidden,
	errs.NotFound:     http.StatusNotFound,
	errs.Conflict:     http.StatusConflict,
	errs.Internal:     http.StatusInternalServerError,
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
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	code := errs.CodeOf(err)
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
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// maxBody bounds a request body.
const maxBody = 64 << 10

// decode reads a JSON body strictly: unknown fields, wrong types, trailing
// data and oversize bodies are errors naming the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &te):
		return errs.Field(te.Field, fmt.Sprintf("must be %s, got %s", jsonType(te.Type.Kind().String()), te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.Field(name, "unknown field")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return errs.Field("body", "malformed JSON: "+err.Error())
	case errors.Is(err, io.EOF):
		return errs.Field("body", "a JSON object is required")
	case errors.As(err, &mbe):
		return errs.Field("body", fmt.Sprintf("larger than %d bytes", maxBody))
	}
	return errs.Field("body", err.Error())
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int32", "int64", "float64", "float32":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a value of the right type"
	}
	return kind
}
