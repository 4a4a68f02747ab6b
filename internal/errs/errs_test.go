package errs_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/dynastream/dynastream/internal/errs"
)

func TestCodes(t *testing.T) {
	nf := errs.New(errs.NotFound, "room %s not found", "r1")
	wrapped := fmt.Errorf("store: get: %w", nf)
	if errs.CodeOf(wrapped) != errs.NotFound || !errs.Is(wrapped, errs.NotFound) || errs.Is(wrapped, errs.Conflict) {
		t.Errorf("code of a wrapped error: %s", errs.CodeOf(wrapped))
	}
	if errs.CodeOf(io.EOF) != errs.Internal {
		t.Errorf("a plain error is %s, want internal", errs.CodeOf(io.EOF))
	}
	if errs.Is(nil, errs.Internal) {
		t.Error("nil is internal")
	}
	if got := nf.Error(); got != "not_found: room r1 not found" {
		t.Errorf("Error() = %q", got)
	}
	if errs.Fields(nil) != nil {
		t.Error("Fields(nil) is not nil")
	}
	fe := errs.Fields([]errs.FieldError{{Field: "a", Reason: "x"}, {Field: "b", Reason: "y"}})
	if !errs.Is(fe, errs.Invalid) || fe.Error() != "invalid: invalid request; a: x; b: y" {
		t.Errorf("Fields = %v", fe)
	}
	if f := errs.Field("limit", "too big"); f.Code != errs.Invalid || len(f.Fields) != 1 || f.Fields[0].Field != "limit" {
		t.Errorf("Field = %+v", f)
	}
	w := fmt.Errorf("read body: %w", io.EOF)
	if !errors.Is(w, io.EOF) || errs.CodeOf(w) != errs.Internal {
		t.Errorf("a plain error is internal: %v", errs.CodeOf(w))
	}
}
