package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/ddb"
	devents "github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// The derivations whose lag is measured.
const (
	kindCombined      = "combined"
	kindCompatibility = "compatibility"
	kindActivity      = "activity"
	kindCounts        = "reactionCounts"
	kindCookingCounts = "cookingCounts"
	kindNotification  = "notification"
	kindEmail         = "email"
	kindEvent         = "event"
)

// kinds in report order.
var kinds = []string{kindCombined, kindCompatibility, kindActivity, kindCounts, kindCookingCounts, kindNotification, kindEmail, kindEvent}

// link is a core record seen on the stream, waiting for the write that made
// it.
type link struct {
	eventID   string
	hasEvents bool
}

// observer watches the table's stream (and the notifier's outbox) and
// remembers when each derived item, side effect and event first appeared.
// The stream is read by a stream.Runner of its own with a 20 ms poll, so an
// item is seen up to about 20 ms after it is written; that delay is part of
// every lag it measures (a shorter poll would load DynamoDB Local, which the
// measured stack shares, with GetRecords calls). It is an instrument, not
// one of the programs: it reads DynamoDB Local directly, never through
// -aws-limits' Limiter, and keeps to no ReadsPerSecond (at the default 5 a
// second its own polls would add about 110 ms to every lag it measures).
type observer struct {
	mu    sync.Mutex
	links map[string][]link     // core item key + kind → records, in stream order
	seen  map[string]time.Time  // observation → first time
	notes map[string]*noteCount // source event id → in-app notifications
	now   func() time.Time
	log   *slog.Logger
	// records counts the stream's records it has read (-catchup measures
	// a paused consumer's backlog with it).
	records atomic.Int64
	// What the bill is made of (cost.go): domain events in the outbox,
	// e-mails in the mail folder, and the write units of the derived
	// changes on the stream had each been written once, plainly
	// (derivedUnits, under mu).
	events, emails atomic.Int64
	derivedUnits   float64
}

type noteCount struct {
	users map[string]bool
	last  time.Time
}

func newObserver(log *slog.Logger) *observer {
	return &observer{links: map[string][]link{}, seen: map[string]time.Time{}, notes: map[string]*noteCount{}, now: time.Now, log: log}
}

func linkKey(k store.Key, kind string) string { return k.PK + "\x00" + k.SK + "\x00" + kind }

func (o *observer) mark(key string, at time.Time) {
	if _, ok := o.seen[key]; !ok {
		o.seen[key] = at
	}
}

// handle is the observer's stream handler.
func (o *observer) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	at := o.now()
	o.records.Add(int64(len(ev.Records)))
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rec := range ev.Records {
		c, err := stream.Decode(rec)
		if err != nil {
			o.log.Warn("loadgen: undecodable record", "seq", rec.Change.SequenceNumber, "err", err)
			continue
		}
		if !c.Derived() {
			if c.Kind != stream.Insert && c.Kind != stream.Modify && c.Kind != stream.Remove {
				continue
			}
			hasEvents := false
			if pc, err := notify.ToChange(rec); err == nil {
				evs, err := devents.Map(pc)
				hasEvents = err == nil && len(evs) > 0
			}
			k := store.Key{PK: c.String(store.AttrPK), SK: c.String(store.AttrSK)}
			lk := linkKey(k, c.Kind.String())
			o.links[lk] = append(o.links[lk], link{eventID: c.EventID, hasEvents: hasEvents})
			continue
		}
		switch c.Kind {
		case stream.TTLRemove: // free
			continue
		case stream.Remove:
			o.derivedUnits++ // a delete: 1 unit
			continue
		}
		o.derivedUnits += ddb.WriteUnits(c.New)
		pk, sk := c.String(store.AttrPK), c.String(store.AttrSK)
		switch c.ItemType() {
		case store.TypeActivity:
			o.mark("act:"+c.String("activityId"), at)
		case store.TypeCombinedCriteria:
			o.mark("comb:"+pk+":"+strings.TrimPrefix(sk, store.SKPrefixCombined), at)
		case store.TypeCompatibility:
			o.mark("comp:"+pk+":"+strings.TrimPrefix(sk, store.SKPrefixCompatibility), at)
		case store.TypeReactionCountMarker:
			o.mark("cnt:"+strings.TrimPrefix(sk, "COUNTED#"), at)
		case store.TypeCookingMarker:
			o.mark("ckc:"+strings.TrimPrefix(sk, store.SKPrefixCounted), at)
		case store.TypeNotification:
			id := c.String("notificationId")
			n := o.notes[id]
			if n == nil {
				n = &noteCount{users: map[string]bool{}}
				o.notes[id] = n
			}
			if u := c.String("userId"); !n.users[u] {
				n.users[u] = true
				n.last = at
			}
		}
	}
	return events.DynamoDBEventResponse{}, nil
}

