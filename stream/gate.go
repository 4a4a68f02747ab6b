package stream

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Gate is the ordering rule of a consumer that starts from a scan of the
// table instead of the stream's beginning (Bootstrap): the stream is
// followed from a position taken before the scan, so the records of an
// item changed while the table was scanned may already be in the image the
// scan handed over, or may not. Per item, the Gate holds back the stream's
// records until the first one that starts from the image the scan saw —
// its old image is that image — or, for an item the scan did not see, the
// first one that creates it (no old image); that record and every later
// one of the item pass. So each item goes on from exactly the version the
// consumer was given, and ends in its latest state with no change applied
// twice and none skipped, whatever the handler does with a change (set a
// value or add a difference). It needs the stream's old images
// (NEW_AND_OLD_IMAGES). An item that went A→B→A keeps the first place the
// chain passes through A: the changes after it take A back to A, which is
// what they did.
//
// A Gate is safe for concurrent use.
type Gate struct {
	mu   sync.Mutex
	seen map[string]uint64 // item key: the image the scan handed over (its hash)
	// resolved is, per item whose records pass, the sequence number of the
	// first one that did: the item's records from it on pass, those before
	// it stay held however often they come again
	resolved map[string]string
	held     int64
}

// NewGate returns an empty Gate.
func NewGate() *Gate {
	return &Gate{seen: map[string]uint64{}, resolved: map[string]string{}}
}

// Saw records the image the scan handed over for the item with these key
// attributes (Keys of the record Snapshot made of it).
func (g *Gate) Saw(keys, image map[string]events.DynamoDBAttributeValue) {
	k := itemKeyOf(keys)
	h := imageHash(image)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen[k] = h
}

// Pass reports whether a stream record goes to the handler (and, when it
// is the first of its item to do so, lets the item's later records pass).
func (g *Gate) Pass(r events.DynamoDBEventRecord) bool {
	k := itemKeyOf(r.Change.Keys)
	seq := r.Change.SequenceNumber
	g.mu.Lock()
	defer g.mu.Unlock()
	if from, ok := g.resolved[k]; ok {
		if CompareSequenceNumbers(seq, from) >= 0 {
			return true
		}
		g.held++ // a record before the first that passed, come again
		return false
	}
	want, saw := g.seen[k]
	old := r.Change.OldImage
	if (!saw && len(old) == 0) || (saw && len(old) > 0 && imageHash(old) == want) {
		g.resolved[k] = seq
		return true
	}
	g.held++
	return false
}

// Held counts the records the Gate has held back: changes the scan's
// images already held.
func (g *Gate) Held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// Handler returns a Handler that hands h only the records the Gate lets
// pass (held ones are finished, as the loop guard's are).
func (g *Gate) Handler(h Handler) Handler {
	return Skip(func(r events.DynamoDBEventRecord) bool { return !g.Pass(r) }, h)
}

// itemKeyOf is an item's identity from its key attributes.
func itemKeyOf(keys map[string]events.DynamoDBAttributeValue) string {
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	slices.Sort(names)
	b, _ := json.Marshal(struct {
		N []string
		K map[string]events.DynamoDBAttributeValue
	}{names, keys})
	return string(b)
}

// imageHash is an image's identity: its canonical JSON (names sorted, and
// sets sorted, which DynamoDB does not order), hashed.
func imageHash(img map[string]events.DynamoDBAttributeValue) uint64 {
	b, _ := json.Marshal(canonical(img))
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint64(sum[:8])
}

func canonical(img map[string]events.DynamoDBAttributeValue) map[string]any {
	out := make(map[string]any, len(img))
	for k, v := range img {
		out[k] = canonicalValue(v)
	}
	return out
}

func canonicalValue(v events.DynamoDBAttributeValue) any {
	switch v.DataType() {
	case events.DataTypeMap:
		return map[string]any{"M": canonical(v.Map())}
	case events.DataTypeList:
		l := make([]any, len(v.List()))
		for i, e := range v.List() {
			l[i] = canonicalValue(e)
		}
		return map[string]any{"L": l}
	case events.DataTypeStringSet:
		return map[string]any{"SS": sorted(v.StringSet())}
	case events.DataTypeNumberSet:
		return map[string]any{"NS": sorted(v.NumberSet())}
	case events.DataTypeBinarySet:
		bs := make([]string, len(v.BinarySet()))
		for i, b := range v.BinarySet() {
			bs[i] = string(b)
		}
		return map[string]any{"BS": sorted(bs)}
	}
	return v
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
