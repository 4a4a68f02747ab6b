package notify

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// DefaultMailConcurrency is how many of a batch's e-mails are sent at once
// (Effects.MailConcurrency).
const DefaultMailConcurrency = 16

// mailing is one batch's e-mails and in-app notifications, under way as
// soon as the batch's shared reads are done: every record's e-mails start
// then, all of the batch's together, in stream order through
// MailConcurrency workers, each under its once-guard (sendOnce), and the
// batch's notifications are written meanwhile in shared BatchWriteItem
// calls (Store.PutEach; keyed by the change and the recipient, so writing
// one again is harmless). A record's step in its group waits for its own
// (sent.wait), so a failed e-mail or notification still stops its key at
// that record, and a permanent failure is dead-lettered at once; what
// overlaps is the round trips, across records and keys. So e-mails about
// one key's changes may go out in another order than the changes (each at
// most once; docs/design.md §4).
type mailing struct {
	wg sync.WaitGroup // the workers and the notifications' write
}

type mailJob struct {
	key string
	m   mail.Message
	out *mailResult
}

// mailResult is one e-mail's outcome, once done is closed.
type mailResult struct {
	done chan struct{}
	err  error
}

// sent is one record's side effects, in flight: its e-mails and the write
// of its in-app notifications.
type sent struct {
	notes []collab.Notification
	err   error // the deliveries could not be worked out
	mails []*mailResult
	noted *mailResult // the notifications' write (nil: none)
}

// wait waits for the record's e-mails and notifications, and returns why
// they failed (nil: done): mailErr for its deliveries and e-mails, noteErr
// for the write of its notifications, which is shared with other records
// (so a permanent error there is not the record's own).
func (s *sent) wait() (mailErr, noteErr error) {
	if s.err != nil {
		return s.err, nil
	}
	var fails []error
	for _, m := range s.mails {
		<-m.done
		fails = append(fails, m.err)
	}
	if s.noted != nil {
		<-s.noted.done
		noteErr = s.noted.err
	}
	return errors.Join(fails...), noteErr
}

// startMailing works out each change's deliveries (no I/O) and starts its
// e-mails and the write of its notifications; changes and subjects are the
// batch's records with side effects, in stream order. An e-mail asked for
// twice (a record delivered twice in the batch) is sent once, and both
// records wait for it (PutEach writes a notification asked for twice once,
// too). close waits for everything started: nothing is left running when
// the batch returns.
func (e *Effects) startMailing(ctx context.Context, changes []stream.Change, subjects []subject, rd *reads) (*mailing, []*sent) {
	workers := e.MailConcurrency
	if workers <= 0 {
		workers = DefaultMailConcurrency
	}
	ml := &mailing{}
	out := make([]*sent, len(changes))
	var jobs []mailJob
	byKey := map[string]*mailResult{}
	for i, c := range changes {
		s := &sent{}
		out[i] = s
		ds, err := e.safeDeliveries(c, subjects[i], rd)
		if err != nil {
			s.err = err
			continue
		}
		for _, d := range ds {
			if d.note != nil {
				s.notes = append(s.notes, *d.note)
			}
			if d.message == nil {
				continue
			}
			r, ok := byKey[d.key]
			if !ok {
				r = &mailResult{done: make(chan struct{})}
				byKey[d.key] = r
				jobs = append(jobs, mailJob{key: d.key, m: *d.message, out: r})
			}
			s.mails = append(s.mails, r)
		}
	}
	ml.writeNotes(ctx, e, out)
	var next atomic.Int64 // the workers take the jobs in stream order
	for range min(workers, len(jobs)) {
		ml.wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(jobs)); i = next.Add(1) - 1 {
				j := jobs[i]
				j.out.err = e.sendRecovered(ctx, j.key, j.m)
				close(j.out.done)
			}
		})
	}
	return ml, out
}

// recovered turns a panic into *err, naming what panicked and where: the
// batch's e-mails and notifications run outside the groups, which recover
// a panic as the group's error (stream.Keyed), so they do it themselves,
// and a bug fails its records instead of the batch or the process.
func recovered(what string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("notify: %s: panic: %v\n%s", what, p, debug.Stack())
	}
}

