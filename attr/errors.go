package attr

import (
	"fmt"
	"strconv"
	"strings"
)

// pathError is the error every conversion returns. The path is collected
// while the recursion unwinds, so the successful path allocates nothing for
// it.
type pathError struct {
	path []pathElem // innermost element first
	msg  string
}

// pathElem is one step of an attribute path: a map key, or a list index when
// index >= 0.
type pathElem struct {
	key   string
	index int
}

func errf(format string, args ...any) error {
	return &pathError{msg: fmt.Sprintf(format, args...)}
}

// errTypedNil reports a union member that is a nil pointer of a known type.
func errTypedNil(v any) error { return errf("nil %T attribute value", v) }

// errNil reports a nil union interface.
func errNil() error { return &pathError{msg: "nil attribute value"} }

func (e *pathError) Error() string {
	if len(e.path) == 0 {
		return "attr: " + e.msg
	}
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		p := e.path[i]
		if p.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	}
	return "attr: " + strconv.Quote(b.String()) + ": " + e.msg
}

// atKey prefixes err's path with the map key k.
func atKey(err error, k string) error {
	if pe, ok := err.(*pathError); ok {
		pe.path = append(pe.path, pathElem{key: k, index: -1})
	}
	return err
}

// atIndex prefixes err's path with the list index i.
func atIndex(err error, i int) error {
	if pe, ok := err.(*pathError); ok {
		pe.path = append(pe.path, pathElem{index: i})
	}
	return err
}
