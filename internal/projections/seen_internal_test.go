package projections

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/dynastream/dynastream/internal/ddbtest"
)

// The set of comments with counts keeps its ids, not the blocks they came
// in: a stream record's strings share 4 KB blocks of the SDK's decoding
// arena, so an id kept as it came would keep its block (issue 52: the
// projector grew 0.3 MB a minute). 5,000 ids, each cut from a 4 KB block
// of its own, must hold far less than the 20 MB of their blocks; and the
// set stays within its bound however many it is given.
func TestSeenSetKeepsNoBlocks(t *testing.T) {
	var s seenSet
	before := ddbtest.LiveHeap()
	for i := range 5000 {
		block := make([]byte, 4096)
		n := copy(block, fmt.Sprintf("comment-%026d", i))
		s.add(unsafe.String(&block[0], n)) // as smithy-go's arena makes a record's strings
	}
	grown := int64(ddbtest.LiveHeap()) - int64(before)
	if grown > 2<<20 {
		t.Errorf("5,000 ids hold %d bytes: their 4 KB blocks are kept", grown)
	}
	if !s.has(fmt.Sprintf("comment-%026d", 4999)) {
		t.Error("the last id is not remembered")
	}
	for i := range 3 * seenSetMax {
		s.add(fmt.Sprint("c", i))
	}
	if n := len(s.m); n > seenSetMax {
		t.Errorf("%d ids remembered, bound %d", n, seenSetMax)
	}
	runtime.KeepAlive(&s)
}