// safeDeliveries is deliveries with a panic (a template's or the data's
// bug) made the record's error: it runs on the batch's goroutine, outside
// the groups that would recover it, and must fail one record, not the
// batch.
func (e *Effects) safeDeliveries(c stream.Change, s subject, rd *reads) (ds []delivery, err error) {
	defer recovered("record "+c.SequenceNumber, &err)
	return e.deliveries(c, s, rd)
}

// sendRecovered is sendOnce with a panic (a Mailer's bug) made the
// e-mail's error, as stream.Keyed makes a group's panic its error: the
// record fails and is retried, and the process goes on.
func (e *Effects) sendRecovered(ctx context.Context, key string, m mail.Message) (err error) {
	defer recovered("send "+key, &err)
	return e.sendOnce(ctx, key, m)
}

// writeNotes writes the notifications of every record in out in shared
// calls, one goroutine for the batch; each record learns its own items'
// outcome (the first error among them).
func (ml *mailing) writeNotes(ctx context.Context, e *Effects, out []*sent) {
	var notes []collab.Notification
	type span struct {
		s        *sent
		from, to int // the record's notifications in notes
	}
	var spans []span
	for _, s := range out {
		if s.err != nil || len(s.notes) == 0 {
			continue
		}
		s.noted = &mailResult{done: make(chan struct{})}
		spans = append(spans, span{s, len(notes), len(notes) + len(s.notes)})
		notes = append(notes, s.notes...)
	}
	if len(notes) == 0 {
		return
	}
	ml.wg.Go(func() {
		errs, err := e.putNotes(ctx, notes)
		for _, sp := range spans {
			sp.s.noted.err = err
			for i := sp.from; i < sp.to && sp.s.noted.err == nil; i++ {
				sp.s.noted.err = errs[i]
			}
			close(sp.s.noted.done)
		}
	})
}

// putNotes writes notifications with Store.PutEach: one result per
// notification, or one error for all (they could not be encoded, or the
// write panicked).
func (e *Effects) putNotes(ctx context.Context, notes []collab.Notification) (errs []error, err error) {
	defer recovered("write notifications", &err)
	items, err := store.NotificationItems(notes)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return e.Store.PutEach(ctx, items), nil
}

// close waits for the batch's e-mails and notifications.
func (ml *mailing) close() { ml.wg.Wait() }

// effectsRun is a batch's side effects under way beside its groups: the
// shared reads (Effects.read), then the e-mails and notifications
// (startMailing). A record with side effects waits for the reads (wait),
// then for its own (sent.wait); the batch's other records do not wait.
type effectsRun struct {
	ready chan struct{} // closed once the reads are done and the sends started
	err   error         // the reads failed
	ml    *mailing
}

// start starts the side effects of the batch's records that have some
// (effected, in stream order), setting each record's sent once the reads
// are done.
func (e *Effects) start(ctx context.Context, effected []*record) *effectsRun {
	fx := &effectsRun{ready: make(chan struct{})}
	go func() {
		defer close(fx.ready)
		defer recovered("side effects", &fx.err)
		changes := make([]stream.Change, len(effected))
		subjects := make([]subject, len(effected))
		for i, x := range effected {
			changes[i], subjects[i] = x.change, x.subject
		}
		rd, err := e.read(ctx, subjects)
		if err != nil {
			fx.err = fmt.Errorf("read what the side effects need: %w", err)
			return
		}
		ml, sents := e.startMailing(ctx, changes, subjects, rd)
		fx.ml = ml
		for i, x := range effected {
			x.sent = sents[i]
		}
	}()
	return fx
}

// wait waits for the reads, and returns their error.
func (fx *effectsRun) wait() error {
	<-fx.ready
	return fx.err
}

// close waits for everything started: the reads, then the e-mails and
// notifications.
func (fx *effectsRun) close() {
	<-fx.ready
	if fx.ml != nil {
		fx.ml.close()
	}
}
