package errs

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an error.
type Code string

// The codes.
const (
	Invalid      Code = "invalid"      // bad input: 400/422
	Unauthorized Code = "unauthorized" // no or bad credentials: 401
	Forbidden    Code = "forbidden"    // authenticated but not allowed: 403
	NotFound     Code = "not_found"    // 404
	Conflict     Code = "conflict"     // state forbids it: 409
	// Unprocessable is a request that cannot be what it claims to be (an
	// Idempotency-Key reused for another request): 422.
	Unprocessable Code = "unprocessable"
	// MethodNotAllowed is for a known path asked with a method it lacks: 405.
	MethodNotAllowed Code = "method_not_allowed"
	// TooMany is a caller past a rate limit: 429, with RetryAfter.
	TooMany Code = "too_many"
	// Unavailable is a dependency that keeps failing for now (DynamoDB
	// throttling or 5xx past the retries): 503, try again.
	Unavailable Code = "unavailable"
	Internal    Code = "internal" // everything else: 500
)

// FieldError names one bad field and why.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error is the project's error.
type Error struct {
	Code    Code
	Message string
	Fields  []FieldError
	// Extra holds extension members for the problem document (e.g. the id
	// of the existing item a conflict is about).
	Extra map[string]any
	// RetryAfter, when positive, is how long the caller should wait before
	// trying again (the Retry-After header).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Message
	for _, f := range e.Fields {
		msg += fmt.Sprintf("; %s: %s", f.Field, f.Reason)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field returns an Invalid error naming one field and the reason.
func Field(field, reason string) *Error {
	return &Error{Code: Invalid, Message: "invalid request", Fields: []FieldError{{Field: field, Reason: reason}}}
}

// Fields returns an Invalid error naming several fields, or nil if fs is empty.
func Fields(fs []FieldError) error {
	if len(fs) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Message: "invalid request", Fields: fs}
}

// CodeOf returns the code of the first *Error in err's chain, Internal otherwise.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }
