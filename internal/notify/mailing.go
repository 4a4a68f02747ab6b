package notify

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

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
	jobs chan mailJob
	wg   sync.WaitGroup // the workers
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
	ml := &mailing{jobs: make(chan mailJob)}
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
	for range min(workers, len(jobs)) {
		ml.wg.Go(func() {
			for j := range ml.jobs {
				j.out.err = e.sendRecovered(ctx, j.key, j.m)
				close(j.out.done)
			}
		})
	}
	go func() {
		for _, j := range jobs {
			ml.jobs <- j
		}
		close(ml.jobs)
	}()
	return ml, out
}

// safeDeliveries is deliveries with a panic (a template's or the data's
// bug) made the record's error: it runs on the batch's goroutine, outside
// the groups that would recover it, and must fail one record, not the
// batch.
func (e *Effects) safeDeliveries(c stream.Change, s subject, rd *reads) (ds []delivery, err error) {
	defer func() {
		if p := recover(); p != nil {
			ds, err = nil, fmt.Errorf("notify: record %s: panic: %v\n%s", c.SequenceNumber, p, debug.Stack())
		}
	}()
	return e.deliveries(c, s, rd)
}

// sendRecovered is sendOnce with a panic (a Mailer's bug) made the
// e-mail's error, as stream.Keyed makes a group's panic its error: the
// record fails and is retried, and the process goes on.
func (e *Effects) sendRecovered(ctx context.Context, key string, m mail.Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("notify: send %s: panic: %v\n%s", key, p, debug.Stack())
		}
	}()
	return e.sendOnce(ctx, key, m)
}

// writeNotes writes the notifications of every record in out in shared
// calls, one goroutine for the batch; each record learns its own items'
// outcome.
func (ml *mailing) writeNotes(ctx context.Context, e *Effects, out []*sent) {
	var notes []collab.Notification
	var owner []*sent
	for _, s := range out {
		if s.err != nil || len(s.notes) == 0 {
			continue
		}
		s.noted = &mailResult{done: make(chan struct{})}
		for _, n := range s.notes {
			notes, owner = append(notes, n), append(owner, s)
		}
	}
	if len(notes) == 0 {
		return
	}
	ml.wg.Go(func() {
		errs := make([]error, len(notes))
		func() {
			defer func() {
				if p := recover(); p != nil {
					for i := range errs {
						errs[i] = fmt.Errorf("notify: write notifications: panic: %v\n%s", p, debug.Stack())
					}
				}
			}()
			items, err := store.NotificationItems(notes)
			if err != nil {
				for i := range errs {
					errs[i] = fmt.Errorf("encode: %w", err)
				}
				return
			}
			copy(errs, e.Store.PutEach(ctx, items))
		}()
		for i, err := range errs {
			if err != nil && owner[i].noted.err == nil {
				owner[i].noted.err = err
			}
		}
		for i, s := range owner {
			if i == 0 || owner[i-1] != s {
				close(s.noted.done)
			}
		}
	})
}

// close waits for the batch's e-mails and notifications.
func (ml *mailing) close() { ml.wg.Wait() }
