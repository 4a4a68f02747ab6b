package notify

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/stream"
)

// DefaultMailConcurrency is how many of a batch's e-mails are sent at once
// (Effects.MailConcurrency).
const DefaultMailConcurrency = 16

// mailing is one batch's e-mails, sent as soon as the batch's shared reads
// are done: every record's e-mails start then, all of the batch's
// together, in stream order through MailConcurrency workers, each under
// its once-guard (sendOnce). A record's step in its group waits for its
// own (sent.wait), so a failed e-mail still stops its key at that record,
// and a permanent failure is dead-lettered at once; what overlaps is the
// e-mails' round trips, across records and keys. So e-mails about one
// key's changes may go out in another order than the changes (each at most
// once; docs/design.md §4).
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

// sent is one record's side effects: its in-app notifications, worked out
// before any send, and its e-mails, in flight.
type sent struct {
	notes []collab.Notification
	err   error // the deliveries could not be worked out
	mails []*mailResult
}

// wait waits for the record's e-mails and returns its notifications, or
// why its side effects failed.
func (s *sent) wait() ([]collab.Notification, error) {
	if s.err != nil {
		return nil, s.err
	}
	var fails []error
	for _, m := range s.mails {
		<-m.done
		fails = append(fails, m.err)
	}
	if err := errors.Join(fails...); err != nil {
		return nil, err
	}
	return s.notes, nil
}

// startMailing works out each change's deliveries (no I/O) and starts its
// e-mails; changes and subjects are the batch's records with side effects,
// in stream order. An e-mail asked for twice (a record delivered twice in
// the batch) is sent once, and both records wait for it. close waits for
// every e-mail started: none is left running when the batch returns.
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
		ds, err := e.deliveries(c, subjects[i], rd)
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

// close waits for the batch's e-mails.
func (ml *mailing) close() { ml.wg.Wait() }
