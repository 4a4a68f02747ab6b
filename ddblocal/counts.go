package ddblocal

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Counts are what a Limiter did: requests, throttles, unprocessed batch
// keys, transaction conflicts and GetRecords refused, in all and per
// partition key and operation.
type Counts struct {
	// Requests is every DynamoDB and DynamoDB Streams request it took.
	Requests int64
	// Throttled is the requests answered with a throttling error
	// (ThrottlingException, ProvisionedThroughputExceededException, or a
	// transaction cancelled with ThrottlingError).
	Throttled int64
	// Unprocessed is the keys and items BatchGetItem and BatchWriteItem
	// answered unprocessed, over their partition's limit or drawn by
	// Limits.Unprocessed.
	Unprocessed int64
	// Conflicts is the transactions cancelled and the single writes
	// refused for a conflict with a transaction under way.
	Conflicts int64
	// StreamLimited is the GetRecords calls refused
	// (LimitExceededException).
	StreamLimited int64
	// Keys are the partition keys that met a limit, per operation, most
	// throttled first (then most unprocessed, conflicts).
	Keys []KeyCount
}

// KeyCount is what one operation met on one partition key.
type KeyCount struct {
	Table string
	// Index is the global secondary index ("" for the table), or
	// "stream" for a stream's shard (Key is then the shard's id).
	Index string
	// Key is the partition key's value (a string as it is, a number's
	// digits, a binary in base64), at most 200 bytes of it.
	Key string
	// Op is the operation (PutItem, BatchGetItem, GetRecords, …).
	Op string
	// App is the caller's application id, as its SDK names it in the
	// User-Agent (app/<id>: the AWS SDK for Go's Options.AppID, the
	// AWS_SDK_UA_APP_ID setting), "" when it names none: the same key and
	// operation are counted apart per App, so a report can tell one part
	// of a program's requests from another.
	App string
	// Requests is the requests of Op that read or wrote this key (each
	// batch key or transaction item once) since it was last idle: a key
	// that met no limit and took no request for a minute is forgotten, so
	// that a long run's counts stay as large as its busy keys. Throttled
	// those throttled
	// (a batch's key answered unprocessed for its partition's limit
	// counts here, as Unprocessed too), Unprocessed the batch keys left
	// unprocessed, Conflicts the conflicts met on it.
	Requests, Throttled, Unprocessed, Conflicts int64
	// Since is when it was first counted after it was last forgotten (by
	// the Limiter's clock): two KeyCounts of one key and operation with the
	// same Since count the same requests, the later more of them, and may
	// be subtracted; with different ones, the later counts anew.
	Since time.Time
}

// keyOp is a KeyCount's identity.
type keyOp struct {
	p  part
	op callOp
}

// callOp is an operation as a caller made it: its name and the caller's
// application id (KeyCount.App).
type callOp struct{ name, app string }

// appOf is the application id a request's User-Agent names (app/<id>).
func appOf(r *http.Request) string {
	for f := range strings.FieldsSeq(r.Header.Get("User-Agent")) {
		if id, ok := strings.CutPrefix(f, "app/"); ok {
			return id
		}
	}
	return ""
}

// tally keeps the Counts.
type tally struct {
	mu    sync.Mutex
	c     Counts
	keys  map[keyOp]*keyEntry
	now   time.Time
	swept time.Time
}

// keyEntry is a KeyCount and when it was last counted.
type keyEntry struct {
	KeyCount
	last time.Time
}

// idleKey is how long a key that met no limit is kept after its last
// request; past maxKeys keys, one that met a limit is forgotten too (the
// Counts' totals keep what it met).
const (
	idleKey = time.Minute
	maxKeys = 50_000
)

func (t *tally) key(p part, op callOp) *KeyCount {
	k := keyOp{p, op}
	e := t.keys[k]
	if e == nil {
		e = &keyEntry{KeyCount: KeyCount{Table: p.table, Index: p.index, Key: display(p.key), Op: op.name, App: op.app, Since: t.now}}
		t.keys[k] = e
	}
	e.last = t.now
	return &e.KeyCount
}

// add runs f on the counts under the lock, at now.
func (t *tally) add(now time.Time, f func(c *Counts, key func(part, callOp) *KeyCount)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = now
	f(&t.c, t.key)
	if now.Sub(t.swept) >= 10*time.Second {
		t.swept = now
		crowded := len(t.keys) > maxKeys
		for k, e := range t.keys {
			if now.Sub(e.last) > idleKey && (crowded || e.Throttled == 0 && e.Unprocessed == 0 && e.Conflicts == 0) {
				delete(t.keys, k)
			}
		}
	}
}

// all is every key's counts, those that met no limit too, in no order.
func (t *tally) all() []KeyCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]KeyCount, 0, len(t.keys))
	for _, e := range t.keys {
		out = append(out, e.KeyCount)
	}
	return out
}

func (t *tally) counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.c
	c.Keys = nil
	for _, e := range t.keys {
		if e.Throttled > 0 || e.Unprocessed > 0 || e.Conflicts > 0 {
			c.Keys = append(c.Keys, e.KeyCount)
		}
	}
	slices.SortFunc(c.Keys, func(a, b KeyCount) int {
		return cmp.Or(cmp.Compare(b.Throttled, a.Throttled), cmp.Compare(b.Unprocessed, a.Unprocessed),
			cmp.Compare(b.Conflicts, a.Conflicts), cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Op, b.Op), cmp.Compare(a.App, b.App))
	})
	return c
}
