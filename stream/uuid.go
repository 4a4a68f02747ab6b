package stream

import (
	"crypto/rand"
	"fmt"
)

// invocationID is a new handler call's id.
func (r *Runner) invocationID() string {
	if r.InvocationID != nil {
		return r.InvocationID()
	}
	return NewUUID()
}

// NewUUID is a random (version 4) UUID, as Lambda's request ids are.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return formatUUID(b, 4)
}

// formatUUID writes b as a UUID of the given version (RFC 9562's layout).
func formatUUID(b [16]byte, version byte) string {
	b[6] = b[6]&0x0f | version<<4
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