// tailOutbox follows the notifier's outbox file (one event per line) until
// ctx ends, marking each event's record by its eventID.
func (o *observer) tailOutbox(ctx context.Context, path string) {
	var f *os.File
	var r *bufio.Reader
	var partial []byte
	for ctx.Err() == nil {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil {
				sleep(ctx, 20*time.Millisecond)
				continue
			}
			defer f.Close()
			r = bufio.NewReaderSize(f, 1<<20)
		}
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			partial = append(partial, line...)
			sleep(ctx, 10*time.Millisecond)
			continue
		}
		if err != nil {
			o.log.Warn("loadgen: read outbox", "err", err)
			return
		}
		line = append(partial, line...)
		partial = nil
		var e struct {
			ID string `json:"id"`
		}
		o.events.Add(1)
		// an event's id is its record's eventID, a dash and its index: the
		// eventID is DynamoDB's on either source, where the sequence number
		// is the Kinesis record's on a Kinesis one
		if json.Unmarshal(line, &e) == nil {
			if i := strings.LastIndexByte(e.ID, '-'); i > 0 {
				at := o.now()
				o.mu.Lock()
				o.mark("evt:"+e.ID[:i], at)
				o.mu.Unlock()
			}
		}
	}
}

// tailMail watches the local mailer's directory (one .eml file per e-mail,
// written atomically) until ctx ends, marking each e-mail's idempotency key
// when its file appears (the idempotency records live in the bookkeeping
// table, which has no stream).
func (o *observer) tailMail(ctx context.Context, dir string) {
	known := map[string]bool{}
	for ctx.Err() == nil {
		entries, _ := os.ReadDir(dir)
		at := o.now()
		for _, e := range entries {
			name := e.Name()
			if known[name] || !strings.HasSuffix(name, ".eml") || strings.HasPrefix(name, ".") {
				continue
			}
			known[name] = true
			o.emails.Add(1)
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			msg, err := netmail.ReadMessage(bufio.NewReader(f))
			f.Close()
			if err != nil {
				o.log.Warn("loadgen: unreadable e-mail", "file", name, "err", err)
				continue
			}
			key, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get(mail.IdempotencyHeader))
			if err == nil && key != "" {
				o.mu.Lock()
				o.mark("mail:"+key, at)
				o.mu.Unlock()
			}
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// watch runs the observer on the table's stream until ctx ends.
func (o *observer) watch(ctx context.Context, clients *ddb.Clients, streamARN string) error {
	r := &stream.Runner{
		Config: stream.Config{
			StreamARN: streamARN, Consumer: "loadgen-observer", BatchSize: 1000,
			PollInterval: 20 * time.Millisecond, ReadsPerSecond: -1, MaxRetries: stream.Retries(stream.Forever), Skip: stream.SkipNone, RetryBackoff: 10 * time.Millisecond,
		},
		API: clients.Streams, Checkpoints: &stream.MemoryCheckpoints{}, DeadLetters: &stream.MemoryDeadLetters{},
		Logger: o.log,
	}
	return r.Run(ctx, o.handle)
}

// claim returns the oldest unclaimed core record of an item's change.
func (o *observer) claim(k store.Key, kind string) (link, bool) {
	lk := linkKey(k, kind)
	l := o.links[lk]
	if len(l) == 0 {
		return link{}, false
	}
	if len(l) == 1 {
		delete(o.links, lk)
	} else {
		o.links[lk] = l[1:]
	}
	return l[0], true
}
